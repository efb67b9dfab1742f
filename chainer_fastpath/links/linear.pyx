"""``L.Linear.forward`` compiled: stock's three lines, the parameters
initialized from the first input where W has no array yet, then
``linear.linear(x, self.W, self.b, n_batch_axes=n_batch_axes)``.

Every read stock makes is made here, in its order, through the same
lookups (``linear.linear`` from the link module's globals, ``self.W``
twice, ``W.array``), so a subclass, a property or a replaced function sees
what it sees under stock. Only ``W.array`` of a stock Parameter is read from
its attribute, as the property would read it, and the installed
replacement of ``F.linear`` is called without building its keyword
arguments. Debug mode, whose node stacks show stock's frame, runs stock's
method, counted.
"""
import types

from cpython.module cimport PyModule_GetDict
from cpython.object cimport PyObject

from chainer import variable
from chainer.links.connection import linear as linear_module

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, get_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport stock_replaced
from chainer_fastpath._core._dicts cimport cfp_dict_item, cfp_item_memo
from chainer_fastpath._core._config cimport debug_mode
from chainer_fastpath._runtime._public cimport Public
from chainer_fastpath.functions.connection.linear cimport linear_call
from chainer_fastpath.functions.connection.linear import (
    linear_ as _linear_replacement)

cdef object _Linear = linear_module.Linear
cdef type _Parameter = variable.Parameter
cdef Public _forward = Public('Linear.forward', linear_module,
                              ('self', 'x', 'n_batch_axes'), (1,))

TARGETS = ((_Linear, 'forward'),)

cfp_attr_enable(_attrs.FAST)
# The link's and its Parameter's attributes, read through the attribute
# caches (_core/_attrs.h): the generic read's result.
cdef cfp_attr _get_W = get_site('W')
cdef cfp_attr _get_b = get_site('b')
cdef cfp_attr _get_layout = get_site('_layout')
cdef cfp_attr _get_has_chainerx = get_site('_has_chainerx_array')
cdef cfp_attr _get_data = get_site('_data')
cdef type _module = types.ModuleType
# ``linear.linear`` of the functions' module: its dict's entry, remembered
# while that dict keeps its version.
cdef cfp_item_memo _linear_read


def bind(owner, attribute, original):
    """Keeps stock's ``Linear.forward`` to fall back to; returns its
    replacement."""
    return _forward.bind(forward, original)


cdef inline bint _uninitialized(object W) except -1:
    """``W.array is None``."""
    if (type(W) is _Parameter and stock_replaced() is None
            and get(W, &_get_layout) is None
            and not get(W, &_get_has_chainerx)):
        return get(W, &_get_data)[0] is None
    return W.array is None


cdef object _global(str name):
    """The link module's global ``name``, as the method's body reads it."""
    value = _forward.read_global(name)
    if value is None:
        raise NameError('name {!r} is not defined'.format(name))
    return value


def forward(*args, **kwargs):
    """Drop-in for ``Linear.forward``."""
    cdef tuple values = _forward.arguments(args, kwargs)
    if values is None or debug_mode():
        if values is not None:
            _forward.stats.fallback('debug mode')
        return _forward.stock(args, kwargs)
    _forward.stats.fast += 1
    self, x, n_batch_axes = values
    if _uninitialized(get(self, &_get_W)):
        utils = _global('utils')
        in_size = utils.size_of_shape(x.shape[n_batch_axes:])
        self._initialize_params(in_size)
    linear = _function(_global('linear'))
    if linear is _linear_replacement:
        return linear_call(x, get(self, &_get_W), get(self, &_get_b),
                           n_batch_axes)
    return linear(x, get(self, &_get_W), get(self, &_get_b),
                  n_batch_axes=n_batch_axes)


cdef inline object _function(object module):
    """``module.linear``: read from a module's dict (what the attribute
    read finds there), else by getattr."""
    cdef PyObject *found
    if type(module) is _module:
        found = cfp_dict_item(&_linear_read, <object>PyModule_GetDict(module),
                              'linear')
        if found != NULL:
            return <object>found
    return module.linear
