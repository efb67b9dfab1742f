"""Lean ``UpdateRule.update`` and ``GradientMethod.update``.

They do what stock Chainer 7.8.1 does, step for step, minus the work whose
result is known: the CPU device context (a no-op), hook dispatch over empty
hook tables, ``_init_states`` when the state already holds NumPy arrays,
``update_core``'s device switch, and the generator-based traversal of the
link tree. Every such shortcut is taken only after checking that the
method it skips is the stock one (on the class and not overridden on the
instance); anything else runs stock code.
"""
import functools

import numpy

import chainer
from chainer import _backend
from chainer import backend as _backend_module
from chainer import optimizer as _opt
from chainer import variable as _variable
from chainer.backends import _cpu

from chainer_fastpath._core._audit cimport (
    StockFunctions, StockMethods, stock_replaced)
from chainer_fastpath._core._links cimport collect_params
from chainer_fastpath._core._config cimport debug_mode
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef EntryStats _st_rule = _stats.entry('UpdateRule.update')
cdef EntryStats _st_method = _stats.entry('GradientMethod.update')

cdef object _orig_rule_update = None
cdef object _orig_method_update = None

cdef object _UpdateRule = _opt.UpdateRule
cdef object _GradientMethod = _opt.GradientMethod
cdef object _Hookable = _opt._Hookable
cdef object _OptimizerHookable = _opt._OptimizerHookable
cdef object _Parameter = chainer.Parameter
cdef object _Variable = chainer.Variable
cdef object _CpuDevice = _cpu.CpuDevice
cdef object _ndarray = numpy.ndarray
cdef object _thread_local = _variable._thread_local

# The stock methods whose effect the lean paths reproduce inline.
cdef object _s_update_core = _UpdateRule.__dict__['update_core']
cdef object _s_init_states = _UpdateRule.__dict__['_init_states']
cdef object _s_state = _UpdateRule.__dict__['state']
cdef object _s_private_update = _UpdateRule.__dict__['_UpdateRule__update']
cdef object _s_realloc = _GradientMethod.__dict__['reallocate_cleared_grads']
cdef object _s_check_nan = _opt.Optimizer.__dict__['check_nan_in_grads']
cdef object _s_call_hooks = _opt.Optimizer.__dict__['call_hooks']
cdef object _s_is_safe = _opt.Optimizer.__dict__['is_safe_to_update']
cdef object _s_update_loss_scale = _opt.Optimizer.__dict__['update_loss_scale']

cdef str _ALLOW = 'allow_array_access_with_nonstandard_layout'

# What stock's _init_states and update_core call on the CPU device at every
# update (its context, a send of each state array) and the lean path
# skips: only while they are stock's.
cdef StockMethods _cpu_methods = StockMethods(
    _CpuDevice, ('send', 'send_array', 'create_context'))
cdef StockMethods _param_methods = StockMethods(_Parameter, ('update',))
cdef StockFunctions _device_functions = StockFunctions((
    (chainer, 'using_device'), (chainer, 'get_array_types'),
    (_backend_module, 'get_device'), (_backend, '_convert_arrays'),
    (_cpu, '_array_to_cpu')))

TARGETS = ((_UpdateRule, 'update'), (_GradientMethod, 'update'))


def bind(owner, attribute, original):
    """Records ``original``, the stock ``owner.attribute`` (the first one
    given wins); returns the replacement."""
    global _orig_rule_update, _orig_method_update
    if owner is _UpdateRule and attribute == 'update':
        if _orig_rule_update is None:
            _orig_rule_update = original
            functools.update_wrapper(update_rule_update, original)
        return update_rule_update
    if owner is _GradientMethod and attribute == 'update':
        if _orig_method_update is None:
            _orig_method_update = original
            functools.update_wrapper(gradient_method_update, original)
        return gradient_method_update
    raise KeyError((owner, attribute))


cdef bint stock_cpu_device(object dev) except -1:
    """Whether entering ``chainer.using_device(dev)`` of a CpuDevice, and
    sending arrays to it, are stock's no-ops: neither its methods nor the
    functions stock calls were replaced."""
    return _cpu_methods.found_by(dev) and _device_functions.unchanged()


# --------------------------------------------------------------------------
# UpdateRule.update

cdef inline bint _hooks_empty(object hookable, str timing):
    """True when ``hookable.call_hooks(timing, ...)`` would call nothing."""
    if type(hookable) is not _Hookable:
        return False
    hooks = hookable.__dict__.get(
        '_pre_update_hooks' if timing == 'pre' else '_post_update_hooks')
    return hooks is not None and len(hooks) == 0


cdef inline object _device(object param):
    """``param.device`` of a plain Variable/Parameter (a cached value)."""
    dev = param._device
    if dev is None:
        return param.device
    return dev


cdef str _rule_check(object self, object param):
    """None when the lean path reproduces stock ``update``; else why not."""
    cdef object cls = type(self)
    if type(param) is not _Parameter and type(param) is not _Variable:
        return 'Variable subclass'
    if param._has_chainerx_array:
        return 'chainerx'
    d = param._data
    arr = d[0]
    if arr is not None and type(arr) is not _ndarray:
        return 'not a numpy.ndarray'
    dev = _device(param)
    if type(dev) is not _CpuDevice:
        return 'device'
    if not stock_cpu_device(dev):
        return 'device methods replaced'
    if self._use_fp32_update:
        return 'use_fp32_update'
    sd = self.__dict__
    if ('update_core' in sd or '_init_states' in sd or '_hookable' not in sd
            or '_UpdateRule__update' in sd):
        return 'instance override'
    if (getattr(cls, '_init_states') is not _s_init_states
            or getattr(cls, 'state') is not _s_state
            or getattr(cls, '_UpdateRule__update', None)
            is not _s_private_update):
        return 'UpdateRule subclass'
    # The lean body reads the parameter past its properties.
    return stock_replaced()


cdef object _rule_update(object self, object param):
    """The lean body; the caller checked ``_rule_check``."""
    cdef bint is_initialized
    cdef object hookable = self._hookable
    cdef object cls = type(self)
    self.t += 1
    tl = _thread_local
    try:
        old = getattr(tl, _ALLOW)
    except AttributeError:
        old = False
    setattr(tl, _ALLOW, True)
    try:
        is_initialized = param._data[0] is not None
        loss_scale = param._loss_scale
        if is_initialized:
            state = self._state
            init = True
            if type(state) is dict:
                init = False
                for value in (<dict>state).values():
                    if not isinstance(value, _ndarray):
                        init = True
                        break
            if init:
                self._init_states(param)
            if loss_scale is not None:
                param.grad /= loss_scale
        if not _hooks_empty(hookable, 'pre'):
            hookable.call_hooks('pre', args=(self, param,))
        if (getattr(cls, 'update_core') is _s_update_core
                and 'update_core' not in self.__dict__
                and type(_device(param)) is _CpuDevice):
            # stock update_core: `with using_device(cpu)` is a no-op
            self.update_core_cpu(param)
        else:
            self.update_core(param)
        if not _hooks_empty(hookable, 'post'):
            hookable.call_hooks('post', args=(self, param,))
    finally:
        setattr(tl, _ALLOW, old)


def update_rule_update(self, param):
    """Drop-in for ``UpdateRule.update``."""
    if not self.enabled:
        _st_rule.fast += 1
        return
    reason = _rule_check(self, param)
    if reason is not None:
        _st_rule.fallback(reason)
        return _orig_rule_update(self, param)
    _st_rule.fast += 1
    _rule_update(self, param)


# --------------------------------------------------------------------------
# GradientMethod.update

cdef str _method_check(object self):
    cdef object cls = type(self)
    sd = self.__dict__
    for name in ('reallocate_cleared_grads', 'check_nan_in_grads',
                 'call_hooks', 'is_safe_to_update', 'update_loss_scale'):
        if name in sd:
            return 'instance override'
    if (getattr(cls, 'reallocate_cleared_grads') is not _s_realloc
            or getattr(cls, 'check_nan_in_grads') is not _s_check_nan
            or getattr(cls, 'call_hooks') is not _s_call_hooks
            or getattr(cls, 'is_safe_to_update') is not _s_is_safe
            or getattr(cls, 'update_loss_scale') is not _s_update_loss_scale):
        return 'GradientMethod subclass'
    if self.target is None or self._hookable is None:
        return 'not set up'
    if type(self._hookable) is not _OptimizerHookable:
        return 'hookable'
    return None


cdef bint _all_have_grads(list params) except -1:
    """True when stock ``reallocate_cleared_grads`` would allocate nothing."""
    for p in params:
        if type(p) is not _Parameter or p._has_chainerx_array:
            return False
        if p._data[0] is None:
            continue        # namedparams(False) skips it
        if not p._grad_valid:
            return False    # let stock raise through the property
        gv = p._grad_var
        if gv is None:
            if p._grad is None:
                return False
        elif type(gv) is not _Variable or gv._has_chainerx_array:
            return False    # let stock read it through the property
        elif (<list>gv._data)[0] is None:
            return False    # ``grad_var.array``: None
    return True


cdef inline void _realloc(object self, list params) except *:
    # _all_have_grads reads past the properties stock reads ``grad`` by.
    if stock_replaced() is not None or not _all_have_grads(params):
        self.reallocate_cleared_grads()


cdef inline bint _opt_hooks_empty(object self, str timing):
    h = self._hookable
    if type(h) is not _OptimizerHookable:
        return False
    hooks = h.__dict__.get(
        '_pre_update_hooks' if timing == 'pre' else '_post_update_hooks')
    return hooks is not None and len(hooks) == 0


def gradient_method_update(self, lossfun=None, *args, **kwds):
    """Drop-in for ``GradientMethod.update``."""
    cdef list params
    reason = _method_check(self)
    if reason is None and lossfun is not None and debug_mode():
        # The nodes the loss function makes record the Python stack: stock's
        # frame of this method must be there.
        reason = 'debug mode'
    if reason is not None:
        _st_method.fallback(reason)
        return _orig_method_update(self, lossfun, *args, **kwds)

    if lossfun is not None:
        use_cleargrads = getattr(self, '_use_cleargrads', True)
        loss = lossfun(*args, **kwds)
        if use_cleargrads:
            self.target.cleargrads()
        else:
            self.target.zerograds()
        loss.backward(loss_scale=self._loss_scale)
        del loss

    params = []
    if not collect_params(self.target, params):
        _st_method.fallback('Link overrides params')
        return _finish_stock(self)
    _st_method.fast += 1

    _realloc(self, params)
    # check_nan_in_grads
    if self._loss_scaling_is_dynamic:
        self.check_nan_in_grads()
    else:
        self._loss_scaling_isnan = False
    if not _opt_hooks_empty(self, 'pre'):
        self.call_hooks('pre')
        params = []
        if not collect_params(self.target, params):
            return _finish_stock(self, hooks_done=True)

    self.t += 1
    if not self._loss_scaling_isnan:
        _update_params(params)

    _realloc(self, params)
    if not _opt_hooks_empty(self, 'post'):
        self.call_hooks('post')
    if self._loss_scaling_is_dynamic:
        self.update_loss_scale()


cdef object _update_params(list params):
    # Parameter.update replaced on the class (a mock, say) or set on the
    # parameter is called, as stock calls it. Looked for without reading the
    # parameter's __dict__, which would leave it a dict of its own, and
    # every later read of its attributes the slow way.
    for param in params:
        if (type(param) is not _Parameter
                or not _param_methods.found_by(param)):
            param.update()
            continue
        rule = param.update_rule
        if rule is None:
            continue
        if param._layout is not None and not rule.is_elementwise:
            param.update()      # raises as stock does
            continue
        if (getattr(type(rule), 'update', None) is update_rule_update
                and 'update' not in rule.__dict__):
            update_rule_update(rule, param)
        else:
            rule.update(param)


cdef object _finish_stock(object self, bint hooks_done=False):
    """The rest of stock update after lossfun, through generators."""
    if not hooks_done:
        self.reallocate_cleared_grads()
        self.check_nan_in_grads()
        self.call_hooks('pre')
    self.t += 1
    if self.is_safe_to_update():
        for param in self.target.params():
            param.update()
    self.reallocate_cleared_grads()
    self.call_hooks('post')
    self.update_loss_scale()
