"""Fused CPU kernels: drop-ins for each built-in rule's ``update_core_cpu``.

Each replacement takes the fast path only for the exact built-in rule class
with C-contiguous, aligned, non-overlapping NumPy arrays of one float dtype
(float16, float32, float64; ndim >= 1) and hyperparameters whose NumPy
casting it reproduces (Python/NumPy float or int scalars in the range where
NumPy 1.26's value-based casting keeps the array dtype). Everything else
runs the original method, counted with its reason.
"""
import builtins
import math

import numpy

import chainer
from chainer import optimizer as _optimizer_module
from chainer.optimizers import ada_delta, ada_grad, adam, corrected_momentum_sgd
from chainer.optimizers import momentum_sgd, msvag, nesterov_ag, rmsprop
from chainer.optimizers import rmsprop_graves, sgd, smorms3

from chainer_fastpath._stats cimport EntryStats
from chainer_fastpath import _stats

from cpython.float cimport PyFloat_AS_DOUBLE
from libc.math cimport pow as c_pow, sqrt as c_sqrt, isfinite
from libc.stdint cimport uint16_t

from chainer_fastpath._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    CFP_NPY_HALF, CFP_NPY_WRITEABLE, cfp_byteorder, cfp_data, cfp_dims,
    cfp_elsize, cfp_flags, cfp_nd, cfp_typenum, layout_ok)

cdef extern from "_kernels.h" nogil:
    uint16_t cfp_f2h(float x)
    float cfp_h2f(uint16_t h)


    enum:
        CFP_F16, CFP_F32, CFP_F64
    enum:
        CFP_SGD, CFP_MOMENTUM, CFP_CORRECTED, CFP_NESTEROV, CFP_RMSPROP,
        CFP_GRAVES, CFP_ADAGRAD, CFP_ADADELTA, CFP_SMORMS3, CFP_MSVAG,
        CFP_ADAM
    void cfp_run(int rule, int dtype, Py_ssize_t n, char **p,
                 const double *s, const int *f)


# Arrays at least this large are updated with the GIL released.
DEF NOGIL_SIZE = 16384

cdef object _ndarray = numpy.ndarray
cdef object _np_float16 = numpy.float16
cdef object _np_float32 = numpy.float32
cdef object _np_float64 = numpy.float64
cdef object _np_integer = numpy.integer
cdef object _np_asarray = numpy.asarray
cdef object _np_empty = numpy.empty
cdef object _Hyperparameter = _optimizer_module.Hyperparameter
cdef object _pymin = builtins.min
cdef object _MISSING = object()

# rule class name -> stock update_core_cpu; filled by bind().
cdef dict _originals = {}


# --------------------------------------------------------------------------
# Hyperparameters and scalars

cdef inline object _hp(object hp, str name):
    """``getattr(hp, name)`` for a chain of plain Hyperparameter objects."""
    cdef object h = hp
    cdef object d, v
    while type(h) is _Hyperparameter:
        d = h.__dict__
        v = d.get(name, _MISSING)
        if v is not _MISSING:
            return v
        h = d.get('_parent')
    return getattr(hp, name)


cdef int _num(object x, double *out, bint *is_int) except -1:
    """The exact value of a real scalar; 0 when it is not one we handle."""
    cdef object t = type(x)
    cdef object iv
    if t is float:
        out[0] = PyFloat_AS_DOUBLE(x)
        is_int[0] = False
        return 1
    if t is int or t is bool:
        iv = x
    elif t is _np_float32 or t is _np_float64 or t is _np_float16:
        out[0] = float(x)
        is_int[0] = False
        return 1
    elif isinstance(x, _np_integer):
        iv = int(x)
    else:
        return 0
    if not (-(1 << 53) < iv < (1 << 53)):
        return 0
    out[0] = <double>int(iv)
    is_int[0] = True
    return 1


cdef int _cast(object x, int bits, double *out) except -1:
    """``x`` as NumPy casts it in an operation with a ``float<bits>`` array
    (value-based casting, NumPy 1.26): 1 on success, 0 when the operation
    would not stay in that dtype or the scalar is of a kind we don't
    reproduce."""
    cdef double v
    cdef bint is_int
    if not _num(x, &v, &is_int):
        return 0
    if bits == 64:
        out[0] = v
        return 1
    if bits == 32:
        if is_int:
            if not (-32768 <= v <= 65535):
                return 0
        elif isfinite(v) and not (-3.4e38 < v < 3.4e38):
            return 0
        out[0] = <double>(<float>v)
        return 1
    # float16: the scalar is cast straight to float16 (not via float32)
    if is_int:
        if not (-128 <= v <= 255):
            return 0
    elif isfinite(v) and not (-65000.0 < v < 65000.0):
        return 0
    if is_int:
        out[0] = v          # exact in float16
    else:
        out[0] = float(_np_asarray(v).astype(_np_float16))
    return 1


cdef int _bits(int typenum):
    if typenum == CFP_NPY_FLOAT:
        return 32
    if typenum == CFP_NPY_DOUBLE:
        return 64
    if typenum == CFP_NPY_HALF:
        return 16
    return 0


# --------------------------------------------------------------------------
# Arrays

cdef struct Arrays:
    int bits
    int dtype       # CFP_F16, CFP_F32 or CFP_F64: the kernel table's column
    int nd
    Py_ssize_t n
    Py_ssize_t *dims
    int count
    char *lo[8]
    char *hi[8]


cdef str _add(Arrays *A, object a, bint writable):
    """Registers ``a``; returns a fallback reason, or None when it fits."""
    cdef int i, flags
    cdef char *p
    if type(a) is not _ndarray:
        return 'not a numpy.ndarray'
    if _bits(cfp_typenum(a)) != A.bits or cfp_byteorder(a) == b'>':
        return 'dtype'
    flags = cfp_flags(a)
    if (flags & CFP_NPY_C_CONTIGUOUS) == 0 or (flags & CFP_NPY_ALIGNED) == 0:
        return 'non-contiguous array'
    if writable and (flags & CFP_NPY_WRITEABLE) == 0:
        return 'read-only array'
    if cfp_nd(a) != A.nd:
        return 'shape'
    for i in range(A.nd):
        if cfp_dims(a)[i] != A.dims[i]:
            return 'shape'
    p = cfp_data(a)
    if A.n:
        for i in range(A.count):
            if p < A.hi[i] and A.lo[i] < p + A.n * (A.bits // 8):
                return 'overlapping arrays'
    A.lo[A.count] = p
    A.hi[A.count] = p + A.n * (A.bits // 8)
    A.count += 1
    return None


cdef str _begin(Arrays *A, object data, object grad):
    """Registers the parameter and its gradient first."""
    cdef int i
    if not layout_ok():
        return 'numpy layout not recognised'
    if type(data) is not _ndarray:
        return 'not a numpy.ndarray'
    A.bits = _bits(cfp_typenum(data))
    if A.bits == 0:
        return 'dtype'
    A.dtype = (CFP_F16 if A.bits == 16 else CFP_F32 if A.bits == 32
               else CFP_F64)
    A.nd = cfp_nd(data)
    if A.nd == 0:
        return '0-d parameter'
    A.dims = cfp_dims(data)
    A.n = 1
    for i in range(A.nd):
        A.n *= A.dims[i]
    A.count = 0
    r = _add(A, data, True)
    if r is None:
        r = _add(A, grad, False)
    return r


cdef inline void _launch(int rule, Arrays *A, double *s, int *f):
    if A.n >= NOGIL_SIZE or A.bits == 16:
        with nogil:
            cfp_run(rule, A.dtype, A.n, A.lo, s, f)
    else:
        cfp_run(rule, A.dtype, A.n, A.lo, s, f)


# --------------------------------------------------------------------------
# The replacements

cdef dict _stats_of = {}


cdef inline object _fallback(str name, str reason, object self, object param):
    (<EntryStats>_stats_of[name]).fallback(reason)
    return _originals[name](self, param)


cdef inline void _fast(str name):
    (<EntryStats>_stats_of[name]).fast += 1


cdef object _Parameter = chainer.Parameter
cdef object _Variable = chainer.Variable


cdef inline bint _plain(object param):
    """A NumPy Variable/Parameter with standard layout: its ``grad`` and
    ``data`` properties reduce to the attribute reads below."""
    return ((type(param) is _Parameter or type(param) is _Variable)
            and param._layout is None and not param._has_chainerx_array)


cdef inline object _grad(object param, bint plain):
    """``param.grad``"""
    if plain and param._grad_valid:
        gv = param._grad_var
        if gv is None:
            return param._grad
    return param.grad


cdef inline object _data(object param, bint plain):
    """``param.data``"""
    if plain:
        return param._data[0]
    return param.data


cdef inline void _set_data(object param, object data, bint plain) except *:
    """``param.data = data`` where ``data`` is already param's array:
    the setter only refreshes the node's dtype and shape."""
    if plain:
        node = param._node
        if node.dtype is data.dtype and node.shape == data.shape:
            return
    param.data = data


cdef inline object _state(object self, str key):
    st = self._state
    if type(st) is not dict:
        return _MISSING
    return (<dict>st).get(key, _MISSING)


def sgd_update_core_cpu(self, param):
    cdef str name = 'SGDRule'
    cdef Arrays A
    cdef double lr
    if type(self) is not sgd.SGDRule:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return
    data = _data(param, plain)
    r = _begin(&A, data, grad)
    if r is None and not _cast(_hp(self.hyperparam, 'lr'), A.bits, &lr):
        r = 'hyperparameter'
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    cdef double sc[1]
    cdef int fl[2]
    sc[0] = lr
    _launch(CFP_SGD, &A, sc, fl)
    _set_data(param, data, plain)


cdef object _momentum_like(str name, object cls, int kind, object self,
                           object param):
    # kind 0: MomentumSGD, 1: CorrectedMomentumSGD, 2: NesterovAG
    cdef Arrays A
    cdef double lr, mom, mm = 0, c = 0
    if type(self) is not cls:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return None
    data = _data(param, plain)
    v = _state(self, 'v')
    r = _begin(&A, data, grad)
    if r is None:
        r = _add(&A, v, True)
    if r is None:
        hp = self.hyperparam
        lr_o = _hp(hp, 'lr')
        mom_o = _hp(hp, 'momentum')
        if not (_cast(lr_o, A.bits, &lr) and _cast(mom_o, A.bits, &mom)):
            r = 'hyperparameter'
        elif kind == 2:
            if not (_cast(mom_o * mom_o, A.bits, &mm)
                    and _cast((1 + mom_o) * lr_o, A.bits, &c)):
                r = 'hyperparameter'
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    cdef double sc[4]
    cdef int fl[2]
    sc[0] = lr
    sc[1] = mom
    sc[2] = mm
    sc[3] = c
    _launch(CFP_MOMENTUM if kind == 0 else
            CFP_CORRECTED if kind == 1 else CFP_NESTEROV, &A, sc, fl)
    _set_data(param, data, plain)
    return None


def momentum_sgd_update_core_cpu(self, param):
    return _momentum_like('MomentumSGDRule', momentum_sgd.MomentumSGDRule, 0,
                          self, param)


def corrected_momentum_sgd_update_core_cpu(self, param):
    return _momentum_like('CorrectedMomentumSGDRule',
                          corrected_momentum_sgd.CorrectedMomentumSGDRule, 1,
                          self, param)


def nesterov_ag_update_core_cpu(self, param):
    return _momentum_like('NesterovAGRule', nesterov_ag.NesterovAGRule, 2,
                          self, param)


cdef object _alpha_t(object self, object hp):
    """AdamRule.alpha_t: ``hp.alpha * math.sqrt(fix2) / fix1``."""
    cdef double a, b1, b2, t, f1, f2
    alpha = _hp(hp, 'alpha')
    beta1 = _hp(hp, 'beta1')
    beta2 = _hp(hp, 'beta2')
    tt = self.t
    if (type(alpha) is float and type(beta1) is float
            and type(beta2) is float and type(tt) is int and tt != 0):
        a = PyFloat_AS_DOUBLE(alpha)
        b1 = PyFloat_AS_DOUBLE(beta1)
        b2 = PyFloat_AS_DOUBLE(beta2)
        t = <double>tt
        if isfinite(a) and isfinite(b1) and isfinite(b2) and isfinite(t):
            f1 = c_pow(b1, t)
            f2 = c_pow(b2, t)
            if isfinite(f1) and isfinite(f2):
                f1 = 1. - f1
                f2 = 1. - f2
                if f2 >= 0 and f1 != 0:
                    return a * c_sqrt(f2) / f1
    return adam._learning_rate(hp, tt)


def adam_update_core_cpu(self, param):
    cdef str name = 'AdamRule'
    cdef Arrays A
    cdef double b1, b2, alpha_t, eps, lower = 0, upper = 0, a, b, e
    cdef int ib, interm
    cdef bint a_is_one, bound, ams
    cdef char *vh = NULL
    if type(self) is not adam.AdamRule:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return
    hp = self.hyperparam
    data = _data(param, plain)
    m = _state(self, 'm')
    v = _state(self, 'v')
    r = _begin(&A, data, grad)
    if r is None:
        r = _add(&A, m, True)
    if r is None:
        r = _add(&A, v, True)
    if r is None:
        ams = bool(_hp(hp, 'amsgrad'))
        bound = bool(_hp(hp, 'adabound'))
        if ams:
            r = _add(&A, _state(self, 'vhat'), True)
            vh = A.lo[4]
    if r is None:
        tt = self.t
        if type(tt) is not int or tt == 0:
            r = 't'
        elif bound and 'initial_alpha' not in self.__dict__:
            r = 'initial_alpha'
    if r is None:
        interm = 64 if A.bits == 64 else 32
        eps_o = _hp(hp, 'eps')
        eta_o = _hp(hp, 'eta')
        a_o = 1.0 - eta_o * _hp(hp, 'weight_decay_rate')
        a_is_one = bool(a_o == 1)
        if not (_cast(1.0 - _hp(hp, 'beta1'), interm, &b1)
                and _cast(1.0 - _hp(hp, 'beta2'), interm, &b2)
                and _cast(_alpha_t(self, hp), interm, &alpha_t)
                and _cast(eps_o, interm, &eps)
                and _cast(-eta_o, interm, &b)
                and (a_is_one or _cast(a_o, A.bits, &a))):
            r = 'hyperparameter'
        elif eps == 0 and eps_o != 0:
            r = 'eps underflows'     # stock raises ValueError
        elif bound:
            lo_o, up_o = self.bounds
            if not (_cast(lo_o, interm, &lower)
                    and _cast(up_o, interm, &upper)):
                r = 'hyperparameter'
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    if a_is_one:
        a = 1
    cdef double sc[8]
    cdef int fl[2]
    sc[0] = b1
    sc[1] = b2
    sc[2] = alpha_t
    sc[3] = eps
    sc[4] = lower
    sc[5] = upper
    sc[6] = a
    sc[7] = b
    fl[0] = bound
    fl[1] = a_is_one
    if not ams:
        A.lo[4] = NULL
    _launch(CFP_ADAM, &A, sc, fl)


cdef inline int _eps_as_dtype(object eps_o, int bits, double *out) except -1:
    """``grad.dtype.type(hp.eps)``; 0 when we don't reproduce it."""
    cdef double v
    cdef bint is_int
    if not _num(eps_o, &v, &is_int):
        return 0
    if bits == 64:
        out[0] = v
    elif bits == 32:
        out[0] = <double>(<float>v)
    else:
        out[0] = float(_np_float16(eps_o))
    return 1


def rmsprop_update_core_cpu(self, param):
    cdef str name = 'RMSpropRule'
    cdef Arrays A
    cdef double alpha, oma, eps, lr, e
    cdef int inside
    if type(self) is not rmsprop.RMSpropRule:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return
    hp = self.hyperparam
    data = _data(param, plain)
    r = _begin(&A, data, grad)
    if r is None:
        r = _add(&A, _state(self, 'ms'), True)
    if r is None:
        eps_o = _hp(hp, 'eps')
        alpha_o = _hp(hp, 'alpha')
        if not (_eps_as_dtype(eps_o, A.bits, &eps)
                and _cast(alpha_o, A.bits, &alpha)
                and _cast(1 - alpha_o, A.bits, &oma)
                and _cast(_hp(hp, 'lr'), A.bits, &lr)):
            r = 'hyperparameter'
        elif eps_o != 0 and eps == 0:
            r = 'eps underflows'     # stock raises ValueError
        inside = bool(_hp(hp, 'eps_inside_sqrt'))
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    cdef double sc[4]
    cdef int fl[2]
    sc[0] = alpha
    sc[1] = oma
    sc[2] = eps
    sc[3] = lr
    fl[0] = inside
    _launch(CFP_RMSPROP, &A, sc, fl)
    _set_data(param, data, plain)


def rmsprop_graves_update_core_cpu(self, param):
    cdef str name = 'RMSpropGravesRule'
    cdef Arrays A
    cdef double alpha, oma, mom, lr, eps
    if type(self) is not rmsprop_graves.RMSpropGravesRule:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return
    hp = self.hyperparam
    data = _data(param, plain)
    r = _begin(&A, data, grad)
    for key in ('n', 'g', 'delta'):
        if r is None:
            r = _add(&A, _state(self, key), True)
    if r is None:
        alpha_o = _hp(hp, 'alpha')
        if not (_cast(alpha_o, A.bits, &alpha)
                and _cast(1 - alpha_o, A.bits, &oma)
                and _cast(_hp(hp, 'momentum'), A.bits, &mom)
                and _cast(_hp(hp, 'lr'), A.bits, &lr)
                and _cast(_hp(hp, 'eps'), A.bits, &eps)):
            r = 'hyperparameter'
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    cdef double sc[5]
    cdef int fl[2]
    sc[0] = alpha
    sc[1] = oma
    sc[2] = mom
    sc[3] = lr
    sc[4] = eps
    _launch(CFP_GRAVES, &A, sc, fl)
    _set_data(param, data, plain)


def ada_grad_update_core_cpu(self, param):
    cdef str name = 'AdaGradRule'
    cdef Arrays A
    cdef double lr, eps
    if type(self) is not ada_grad.AdaGradRule:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return
    hp = self.hyperparam
    data = _data(param, plain)
    r = _begin(&A, data, grad)
    if r is None:
        r = _add(&A, _state(self, 'h'), True)
    if r is None and not (_cast(_hp(hp, 'lr'), A.bits, &lr)
                          and _cast(_hp(hp, 'eps'), A.bits, &eps)):
        r = 'hyperparameter'
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    cdef double sc[2]
    cdef int fl[2]
    sc[0] = lr
    sc[1] = eps
    _launch(CFP_ADAGRAD, &A, sc, fl)
    _set_data(param, data, plain)


def ada_delta_update_core_cpu(self, param):
    cdef str name = 'AdaDeltaRule'
    cdef Arrays A
    cdef double rho, omr, eps
    if type(self) is not ada_delta.AdaDeltaRule:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return
    hp = self.hyperparam
    data = _data(param, plain)
    r = _begin(&A, data, grad)
    for key in ('msg', 'msdx'):
        if r is None:
            r = _add(&A, _state(self, key), True)
    if r is None:
        rho_o = _hp(hp, 'rho')
        if not (_cast(rho_o, A.bits, &rho)
                and _cast(1 - rho_o, A.bits, &omr)
                and _cast(_hp(hp, 'eps'), A.bits, &eps)):
            r = 'hyperparameter'
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    cdef double sc[3]
    cdef int fl[2]
    sc[0] = rho
    sc[1] = omr
    sc[2] = eps
    _launch(CFP_ADADELTA, &A, sc, fl)
    _set_data(param, data, plain)


def smorms3_update_core_cpu(self, param):
    cdef str name = 'SMORMS3Rule'
    cdef Arrays A
    cdef double lr, eps
    if type(self) is not smorms3.SMORMS3Rule:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return
    hp = self.hyperparam
    data = _data(param, plain)
    r = _begin(&A, data, grad)
    for key in ('mem', 'g', 'g2'):
        if r is None:
            r = _add(&A, _state(self, key), False)
    if r is None and not (_cast(_hp(hp, 'lr'), A.bits, &lr)
                          and _cast(_hp(hp, 'eps'), A.bits, &eps)):
        r = 'hyperparameter'
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    # stock replaces the three state arrays with new ones
    shape = data.shape
    dt = data.dtype
    mem_o = _np_empty(shape, dt)
    g_o = _np_empty(shape, dt)
    g2_o = _np_empty(shape, dt)
    A.lo[5] = cfp_data(mem_o)
    A.lo[6] = cfp_data(g_o)
    A.lo[7] = cfp_data(g2_o)
    cdef double sc[2]
    cdef int fl[2]
    sc[0] = lr
    sc[1] = eps
    _launch(CFP_SMORMS3, &A, sc, fl)
    _set_data(param, data, plain)
    state = self.state
    state['mem'], state['g'], state['g2'] = mem_o, g_o, g2_o


def msvag_update_core_cpu(self, param):
    cdef str name = 'MSVAGRule'
    cdef Arrays A
    cdef double omb, ombp, omrho, rho, eta, lr, wdr
    if type(self) is not msvag.MSVAGRule:
        return _fallback(name, 'subclass', self, param)
    cdef bint plain = _plain(param)
    grad = _grad(param, plain)
    if grad is None:
        _fast(name)
        return
    hp = self.hyperparam
    data = _data(param, plain)
    r = _begin(&A, data, grad)
    for key in ('m', 'v'):
        if r is None:
            r = _add(&A, _state(self, key), True)
    if r is None:
        beta = _hp(hp, 'beta')
        bp = self.beta_power
        rho_o = (((1.0 - beta) ** 2) * (1.0 - bp ** 2) /
                 (((1.0 - bp) ** 2) * (1.0 - beta ** 2)))
        rho_o = _pymin(rho_o, 0.9999)
        if not (_cast(1 - beta, A.bits, &omb)
                and _cast(1 - bp, A.bits, &ombp)
                and _cast(1 - rho_o, A.bits, &omrho)
                and _cast(rho_o, A.bits, &rho)
                and _cast(_hp(hp, 'eta'), A.bits, &eta)
                and _cast(_hp(hp, 'lr'), A.bits, &lr)
                and _cast(_hp(hp, 'weight_decay_rate'), A.bits, &wdr)):
            r = 'hyperparameter'
    if r is not None:
        return _fallback(name, r, self, param)
    _fast(name)
    cdef double sc[7]
    cdef int fl[2]
    sc[0] = omb
    sc[1] = ombp
    sc[2] = omrho
    sc[3] = rho
    sc[4] = eta
    sc[5] = lr
    sc[6] = wdr
    _launch(CFP_MSVAG, &A, sc, fl)
    _set_data(param, data, plain)
    self.beta_power *= beta


# rule class, replacement: the targets of this module.
RULES = (
    ('SGDRule', sgd.SGDRule, sgd_update_core_cpu),
    ('MomentumSGDRule', momentum_sgd.MomentumSGDRule,
     momentum_sgd_update_core_cpu),
    ('CorrectedMomentumSGDRule',
     corrected_momentum_sgd.CorrectedMomentumSGDRule,
     corrected_momentum_sgd_update_core_cpu),
    ('NesterovAGRule', nesterov_ag.NesterovAGRule,
     nesterov_ag_update_core_cpu),
    ('AdamRule', adam.AdamRule, adam_update_core_cpu),
    ('RMSpropRule', rmsprop.RMSpropRule, rmsprop_update_core_cpu),
    ('RMSpropGravesRule', rmsprop_graves.RMSpropGravesRule,
     rmsprop_graves_update_core_cpu),
    ('AdaGradRule', ada_grad.AdaGradRule, ada_grad_update_core_cpu),
    ('AdaDeltaRule', ada_delta.AdaDeltaRule, ada_delta_update_core_cpu),
    ('SMORMS3Rule', smorms3.SMORMS3Rule, smorms3_update_core_cpu),
    ('MSVAGRule', msvag.MSVAGRule, msvag_update_core_cpu),
)

for _name, _cls, _fn in RULES:
    _stats_of[_name] = _stats.entry(_name + '.update_core_cpu')


TARGETS = tuple((cls, 'update_core_cpu') for _, cls, _ in RULES)


def bind(owner, attribute, original):
    """Records ``original``, the stock ``owner.attribute`` (the first one
    given wins); returns the replacement."""
    for name, cls, fn in RULES:
        if cls is owner and attribute == 'update_core_cpu':
            _originals.setdefault(name, original)
            return fn
    raise KeyError((owner, attribute))


# Test helpers: NumPy's float16 conversions as the kernels do them.
def _f32_to_f16_bits(float[::1] src, unsigned short[::1] dst):
    cdef Py_ssize_t i
    for i in range(src.shape[0]):
        dst[i] = cfp_f2h(src[i])


def _f16_bits_to_f32(unsigned short[::1] src, float[::1] dst):
    cdef Py_ssize_t i
    for i in range(src.shape[0]):
        dst[i] = cfp_h2f(src[i])
