"""``Variable.backward`` and ``chainer._backprop._backprop_to_all``: the
entry points of the backward engine (``_backward/``), with the originals
they fall back to.

``backward`` binds its arguments as Python binds stock's method, decides
what goes to stock (counted with the reason), and seeds a loss of one
element as stock's grad setter would (its deprecation warning from stock's
line, ``_core/_stock_warning``); ``backprop_to_all`` decides the same for
``chainer.backward`` and ``F.forget``. Both then run the engine
(``_backward/engine.pyx``), a compiled port of stock's ``_backprop_to_all``,
``backprop_step`` and ``GradTable`` that does the same steps in the same
order (docs/design/backward.md).
"""
import numpy

import chainer
from chainer import _backprop
from chainer import backend
from chainer.backends import cuda, intel64

from chainer_fastpath._backward.engine cimport backprop
from chainer_fastpath._backward.graph_reads cimport is_plain_variable
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, set_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport StockMethods, stock_replaced
from chainer_fastpath._core._config cimport ConfigView, PerThread
from chainer_fastpath._core._fpe cimport acts, quiet_into
from chainer_fastpath._core._ndarray cimport cfp_nd, size_of
from chainer_fastpath._core._objects cimport new_variable
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core._stock_warning cimport StockWarning
from chainer_fastpath._core import _stats

# The inline reads of graph_reads.pxd run here too (_attrs.h).
cfp_attr_enable(_attrs.FAST)
# A Variable's or Parameter's plain attributes (the exact classes: others
# go to stock), read and written through per-site caches (_attrs.h).
cdef cfp_attr _get_has_chainerx_array = get_site('_has_chainerx_array')
cdef cfp_attr _get_layout = get_site('_layout')
cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _get_device = get_site('_device')
cdef cfp_attr _get_node = get_site('_node')
cdef cfp_attr _set_device = set_site('_device')
cdef cfp_attr _set_grad = set_site('_grad')
cdef cfp_attr _set_grad_var = set_site('_grad_var')
cdef cfp_attr _set_grad_valid = set_site('_grad_valid')

cdef object _ndarray = numpy.ndarray
cdef object _np_multiply = numpy.multiply
cdef object _np_number = numpy.number
cdef object _np_array = numpy.array
cdef object _np_ones_like = numpy.ones_like
cdef type _Variable = chainer.Variable
cdef type _Parameter = chainer.Parameter
cdef object _using_device = chainer.using_device
cdef type _CpuDevice = backend.CpuDevice
cdef object _config = chainer.config
# The calling thread's dict of the configuration's thread-local object,
# where ``using_config`` sets and deletes its value (see _core/_config).
cdef PerThread _config_local = PerThread(_config._local)
cdef str _ENABLE_BACKPROP = 'enable_backprop'
cdef object _MISSING = object()

cdef EntryStats _stats_backward = _stats.entry('Variable.backward')
cdef EntryStats _stats_to_all = _stats.entry('_backprop._backprop_to_all')
# The originals, set by bind().
cdef object _original_backward = None
cdef object _original_to_all = None
# Stock's warning about a loss of one element that is not 0-d.
cdef StockWarning _one_element = None
# Where the seed gradient is left to stock's Variable.grad setter.
cdef object _NOT_PLAIN = object()


TARGETS = ((_Variable, 'backward'), (_backprop, '_backprop_to_all'))


def bind(owner, attribute, original):
    """Keeps the stock ``owner.attribute`` to fall back to; returns its
    replacement."""
    global _original_backward, _original_to_all, _one_element
    if attribute == 'backward':
        _original_backward = original
        _one_element = StockWarning(
            original, 'Treating a variable with only one element',
            DeprecationWarning)
        return backward
    _original_to_all = original
    return backprop_to_all


def backprop_to_all(outputs, retain_grad, loss_scale):
    """Drop-in for ``chainer._backprop._backprop_to_all`` (used by
    ``chainer.backward`` and ``F.forget``)."""
    cdef ConfigView cfg = ConfigView.current()
    reason = None
    if cfg.get('debug'):
        reason = 'debug mode'
    elif cfg.get('schedule_func') is not None:
        reason = 'static graph'
    elif stock_replaced() is not None:
        reason = stock_replaced()
    else:
        for _, gy in outputs:
            if gy is not None and type(gy) is not _Variable:
                reason = 'Variable subclass'
                break
            if gy is not None and type(gy.raw_array) is not _ndarray:
                reason = 'array type'
                break
    if reason is not None:
        _stats_to_all.fallback(reason)
        return _original_to_all(outputs, retain_grad, loss_scale)
    _stats_to_all.fast += 1
    backprop(outputs, retain_grad, loss_scale)


cdef object _fallback_reason(object self):
    cdef ConfigView cfg
    cls = type(self)
    if cls is not _Variable and cls is not _Parameter:
        return 'Variable subclass'
    replaced = stock_replaced()
    if replaced is not None:
        return replaced
    if get(self, &_get_has_chainerx_array):
        return 'chainerx'
    if get(self, &_get_layout) is not None:
        return 'non-standard memory layout'
    data = get(self, &_get_data)[0]
    if data is None:
        return 'uninitialized variable'
    if type(data) is not _ndarray:
        return 'array type'
    cfg = ConfigView.current()
    if cfg.get('debug'):
        return 'debug mode'
    if cfg.get('schedule_func') is not None:
        return 'static graph'
    return None


# What ``Variable.device`` asks to find an array's device.
cdef dict _backend_dict = backend.__dict__
cdef StockMethods _gpu_methods = StockMethods(cuda.GpuDevice, ('from_array',))
cdef StockMethods _intel64_methods = StockMethods(
    intel64.Intel64Device, ('from_array',))


cdef object _device(object self, object data):
    """``self.device`` of a plain Variable whose array is ``data``. The
    property computes it once and caches it in ``_device``; for an exact
    numpy.ndarray every backend's ``from_array`` declines and the answer
    is a new CpuDevice, made here without the property's Python layers
    (``get_device_from_array`` itself is stock's: ``stock_replaced`` said
    so before)."""
    dev = get(self, &_get_device)
    if (dev is None and type(data) is _ndarray and _gpu_methods.on_class()
            and _intel64_methods.on_class()
            and _backend_dict.get('CpuDevice') is _CpuDevice):
        dev = _CpuDevice()
        put(self, &_set_device, dev)
        return dev
    return self.device


cdef object _seed(object self, object data, object loss_scale):
    """The gradient of a loss of one element, ``ones_like(data)`` times
    ``loss_scale``, computed as stock's grad setter would store it; or
    ``_NOT_PLAIN`` where stock's setter is to run, without a loss scale;
    or None where stock's backward must run: the scaling raises, NumPy
    would act on a floating-point exception of it (from stock's line), or
    stock's deprecation warning is due and its line unknown."""
    if data.ndim != 0 and not _one_element.found:
        return None
    if not (is_plain_variable(self)
            and type(_device(self, data)) is _CpuDevice):
        return _NOT_PLAIN if loss_scale is None else None
    # Its context does nothing, ones_like(data) passes the grad setter's
    # check by construction, and the grad_var the getter would wrap
    # around it is ``Variable(g)``.
    if type(data) is _ndarray and cfp_nd(data) == 0:
        # ones_like of a 0-d array, without its Python layers.
        g = _np_array(1, data.dtype)
    else:
        g = _np_ones_like(data)
    cdef int raised = 0
    if loss_scale is not None:
        # ``g *= loss_scale`` is this ufunc call for a number; anything
        # else may take other ways, stock's.
        if (type(loss_scale) is not float and type(loss_scale) is not int
                and not isinstance(loss_scale, _np_number)):
            return None
        try:
            quiet_into(_np_multiply, g, loss_scale, g, &raised)
        except Exception:
            # An integer loss, say: stock raises it after setting the grad.
            return None
        if acts(raised):
            return None
    return g


cdef Signature _backward_signature = Signature(
    ('self', 'retain_grad', 'enable_double_backprop', 'loss_scale'),
    (False, False, None))


def backward(*args, **kwargs):
    """Drop-in for ``Variable.backward``."""
    cdef tuple values = _backward_signature.bind(args, kwargs)
    if values is None:
        # Python's TypeError, worded as for stock's method.
        _stats_backward.fallback(_backward_signature.mismatch)
        return _original_backward(*args, **kwargs)
    return _backward(values[0], values[1], values[2], values[3])


cdef object _backward(self, retain_grad, enable_double_backprop,
                      loss_scale):
    reason = _fallback_reason(self)
    g = None
    if reason is None:
        data = (<list>get(self, &_get_data))[0]
        # An exact ndarray (_fallback_reason): its size read off its dims.
        if size_of(data) == 1 and self.grad_var is None:
            g = _seed(self, data, loss_scale)
            if g is None:
                reason = 'loss seed left to stock'
    if reason is not None:
        _stats_backward.fallback(reason)
        return _original_backward(self, retain_grad, enable_double_backprop,
                                  loss_scale)
    _stats_backward.fast += 1

    # Initialize error by 1, if this is a loss variable (as stock)
    grad_var = None
    cdef bint seeded = False
    if g is not None:
        if cfp_nd(data) != 0:
            _one_element.warn()
        if g is not _NOT_PLAIN:
            # Setting the grad and then taking grad_var leaves ``_grad`` and
            # ``_grad_var`` None and ``_grad_valid`` True, as below.
            grad_var = new_variable(g, True, None, 0)
            put(self, &_set_grad, None)
            put(self, &_set_grad_var, None)
            put(self, &_set_grad_valid, True)
            seeded = True
        else:
            device = self.device
            with _using_device(device):
                self.grad = device.xp.ones_like(data)

    node = get(self, &_get_node)
    if not seeded:
        grad_var = self.grad_var
        self.grad_var = None

    # ``with chainer.using_config('enable_backprop', ...)``, inlined: the
    # value set in, and put back or deleted from, the thread's dict of the
    # thread-local object, which is what setting its attribute does.
    local = _config._local
    cdef dict d = (_config_local.get() if local is _config_local.local
                   and _config_local.cacheable else None)
    if d is None:
        _backprop_with_local_attribute(local, node, grad_var, retain_grad,
                                       enable_double_backprop, loss_scale)
        return
    old = d.get(_ENABLE_BACKPROP, _MISSING)
    d[_ENABLE_BACKPROP] = enable_double_backprop
    try:
        backprop([(node, grad_var)], retain_grad, loss_scale)
    finally:
        if old is not _MISSING:
            d[_ENABLE_BACKPROP] = old
        elif _ENABLE_BACKPROP in d:
            del d[_ENABLE_BACKPROP]
        else:
            delattr(local, _ENABLE_BACKPROP)    # raises as stock's does


cdef object _backprop_with_local_attribute(object local, object node,
                                           object grad_var, object retain_grad,
                                           object enable_double_backprop,
                                           object loss_scale):
    cdef bint was_local = hasattr(local, _ENABLE_BACKPROP)
    if was_local:
        old = local.enable_backprop
    local.enable_backprop = enable_double_backprop
    try:
        backprop([(node, grad_var)], retain_grad, loss_scale)
    finally:
        if was_local:
            local.enable_backprop = old
        else:
            del local.enable_backprop
