# cython: boundscheck=True, wraparound=True
"""A node applied from compiled code: ``apply_or_debug(node, inputs)`` and
``apply_new(cls, inputs)``, what the Variable operators (``_arith.pyx``)
and the public-function replacements (``_public.Public``) call.

Both go through ``FunctionNode.apply``'s fast path where the node's
``apply`` is the patch's replacement. That path is the entry point's
(``_fast_call.pyx``), which hands it in with :func:`install_apply` when it
is imported: the runtime never imports an entry point. Until then, or
where the node's ``apply`` is another one, the node's own ``apply`` runs.
"""
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, lookup_site)
from chainer_fastpath._core._audit cimport method_is_at
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._objects cimport construct
from chainer_fastpath._core._registry cimport NOT_HANDLED

cfp_attr_enable(_attrs.FAST)

# The replacement of FunctionNode.apply and its fast path, as installed.
cdef object _replacement = None
cdef fast_apply_fn _fast_apply = NULL
cdef unrecorded_fn _unrecorded = NULL
cdef cfp_attr _apply_site = lookup_site('apply')


cdef int install_apply(object replacement, fast_apply_fn fast_apply,
                       unrecorded_fn unrecorded) except -1:
    """Makes ``fast_apply`` the apply of every node whose ``apply`` is
    ``replacement``, and ``unrecorded`` the first try of
    :func:`apply_new` without backprop."""
    global _replacement, _fast_apply, _unrecorded
    _replacement = replacement
    _fast_apply = fast_apply
    _unrecorded = unrecorded
    return 0


cdef object apply_or_debug(object node, object inputs):
    """``node.apply(inputs)``, or None (nothing done) in debug mode: there
    each node records the Python stack it was made in, so the compiled
    caller (a Variable operator) must run its original code instead, whose
    frame stock's stack shows. Costs nothing outside debug mode, where
    ``apply`` reads the mode anyway."""
    return _apply_or_debug(node, inputs, None)


cdef object _apply_or_debug(object node, object inputs, ConfigView config):
    # apply_or_debug, given the configuration if it was read already.
    if config is None:
        config = ConfigView.current()
    if config.get('debug'):
        # Before any apply is called: the caller's original code calls it,
        # once, as stock does.
        return None
    if (_fast_apply is not NULL
            and method_is_at(node, &_apply_site, _replacement)):
        return _fast_apply(node, inputs, config)
    return node.apply(inputs)


cdef object apply_new(object cls, tuple inputs):
    """``cls().apply(inputs)``, or None in debug mode as
    :func:`apply_or_debug`, for a node class that ``construct`` makes.

    Without backprop the node is garbage once ``apply`` returns: where
    nothing could see it meanwhile either (no function hook, a ``nodeless``
    compiled forward, a type check passed before, the class's state as
    registered), the outputs are made without one."""
    cdef ConfigView config = ConfigView.current()
    if not config.get('enable_backprop') and _unrecorded is not NULL:
        outputs = _unrecorded(cls, inputs, config)
        if outputs is not NOT_HANDLED:
            return outputs
    return _apply_or_debug(construct(cls), inputs, config)
