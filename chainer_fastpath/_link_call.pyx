"""``Link.__call__`` compiled: ``self.forward(*args, **kwargs)`` after the
checks stock makes, between the link hooks' calls where there are any.

Stock builds the hook view and asks ``super(Link, self)`` for a mixin's
``__call__`` on every call; the miss raises and clears an AttributeError,
which makes most of the few microseconds a model pays per link call. Here
what depends only on the class (the private methods stock calls, a mixin's
``__call__``) is checked once per class and version of the class, and the
rest per call. Link hooks are called here as stock calls them, so that a
recursive link reaches the depth it reaches in stock, hooked or not. A
mixin's ``__call__``, a class whose ``Link`` methods were replaced and
debug mode (whose node stacks show this frame) run the original, counted.
"""
import collections

import chainer
from chainer import link as link_module
from chainer import link_hook

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr, get_site, lookup_site)
from chainer_fastpath._core._audit cimport (
    StockFunctions, method_is_at, type_version)
from chainer_fastpath._core._config cimport debug_mode, link_hooks
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

# Not ``cdef type``: Cython's check wants exactly ``type``, and Link's
# metaclass derives from ABCMeta.
cdef object _Link = link_module.Link
cdef object _check_init_done = _Link.__dict__['_Link__check_init_done']
cdef object _n_local_hooks = _Link.__dict__['_n_local_link_hooks']
cdef object _local_hooks = _Link.__dict__['local_link_hooks']
cdef StockFunctions _link_functions = StockFunctions(
    ((chainer, '_get_link_hooks'),))
cdef object _OrderedDict = collections.OrderedDict
cdef object _ForwardPreprocessCallbackArgs = (
    link_hook._ForwardPreprocessCallbackArgs)
cdef object _ForwardPostprocessCallbackArgs = (
    link_hook._ForwardPostprocessCallbackArgs)

cfp_attr_enable(_attrs.FAST)
cdef cfp_attr _check_init_done_site = lookup_site('_Link__check_init_done')
cdef cfp_attr _get_init_done = get_site('_Link__init_done')
cdef cfp_attr _get_local_hooks = get_site('_local_link_hooks')

cdef EntryStats _stats_call = _stats.entry('Link.__call__')
cdef object _original = None


TARGETS = ((_Link, '__call__'),)


def bind(owner, attribute, original):
    """Keeps the stock ``Link.__call__`` to fall back to; returns its
    replacement."""
    global _original
    _original = original
    return __call__


# Classes found plain, by address and version tag. CPython never hands out a
# version tag twice and gives a class a new one whenever it or a base is
# modified, so a matching pair means the very class, unchanged since it was
# checked; no reference is held, so no class is kept alive.
cdef struct _Checked:
    void *cls
    unsigned int version

cdef enum:
    _SLOTS = 64
cdef _Checked _checked[_SLOTS]


cdef inline Py_ssize_t _slot(object cls):
    return (<size_t><void *>cls >> 4) % _SLOTS


cdef object _lookup(object cls, str name):
    """What ``instance.name`` finds on the class (``_PyType_Lookup``)."""
    for c in cls.__mro__:
        d = c.__dict__
        if name in d:
            return d[name]
    return None


cdef str _audit_class(object cls):
    """Why instances of ``cls`` cannot take the fast path, or None."""
    if not issubclass(cls, _Link):
        return 'not a Link'
    if (_lookup(cls, '_Link__check_init_done') is not _check_init_done
            or _lookup(cls, '_n_local_link_hooks') is not _n_local_hooks
            or _lookup(cls, 'local_link_hooks') is not _local_hooks):
        return 'Link methods replaced'
    # Stock calls ``super(Link, self).__call__`` where a class after Link
    # defines one (a mixin), instead of ``forward``.
    cdef tuple mro = cls.__mro__
    for c in mro[mro.index(_Link) + 1:]:
        if '__call__' in c.__dict__:
            return 'a mixin defines __call__'
    return None


cdef str _class_reason(object cls):
    """:func:`_audit_class`, remembered for a plain class until its version
    tag changes."""
    cdef unsigned int version = type_version(cls)
    cdef Py_ssize_t i = _slot(cls)
    if (version != 0 and _checked[i].cls == <void *>cls
            and _checked[i].version == version):
        return None
    reason = _audit_class(cls)
    # Reading ``__mro__`` has given the class a tag if it had none.
    version = type_version(cls)
    if reason is None and version != 0:
        _checked[i].cls = <void *>cls
        _checked[i].version = version
    return reason


cdef str _reason(self):
    """Why this call cannot take the fast path before the hooks are read,
    or None."""
    reason = _class_reason(type(self))
    if reason is not None:
        return reason
    if not method_is_at(self, &_check_init_done_site, _check_init_done):
        return 'Link methods replaced'
    if not cfp_getattr(self, &_get_init_done):
        return 'Link.__init__() not called'     # the original raises
    if not _link_functions.unchanged():
        return 'chainer._get_link_hooks replaced'
    if debug_mode():
        # Each node records the Python stack then: stock's frame of
        # Link.__call__ must be there.
        return 'debug mode'
    return None


def __call__(self, *args, **kwargs):
    """Drop-in for ``chainer.Link.__call__``."""
    reason = _reason(self)
    cdef object hooks = None
    if reason is None:
        # chainer._get_link_hooks(), the dict stock holds through the call.
        hooks = link_hooks()
        if type(hooks) is not _OrderedDict:
            # Set by hand to something else: stock's code, and its error.
            reason = 'link hooks not an OrderedDict'
    if reason is not None:
        _stats_call.fallback(reason)
        return _original(self, *args, **kwargs)
    _stats_call.fast += 1
    local = cfp_getattr(self, &_get_local_hooks)
    if local is not None and len(local) > 0:
        hooks = _OrderedDict(hooks)
        hooks.update(local)
    if hooks:
        pre_args = _ForwardPreprocessCallbackArgs(self, 'forward', args,
                                                  kwargs)
        for hook in _values(hooks):
            hook.forward_preprocess(pre_args)
    # Without keywords, no copy of the empty dict.
    out = self.forward(*args, **kwargs) if kwargs else self.forward(*args)
    if hooks:
        # Stock reads its view of the dict again after the forward: hooks
        # registered meanwhile get the postprocess call.
        post_args = _ForwardPostprocessCallbackArgs(self, 'forward', args,
                                                    kwargs, out)
        for hook in _values(hooks):
            hook.forward_postprocess(post_args)
    return out


cdef inline object _values(object hooks):
    # A live view, iterated as Python iterates it, as stock does.
    return hooks.values()
