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
from chainer import optimizer as _opt
from chainer import variable as _variable
from chainer.backends import _cpu

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, lookup_site, set_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport (
    StockMethods, method_is_at, stock_replaced)
from chainer_fastpath._core._links cimport collect_params
from chainer_fastpath._core._config cimport PerThread, debug_mode
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats
from chainer_fastpath.optimizers._kernels cimport (
    param_device, stock_cpu_device, update_core_cpu)

cfp_attr_enable(_attrs.FAST)

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

cdef StockMethods _param_methods = StockMethods(_Parameter, ('update',))
cdef StockMethods _rule_methods = StockMethods(
    _UpdateRule,
    ('update_core', '_init_states', 'state', '_UpdateRule__update'))

# What the lean paths read and write of a rule and a parameter, through the
# attribute caches (_core/_attrs.h): the generic access's result, in a few
# instructions while the class keeps its version.
cdef cfp_attr _get_enabled = get_site('enabled')
cdef cfp_attr _get_t = get_site('t')
cdef cfp_attr _set_t = set_site('t')
cdef cfp_attr _get_hookable = get_site('_hookable')
cdef cfp_attr _get_use_fp32 = get_site('_use_fp32_update')
cdef cfp_attr _get_state = get_site('_state')
cdef cfp_attr _get_has_chainerx = get_site('_has_chainerx_array')
cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _get_loss_scale = get_site('_loss_scale')
cdef cfp_attr _get_grad_valid = get_site('_grad_valid')
cdef cfp_attr _get_grad_var = get_site('_grad_var')
cdef cfp_attr _get_grad = get_site('_grad')
cdef cfp_attr _get_layout = get_site('_layout')
cdef cfp_attr _get_update_rule = get_site('update_rule')
cdef cfp_attr _update_site = lookup_site('update')

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


# --------------------------------------------------------------------------
# UpdateRule.update

cdef cfp_attr _get_pre_hooks = get_site('_pre_update_hooks')
cdef cfp_attr _get_post_hooks = get_site('_post_update_hooks')
cdef cfp_attr _update_core_site = lookup_site('update_core')


cdef inline bint _hooks_empty(object hookable, bint pre) except -1:
    """True when ``hookable.call_hooks(timing, ...)`` would call nothing
    (timing 'pre' or 'post')."""
    if type(hookable) is not _Hookable:
        return False
    try:
        hooks = get(hookable, &_get_pre_hooks if pre else &_get_post_hooks)
    except AttributeError:
        return False        # stock's call_hooks raises it
    return hooks is not None and len(hooks) == 0


# The flag ``variable._AllowArrayAccessWithNonstandardLayout`` sets, in the
# calling thread's dict of ``variable._thread_local`` (a ``_thread._local``
# answers ``__dict__`` with it): what setting the attribute stores there.
cdef PerThread _allow_dicts = PerThread(_thread_local)


cdef inline dict _allow_store():
    """The calling thread's dict of ``_thread_local``, or None where setting
    the attribute may do more than store it there."""
    if _allow_dicts.cacheable:
        return _allow_dicts.get()
    return None


cdef inline object _allow_set(dict store, object value):
    """Sets the flag to ``value``; returns what it was (False where unset,
    as ``variable._allow_array_access_with_nonstandard_layout`` reads it).
    """
    if store is not None:
        old = store.get(_ALLOW, False)
        store[_ALLOW] = value
        return old
    try:
        old = getattr(_thread_local, _ALLOW)
    except AttributeError:
        old = False
    setattr(_thread_local, _ALLOW, value)
    return old


cdef str _rule_check(object self, object param):
    """None when the lean path reproduces stock ``update``; else why not."""
    if type(param) is not _Parameter and type(param) is not _Variable:
        return 'Variable subclass'
    if get(param, &_get_has_chainerx):
        return 'chainerx'
    arr = get(param, &_get_data)[0]
    if arr is not None and type(arr) is not _ndarray:
        return 'not a numpy.ndarray'
    dev = param_device(param)
    if type(dev) is not _CpuDevice:
        return 'device'
    if not stock_cpu_device(dev):
        return 'device methods replaced'
    if get(self, &_get_use_fp32):
        return 'use_fp32_update'
    if not _rule_methods.found_by(self):
        sd = self.__dict__
        if ('update_core' in sd or '_init_states' in sd
                or '_UpdateRule__update' in sd):
            return 'instance override'
        return 'UpdateRule subclass'
    try:
        get(self, &_get_hookable)
    except AttributeError:
        return 'instance override'      # stock raises after some work
    # The lean body reads the parameter past its properties.
    return stock_replaced()


cdef object _rule_update(object self, object param):
    """The lean body; the caller checked ``_rule_check``."""
    cdef bint is_initialized
    cdef object hookable = get(self, &_get_hookable)
    t = get(self, &_get_t)
    t += 1
    put(self, &_set_t, t)
    cdef dict store = _allow_store()
    old = _allow_set(store, True)
    try:
        is_initialized = get(param, &_get_data)[0] is not None
        loss_scale = get(param, &_get_loss_scale)
        if is_initialized:
            state = get(self, &_get_state)
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
        if not _hooks_empty(hookable, True):
            hookable.call_hooks('pre', args=(self, param,))
        if (method_is_at(self, &_update_core_site, _s_update_core)
                and type(param_device(param)) is _CpuDevice):
            # stock update_core: `with using_device(cpu)` is a no-op
            update_core_cpu(self, param)
        else:
            self.update_core(param)
        if not _hooks_empty(hookable, False):
            hookable.call_hooks('post', args=(self, param,))
    finally:
        _allow_set(store, old)


cdef object _rule_update_entry(object self, object param):
    if not get(self, &_get_enabled):
        _st_rule.fast += 1
        return
    reason = _rule_check(self, param)
    if reason is not None:
        _st_rule.fallback(reason)
        return _orig_rule_update(self, param)
    _st_rule.fast += 1
    _rule_update(self, param)


def update_rule_update(self, param):
    """Drop-in for ``UpdateRule.update``."""
    return _rule_update_entry(self, param)


# --------------------------------------------------------------------------
# GradientMethod.update

cdef StockMethods _method_methods = StockMethods(
    _GradientMethod,
    ('reallocate_cleared_grads', 'check_nan_in_grads', 'call_hooks',
     'is_safe_to_update', 'update_loss_scale'))
cdef cfp_attr _get_target = get_site('target')
cdef cfp_attr _get_dynamic = get_site('_loss_scaling_is_dynamic')
cdef cfp_attr _get_isnan = get_site('_loss_scaling_isnan')
cdef cfp_attr _set_isnan = set_site('_loss_scaling_isnan')


cdef str _method_check(object self):
    if not _method_methods.found_by(self):
        sd = self.__dict__
        for name in _method_methods.names:
            if name in sd:
                return 'instance override'
        return 'GradientMethod subclass'
    if get(self, &_get_target) is None:
        return 'not set up'
    h = get(self, &_get_hookable)
    if h is None:
        return 'not set up'
    if type(h) is not _OptimizerHookable:
        return 'hookable'
    return None


cdef bint _all_have_grads(list params) except -1:
    """True when stock ``reallocate_cleared_grads`` would allocate nothing."""
    for p in params:
        if type(p) is not _Parameter or get(p, &_get_has_chainerx):
            return False
        if get(p, &_get_data)[0] is None:
            continue        # namedparams(False) skips it
        if not get(p, &_get_grad_valid):
            return False    # let stock raise through the property
        gv = get(p, &_get_grad_var)
        if gv is None:
            if get(p, &_get_grad) is None:
                return False
        elif type(gv) is not _Variable or get(gv, &_get_has_chainerx):
            return False    # let stock read it through the property
        elif (<list>get(gv, &_get_data))[0] is None:
            return False    # ``grad_var.array``: None
    return True


cdef inline void _realloc(object self, list params) except *:
    # _all_have_grads reads past the properties stock reads ``grad`` by.
    if stock_replaced() is not None or not _all_have_grads(params):
        self.reallocate_cleared_grads()


cdef inline bint _opt_hooks_empty(object self, bint pre) except -1:
    h = get(self, &_get_hookable)
    if type(h) is not _OptimizerHookable:
        return False
    try:
        hooks = get(h, &_get_pre_hooks if pre else &_get_post_hooks)
    except AttributeError:
        return False        # stock's call_hooks raises it
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
    if not collect_params(get(self, &_get_target), params):
        _st_method.fallback('Link overrides params')
        return _finish_stock(self)
    _st_method.fast += 1

    _realloc(self, params)
    # check_nan_in_grads
    if get(self, &_get_dynamic):
        self.check_nan_in_grads()
    else:
        put(self, &_set_isnan, False)
    if not _opt_hooks_empty(self, True):
        self.call_hooks('pre')
        params = []
        if not collect_params(get(self, &_get_target), params):
            return _finish_stock(self, hooks_done=True)

    t = get(self, &_get_t)
    t += 1
    put(self, &_set_t, t)
    if not get(self, &_get_isnan):
        _update_params(params)

    _realloc(self, params)
    if not _opt_hooks_empty(self, False):
        self.call_hooks('post')
    if get(self, &_get_dynamic):
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
        rule = get(param, &_get_update_rule)
        if rule is None:
            continue
        if (get(param, &_get_layout) is not None
                and not rule.is_elementwise):
            param.update()      # raises as stock does
            continue
        if method_is_at(rule, &_update_site, update_rule_update):
            _rule_update_entry(rule, param)
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
