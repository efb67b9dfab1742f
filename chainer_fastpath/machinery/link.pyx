"""``Link.cleargrads`` compiled: what stock's ``param.cleargrad()`` does to
each parameter that ``self.params()`` yields, in the same order, without
running the generators or the three Python methods per parameter.

Stock clears a Parameter through ``Parameter.cleargrad``,
``Variable.cleargrad``, the ``grad_var`` setter and
``_set_grad_var_without_check``: ``_grad_var`` and ``_grad`` set to None,
``_grad_valid`` to True, and ``_grad_initializer`` to None where the
parameter has no array. Those stores are made here, for a tree of plain
links (``_core/_links``) whose parameters are all exact Parameters of a
NumPy device with those methods stock's. Any other tree runs stock's
method, counted; the collection reads nothing stock would not.
"""
from chainer import link as link_module
from chainer import variable

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, set_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport StockMethods, stock_replaced
from chainer_fastpath._core._links cimport collect_params
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef type _Parameter = variable.Parameter
cdef StockMethods _parameter_methods = StockMethods(
    _Parameter, ('cleargrad', '_set_grad_var_without_check'))
cdef StockMethods _variable_methods = StockMethods(
    variable.Variable, ('cleargrad',))
cdef Signature _signature = Signature(('self',))

cfp_attr_enable(_attrs.FAST)
cdef cfp_attr _get_has_chainerx = get_site('_has_chainerx_array')
cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _set_grad_var = set_site('_grad_var')
cdef cfp_attr _set_grad = set_site('_grad')
cdef cfp_attr _set_grad_valid = set_site('_grad_valid')
cdef cfp_attr _set_grad_initializer = set_site('_grad_initializer')

cdef EntryStats _stats_cleargrads = _stats.entry('Link.cleargrads')
cdef object _original = None

TARGETS = ((link_module.Link, 'cleargrads'),)


def bind(owner, attribute, original):
    """Keeps stock's ``Link.cleargrads`` to fall back to; returns its
    replacement."""
    global _original
    _original = original
    return cleargrads


cdef str _reason(tuple bound, list params):
    """Why stock's method is to run, or None with ``params`` filled."""
    if bound is None:
        return _signature.mismatch
    if not collect_params(bound[0], params):
        return 'a link of the tree replaces params()'
    if stock_replaced() is not None or not _variable_methods.on_class():
        return 'Variable methods replaced'
    for param in params:
        if type(param) is not _Parameter:
            return 'not a Parameter'
        if not _parameter_methods.found_by(param):
            return 'Parameter methods replaced'
        if get(param, &_get_has_chainerx):
            return 'chainerx'
    return None


def cleargrads(*args, **kwargs):
    """Drop-in for ``Link.cleargrads``."""
    cdef list params = []
    reason = _reason(_signature.bind(args, kwargs), params)
    if reason is not None:
        _stats_cleargrads.fallback(reason)
        return _original(*args, **kwargs)
    _stats_cleargrads.fast += 1
    for param in params:
        put(param, &_set_grad_var, None)
        put(param, &_set_grad, None)
        put(param, &_set_grad_valid, True)
        if get(param, &_get_data)[0] is None:
            put(param, &_set_grad_initializer, None)
