"""Fused CPU kernels: drop-ins for each built-in rule's ``update_core_cpu``
and for the ``WeightDecay`` hook's ``__call__``.

Each replacement takes the fast path only for the exact built-in rule class
with C-contiguous, aligned, non-overlapping NumPy arrays of one float dtype
(float16, float32, float64; ndim >= 1) and hyperparameters whose NumPy
casting it reproduces (Python/NumPy float or int scalars in the range where
NumPy 1.26's value-based casting keeps the array dtype). Everything else
runs the original method, counted with its reason; so does an update whose
hyperparameters raise (stock raises where it computes them), and one that
raised a floating-point exception NumPy's error state watches, or left a
NaN in the parameter: the kernel puts the old values back and stock redoes
it, warning, raising and choosing NaNs as NumPy does.
"""
import builtins
import functools as _functools
import re as _re
import warnings as _warnings

import numpy
from numpy.core import umath as _umath

import chainer
from chainer import optimizer as _optimizer_module
from chainer import optimizer_hooks
from chainer.backends import _cpu
from chainer.optimizers import (
    ada_delta, ada_grad, adam, corrected_momentum_sgd, momentum_sgd, msvag,
    nesterov_ag, rmsprop, rmsprop_graves, sgd, smorms3)

from chainer import _backend
from chainer import backend as _backend_module

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_own_dict, get_site,
    lookup_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport (
    StockFunctions, StockMethods, method_is_at, stock_replaced)
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.float cimport FLT_MIN
from libc.math cimport fabs, pow as c_pow, sqrt as c_sqrt, isfinite
from libc.stdint cimport uint16_t, uint64_t, uintptr_t
from libc.string cimport memset

from chainer_fastpath._core._fpe cimport (
    FE_DIVBYZERO, FE_INVALID, FE_OVERFLOW, FE_UNDERFLOW, clear_flags,
    fetestexcept, watched)

from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    CFP_NPY_HALF, CFP_NPY_WRITEABLE, cfp_byteorder, cfp_data, cfp_dims,
    cfp_flags, cfp_nd, cfp_typenum, empty, numpy_struct_matches)

from chainer_fastpath._core._dicts cimport (
    cfp_dict_version, cfp_dict_item, cfp_item_memo)

cdef extern from "Python.h":
    PyObject *_PyType_Lookup(PyTypeObject *type, object name)
    Py_ssize_t PyDict_GET_SIZE(object d)

cdef extern from "_kernels.h" nogil:
    uint16_t cfp_f2h(float x)
    uint16_t cfp_d2h(double x, int *under)
    float cfp_h2f(uint16_t h)

    enum:
        CFP_F16, CFP_F32, CFP_F64
    enum:
        CFP_SGD, CFP_MOMENTUM, CFP_CORRECTED, CFP_NESTEROV, CFP_RMSPROP,
        CFP_GRAVES, CFP_ADAGRAD, CFP_ADADELTA, CFP_SMORMS3, CFP_MSVAG,
        CFP_ADAM, CFP_WDECAY
    enum:
        CFP_DONE, CFP_RAISED, CFP_NAN
    int cfp_run(int rule, int dtype, Py_ssize_t n, char **p,
                const double *s, const int *f, int nw, char **w,
                Py_ssize_t nbytes, char *save, int watch)
    enum:
        CFP_CHUNK, CFP_MAX_OPERANDS
    Py_ssize_t cfp_scratch_bytes(int nw, int itemsize)
    int cfp_check(int rule, int dtype, Py_ssize_t n, char **p,
                  const double *s, const int *f, int nw, int itemsize,
                  char *scratch, int watch)
    void cfp_run_in_place(int rule, int dtype, Py_ssize_t n, char **p,
                          const double *s, const int *f)
    int cfp_run_chunks(int rule, int dtype, Py_ssize_t n, char **p,
                       const double *s, const int *f, int nw, char **w,
                       int itemsize, char *save, int watch, Py_ssize_t *done)


# Elements per chunk of the large updates (for the tests).
_CHUNK = CFP_CHUNK

# Arrays at least this large are updated with the GIL released.
DEF NOGIL_SIZE = 16384
# Old values of at most this many doubles' bytes are saved on the stack.
DEF STACK_SAVE = 2048

cfp_attr_enable(_attrs.FAST)

cdef object _ndarray = numpy.ndarray
cdef object _np_float16 = numpy.float16
cdef object _np_float32 = numpy.float32
cdef object _np_float64 = numpy.float64
cdef object _np_integer = numpy.integer
cdef object _Hyperparameter = _optimizer_module.Hyperparameter
cdef object _pymin = builtins.min
cdef object _MISSING = object()

# --------------------------------------------------------------------------
# Hyperparameters and scalars

# The dicts along the Hyperparameter chain of the update in progress, read
# once per update: reading ``__dict__`` goes through Hyperparameter's
# ``__getattr__`` hook, and per name that was most of an Adam rule's
# scalars. The values are still read from the dicts name by name.
cdef object _chain_hp = None
cdef list _chain_dicts = None
# A chain is followed this far; a longer one, or a cycle (on which stock's
# __getattr__ recursion finds the names before the cycle, or raises), is
# read by getattr.
DEF _CHAIN_MAX = 16
# Their versions when the chain was followed through them ('_parent' read).
cdef uint64_t _chain_versions[_CHAIN_MAX]
# A name's value in the last dict of a chain (the optimizer's own
# Hyperparameter, which every rule's chain ends in), remembered while that
# dict keeps its version: one memo per slot, chosen by the name (the names
# are the kernels' constants, alive as long as the memos).
DEF _MEMO_SLOTS = 32
cdef cfp_item_memo _memos[_MEMO_SLOTS]


cdef inline object _hp_dict(object h):
    """``h.__dict__`` of a Hyperparameter: its dict read where it has one
    (see _attrs.h), without its class's ``__getattr__`` hook."""
    cdef PyObject *d = cfp_own_dict(h)
    if d != NULL:
        return <object>d
    return h.__dict__


cdef list _dicts_of(object hp, bint record):
    """The dicts of ``hp``'s chain of plain Hyperparameter objects, up to a
    link of another kind; None for a chain longer than ``_CHAIN_MAX``.
    With ``record``, the version each dict had when '_parent' was read in
    it goes to ``_chain_versions``."""
    cdef list dicts = []
    cdef object h = hp
    while type(h) is _Hyperparameter:
        if len(dicts) == _CHAIN_MAX:
            return None
        d = _hp_dict(h)
        if type(d) is not dict:
            break
        if record:
            _chain_versions[len(dicts)] = cfp_dict_version(d)
        dicts.append(d)
        h = (<dict>d).get('_parent')
    return dicts


cdef int _chain_begin(object hp) except -1:
    global _chain_hp, _chain_dicts
    _chain_dicts = _dicts_of(hp, True)
    _chain_hp = hp
    return 0


cdef inline void _chain_end():
    global _chain_hp, _chain_dicts
    _chain_hp = None
    _chain_dicts = None


cdef inline object _hp(object hp, str name):
    """``getattr(hp, name)``, looked up in the dicts of its chain of plain
    Hyperparameter objects (read once per update for the rule's own). A name
    the class has (set on ``Hyperparameter`` itself) is found there before
    a parent's dict, or before any dict: read by getattr."""
    cdef bint chain = hp is _chain_hp
    cdef list dicts = _chain_dicts if chain else _dicts_of(hp, False)
    cdef Py_ssize_t i, last
    cdef PyObject *v
    if (dicts is None or _PyType_Lookup(
            <PyTypeObject *>_Hyperparameter, name) is not NULL):
        return getattr(hp, name)
    last = len(dicts) - 1
    for i in range(last + 1):
        d = dicts[i]
        if i == last:
            v = cfp_dict_item(&_memos[_slot(name)], d, name)
            if v != NULL:
                return <object>v
        elif (chain and PyDict_GET_SIZE(d) == 1
                and cfp_dict_version(d) == _chain_versions[i] != 0):
            # Unchanged since the chain was followed through its
            # '_parent': its one key (a rule's own Hyperparameter, with
            # nothing set on it).
            continue
        else:
            value = (<dict>d).get(name, _MISSING)
            if value is not _MISSING:
                return value
    return getattr(hp, name)


cdef inline int _slot(str name):
    return <int>((<uintptr_t><PyObject *>name >> 4) % _MEMO_SLOTS)


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


cdef int _cast(Arrays *A, object x, int bits, double *out) except -1:
    """``x`` as NumPy casts it in an operation with a ``float<bits>`` array
    (value-based casting, NumPy 1.26): 1 on success, 0 when the operation
    would not stay in that dtype or the scalar is of a kind we don't
    reproduce. Adds to ``A.fpe`` the underflow NumPy's cast raises."""
    cdef double v
    cdef bint is_int
    cdef int under
    cdef float r
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
        r = <float>v
        if fabs(v) < FLT_MIN and r != v:
            A.fpe |= FE_UNDERFLOW
        out[0] = <double>r
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
        out[0] = cfp_h2f(cfp_d2h(v, &under))
        if under:
            A.fpe |= FE_UNDERFLOW
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
    int fpe         # flags NumPy's casts of the scalars would raise
    Py_ssize_t done  # elements the kernel updated before stock takes over
    # The arrays registered by _add, in order, each a reference owned until
    # _release: while the hyperparameters are read, Python code may replace
    # a state and free its array, or reallocate one (resize(refcheck=False)).
    PyObject *held[8]


cdef str _add(Arrays *A, object a, bint writable):
    """Registers ``a``; returns a fallback reason, or None when it fits."""
    cdef int i, flags
    cdef char *p
    if type(a) is not _ndarray:
        return 'not a numpy.ndarray'
    if _bits(cfp_typenum(a)) != A.bits or cfp_byteorder(a) == b'>':
        return 'dtype'
    flags = cfp_flags(a)
    if (flags & CFP_NPY_C_CONTIGUOUS) == 0:
        return 'non-contiguous array'
    if (flags & CFP_NPY_ALIGNED) == 0:
        return 'misaligned array'   # the kernels load items as C floats
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
    Py_INCREF(a)
    A.held[A.count] = <PyObject *>a
    A.count += 1
    return None


cdef inline void _release(Arrays *A) noexcept:
    """Drops the references _add took."""
    cdef int i
    for i in range(A.count):
        Py_XDECREF(A.held[i])
    A.count = 0


cdef bint _unchanged(Arrays *A):
    """Whether every array _add registered still has the memory it had
    then: the kernel writes through the pointers taken there."""
    cdef int i, k
    cdef Py_ssize_t n
    for i in range(A.count):
        a = <object>A.held[i]
        if cfp_data(a) != A.lo[i] or cfp_nd(a) != A.nd:
            return False
        n = 1
        for k in range(A.nd):
            n *= cfp_dims(a)[k]
        if n != A.n:
            return False
    return True


cdef str _begin(Arrays *A, object data, object grad):
    """Registers the parameter and its gradient first; the caller calls
    _release once the kernel has run or the update fell back."""
    cdef int i
    if not numpy_struct_matches():
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
    memset(A.lo, 0, sizeof(A.lo))
    A.fpe = 0
    r = _add(A, data, True)
    if r is None:
        r = _add(A, grad, False)
    return r


# --------------------------------------------------------------------------
# Whether stock can finish an update the kernel began

# NumPy 1.x's errstate: a 3-bit mode per flag; 1 warns, 4 prints.
cdef object _geterrobj = getattr(_umath, 'geterrobj', None)
cdef tuple _MODE_SHIFTS = tuple(
    (getattr(_umath, 'SHIFT_' + name, -1), flag) for name, flag in (
        ('DIVIDEBYZERO', FE_DIVBYZERO), ('OVERFLOW', FE_OVERFLOW),
        ('UNDERFLOW', FE_UNDERFLOW), ('INVALID', FE_INVALID)))
cdef frozenset _SHOWN = frozenset(
    ['default', 'always', 'ignore', 'module', 'once'])
cdef object _Pattern = _re.Pattern
cdef object _showwarning = _warnings._showwarning_orig
cdef object _showwarnmsg = _warnings._showwarnmsg
cdef object _showwarnmsg_impl = _warnings._showwarnmsg_impl
cdef object _list_append = type([].append)


cdef bint _matcher(object x):
    return x is None or type(x) is str or type(x) is _Pattern


cdef bint _warnings_shown() except -1:
    """Whether a RuntimeWarning would be shown, recorded or ignored, never
    raised: no filter that could match it (whatever its message, module
    and line) before one that matches them all is 'error' or malformed,
    and the warnings module's own functions show it, or
    ``catch_warnings(record=True)`` records it."""
    w = _warnings
    action = w.defaultaction
    if type(action) is not str or action not in _SHOWN:
        return False
    if type(w.onceregistry) is not dict:
        return False
    filters = w.filters
    if type(filters) is not list:
        return False
    for item in <list>filters:
        if type(item) is not tuple or len(<tuple>item) != 5:
            return False
        action, message, category, module, lineno = item
        if not (_matcher(message) and _matcher(module)
                and type(lineno) is int and isinstance(category, type)):
            return False
        if not issubclass(RuntimeWarning, category):
            continue
        if type(action) is not str or action not in _SHOWN:
            return False
        if message is None and module is None and lineno == 0:
            break       # the first filter that matches every such warning
    if w.showwarning is not _showwarning or w._showwarnmsg is not (
            _showwarnmsg):
        return False
    impl = w._showwarnmsg_impl
    return impl is _showwarnmsg_impl or (
        type(impl) is _list_append and type(impl.__self__) is list)


cdef bint _quiet_errstate(int watch) except -1:
    """Whether NumPy, as errstate and the warnings filters are now, only
    warns or prints on the flags ``watch``: nothing raises or calls back,
    so stock run on the elements from any point on warns as it does run on
    all of them, and leaves no other partial state."""
    cdef long m
    cdef int mode
    cdef bint warns = False
    if _geterrobj is None:
        return False
    errobj = _geterrobj()
    if type(errobj) is not list or len(<list>errobj) < 2:
        return False
    mask = (<list>errobj)[1]
    if type(mask) is not int:
        return False
    m = mask
    for shift, flag in _MODE_SHIFTS:
        if watch & <int>flag:
            if shift < 0:
                return False
            mode = (m >> <int>shift) & 7
            if mode == 1:
                warns = True
            elif mode != 4:
                return False
    return not warns or _warnings_shown()


# Updates that stock finished after the one pass (for the tests).
cdef Py_ssize_t _stock_finished = 0


def _finished_by_stock():
    """How many updates stock finished from a chunk past the first."""
    return _stock_finished


def _one_pass():
    """Whether a large update would take the one pass now (for the
    tests)."""
    return _quiet_errstate(watched())


cdef class _Part:
    """What stock's ``update_core_cpu`` (and ``WeightDecay.__call__``)
    reads of a parameter, for the elements stock finishes: views of its
    arrays."""
    cdef public object data
    cdef public object grad
    cdef public object device
    cdef public object _loss_scale

    def __init__(self, data, grad, device=None):
        self.data = data
        self.grad = grad
        self.device = device
        self._loss_scale = None

    @property
    def dtype(self):
        return self.data.dtype


cdef inline object _tail(object a, object shape, Py_ssize_t done):
    """The elements of ``a`` from ``done`` on, as a view, where ``a`` is
    an array of the parameter's ``shape``; otherwise ``a``."""
    if type(a) is _ndarray and a.shape == shape:
        return a.reshape(-1)[done:]
    return a


cdef str _launch(int rule, Arrays *A, double *s, int *f, bint in_place,
                 bint plain):
    """Runs the kernel; returns why stock must finish the update, or None.
    ``A.done`` elements are final (0 unless the one pass updated some
    before it met the reason); the rest have their old values."""
    cdef int watch = watched()
    cdef int i, r, nw = 1
    cdef char *w[8]
    cdef double stack[STACK_SAVE]
    cdef char *save = <char *>stack
    cdef char *scratch
    cdef Py_ssize_t nbytes = A.n * (A.bits // 8)
    A.done = 0
    if A.fpe & watch:
        return 'floating-point exception'
    if not _unchanged(A):
        return 'array changed meanwhile'
    w[0] = A.lo[0]
    if in_place:
        for i in range(2, A.count):
            w[nw] = A.lo[i]
            nw += 1
    if nw * nbytes > STACK_SAVE * 8:
        # Too large to save on the stack (a saved copy would cost a pass
        # over fresh memory as large as the arrays written): one pass,
        # chunk by chunk, where stock can finish from the failing chunk on
        # (nothing can raise); otherwise checked chunk by chunk first, then
        # run in place.
        scratch = <char *>PyMem_RawMalloc(cfp_scratch_bytes(nw, A.bits // 8))
        if scratch == NULL:
            return 'out of memory'
        if plain and _quiet_errstate(watch):
            with nogil:
                r = cfp_run_chunks(rule, A.dtype, A.n, A.lo, s, f, nw, w,
                                   A.bits // 8, scratch, watch, &A.done)
        else:
            with nogil:
                r = cfp_check(rule, A.dtype, A.n, A.lo, s, f, nw,
                              A.bits // 8, scratch, watch)
                if r == CFP_DONE:
                    cfp_run_in_place(rule, A.dtype, A.n, A.lo, s, f)
        PyMem_RawFree(scratch)
    elif A.n >= NOGIL_SIZE or A.bits == 16:
        with nogil:
            r = cfp_run(rule, A.dtype, A.n, A.lo, s, f, nw, w, nbytes, save,
                        watch)
    else:
        r = cfp_run(rule, A.dtype, A.n, A.lo, s, f, nw, w, nbytes, save,
                    watch)
    if r == CFP_RAISED:
        return 'floating-point exception'
    if r == CFP_NAN:
        return 'NaN'
    return None


# --------------------------------------------------------------------------
# Parameters, states and the device

cdef object _Parameter = chainer.Parameter
cdef object _Variable = chainer.Variable
cdef object _CpuDevice = _cpu.CpuDevice

# What the compiled updates read of a Parameter and its rule, through the
# attribute caches (_core/_attrs.h): the generic read's result, in a few
# instructions while the class keeps its version.
cdef cfp_attr _get_layout = get_site('_layout')
cdef cfp_attr _get_has_chainerx = get_site('_has_chainerx_array')
cdef cfp_attr _get_grad_valid = get_site('_grad_valid')
cdef cfp_attr _get_grad_var = get_site('_grad_var')
cdef cfp_attr _get_grad = get_site('_grad')
cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _get_node = get_site('_node')
cdef cfp_attr _get_device = get_site('_device')
cdef cfp_attr _get_state = get_site('_state')
cdef cfp_attr _get_hyperparam = get_site('hyperparam')
cdef cfp_attr _get_t = get_site('t')
cdef cfp_attr _update_core_cpu_site = lookup_site('update_core_cpu')

# What stock's _init_states and update_core call on the CPU device at every
# update (its context, a send of each state array) and the lean paths
# skip: only while they are stock's.
cdef StockMethods _cpu_methods = StockMethods(
    _CpuDevice, ('send', 'send_array', 'create_context'))
cdef StockFunctions _device_functions = StockFunctions((
    (chainer, 'using_device'), (chainer, 'get_array_types'),
    (_backend_module, 'get_device'), (_backend, '_convert_arrays'),
    (_cpu, '_array_to_cpu')))


cdef object param_device(object param):
    """``param.device`` of a plain Variable/Parameter (a cached value)."""
    dev = get(param, &_get_device)
    if dev is None:
        return param.device
    return dev


cdef bint stock_cpu_device(object dev) except -1:
    """Whether entering ``chainer.using_device(dev)`` of a CpuDevice, and
    sending arrays to it, are stock's no-ops: neither its methods nor the
    functions stock calls were replaced."""
    return _cpu_methods.found_by(dev) and _device_functions.unchanged()


cdef inline bint _plain(object param):
    """A NumPy Variable/Parameter with standard layout: its ``grad`` and
    ``data`` properties reduce to the attribute reads below."""
    return ((type(param) is _Parameter or type(param) is _Variable)
            and get(param, &_get_layout) is None
            and not get(param, &_get_has_chainerx))


cdef inline object _grad(object param, bint plain):
    """``param.grad``"""
    if plain and get(param, &_get_grad_valid):
        gv = get(param, &_get_grad_var)
        if gv is None:
            return get(param, &_get_grad)
        # ``gv.array``: the gradient Variable the backward engine leaves.
        if _plain(gv):
            return _data(gv, True)
    return param.grad


cdef inline object _data(object param, bint plain):
    """``param.data``"""
    if plain:
        return get(param, &_get_data)[0]
    return param.data


cdef inline void _set_data(object param, object data, bint plain) except *:
    """``param.data = data`` where ``data`` is already param's array:
    the setter only refreshes the node's dtype and shape."""
    if plain:
        node = get(param, &_get_node)
        if node.dtype is data.dtype and node.shape == data.shape:
            return
    param.data = data


cdef inline object _state(object rule, str key):
    st = get(rule, &_get_state)
    if type(st) is not dict:
        return _MISSING
    return (<dict>st).get(key, _MISSING)


# --------------------------------------------------------------------------
# The replacements

cdef class _Kernel:
    """The fused ``update_core_cpu`` of one built-in rule class.

    What every rule does alike is here: the checks, the operands, the launch,
    writing the parameter back, the counters and the fallback. A rule adds
    only what is its own: its state names and its hyperparameters (by name,
    or in an override of :meth:`scalars`), and in :meth:`outputs` and
    :meth:`finish` what its stock method does besides updating arrays in
    place.
    """
    cdef readonly object rule_class
    cdef int row                  # of the kernel table: CFP_SGD, ...
    cdef tuple states             # names, in the kernel's operand order
    cdef str decay                # default scalars(): d and 1 - d first,
    cdef tuple hyperparameters    # then these, each cast to the dtype
    cdef bint in_place            # the kernel writes the states in place
    cdef bint set_data            # stock ends with `param.data -= ...`
    cdef EntryStats stats
    cdef object original          # stock update_core_cpu, given to bind()
    cdef readonly object replacement
    # What stock's update_core_cpu calls and the kernel stands for: the
    # rule's methods and properties, its module's functions. Replaced, they
    # run (stock's method does).
    cdef StockMethods methods
    cdef StockFunctions functions

    def __init__(self, rule_class, int row, tuple states,
                 tuple hyperparameters=(), str decay=None,
                 bint in_place=True, bint set_data=True,
                 tuple methods=('state',), tuple functions=()):
        self.rule_class = rule_class
        self.methods = StockMethods(rule_class, methods) if methods else None
        self.functions = StockFunctions(functions) if functions else None
        self.row = row
        self.states = states
        self.decay = decay
        self.hyperparameters = hyperparameters
        self.in_place = in_place
        self.set_data = set_data
        self.stats = _stats.entry(rule_class.__name__ + '.update_core_cpu')
        self.replacement = _replacement(self)

    cdef object update(self, object rule, object param):
        """Does what stock ``update_core_cpu(rule, param)`` does: in one
        fused pass, or by calling it."""
        cdef Arrays A
        cdef double s[8]
        cdef int f[2]
        if type(rule) is not self.rule_class:
            return self.fall_back('subclass', rule, param)
        if self.methods is not None and not self.methods.found_by(rule):
            return self.fall_back('method replaced', rule, param)
        if self.functions is not None and not self.functions.unchanged():
            return self.fall_back('function replaced', rule, param)
        replaced = stock_replaced()
        if replaced is not None:
            return self.fall_back(replaced, rule, param)
        cdef bint plain = _plain(param)
        grad = _grad(param, plain)
        if grad is None:
            self.stats.fast += 1
            return None
        data = _data(param, plain)
        A.count = 0
        try:
            r = _begin(&A, data, grad)
            if r is None:
                for key in self.states:
                    r = _add(&A, _state(rule, key), self.in_place)
                    if r is not None:
                        break
            if r is None:
                hp = get(rule, &_get_hyperparam)
                try:
                    _chain_begin(hp)
                    r = self.scalars(rule, hp, &A, s, f)
                except Exception:
                    # Stock raises it where it computes that value, perhaps
                    # after updating some arrays.
                    r = 'hyperparameter raises'
                finally:
                    _chain_end()
            if r is not None:
                return self.fall_back(r, rule, param)
            outputs = self.outputs(data, &A)
            r = _launch(self.row, &A, s, f, self.in_place, plain)
            if r is not None:
                if A.done:
                    return self.finish_stock(r, rule, param, data, grad,
                                             A.done, outputs, plain)
                return self.fall_back(r, rule, param)
        finally:
            _release(&A)
        self.stats.fast += 1
        if self.set_data:
            _set_data(param, data, plain)
        self.finish(rule, outputs)
        return None

    cdef object fall_back(self, str reason, object rule, object param):
        self.stats.fallback(reason)
        return self.original(rule, param)

    cdef object finish_stock(self, str reason, object rule, object param,
                             object data, object grad, Py_ssize_t done,
                             object outputs, bint plain):
        """Stock's ``update_core_cpu`` on the elements from ``done`` on,
        those before it being final: stock, on all of them, computes them
        alike and acts on no flag before (see _quiet_errstate)."""
        global _stock_finished
        _stock_finished += 1
        self.stats.fallback(reason)
        shape = data.shape
        state = rule._state
        rest = {key: _tail(value, shape, done)
                for key, value in state.items()}
        rule._state = rest
        try:
            self.original(rule, _Part(_tail(data, shape, done),
                                      _tail(grad, shape, done)))
        finally:
            rule._state = state
        if outputs is not None:
            # Stock's new states: the kernel's, then stock's from `done`.
            for key, array in zip(self.states, outputs):
                array.reshape(-1)[done:] = rest[key]
            self.finish(rule, outputs)
        if self.set_data:
            _set_data(param, data, plain)
        return None

    cdef str scalars(self, object rule, object hp, Arrays *A, double *s,
                     int *f):
        """Fills the kernel's scalars ``s`` and flags ``f`` as stock's NumPy
        operations would cast them, and registers any further operands;
        returns why not, or None."""
        cdef int i = 0
        if self.decay is not None:
            d = _hp(hp, self.decay)
            if not (_cast(A, d, A.bits, &s[0])
                    and _cast(A, 1 - d, A.bits, &s[1])):
                return 'hyperparameter'
            i = 2
        for name in self.hyperparameters:
            if not _cast(A, _hp(hp, name), A.bits, &s[i]):
                return 'hyperparameter'
            i += 1
        return None

    cdef object outputs(self, object data, Arrays *A):
        """Registers the arrays the kernel writes besides its operands;
        returns them for :meth:`finish`."""
        return None

    cdef object finish(self, object rule, object outputs):
        """What stock does after writing the parameter."""
        return None


def _replacement(_Kernel kernel):
    """The drop-in for ``kernel.rule_class.update_core_cpu``."""
    def update_core_cpu(self, param):
        return kernel.update(self, param)
    return update_core_cpu


cdef class _NesterovAG(_Kernel):

    cdef str scalars(self, object rule, object hp, Arrays *A, double *s,
                     int *f):
        lr_o = _hp(hp, 'lr')
        mom_o = _hp(hp, 'momentum')
        if not (_cast(A, lr_o, A.bits, &s[0])
                and _cast(A, mom_o, A.bits, &s[1])
                and _cast(A, mom_o * mom_o, A.bits, &s[2])
                and _cast(A, (1 + mom_o) * lr_o, A.bits, &s[3])):
            return 'hyperparameter'
        return None


cdef object _alpha_t(object rule, object hp):
    """AdamRule.alpha_t: ``hp.alpha * math.sqrt(fix2) / fix1``."""
    cdef double a, b1, b2, t, f1, f2
    alpha = _hp(hp, 'alpha')
    beta1 = _hp(hp, 'beta1')
    beta2 = _hp(hp, 'beta2')
    tt = get(rule, &_get_t)
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


cdef class _Adam(_Kernel):
    """Adam and its variants: amsgrad adds the state vhat."""

    cdef str scalars(self, object rule, object hp, Arrays *A, double *s,
                     int *f):
        cdef int interm
        cdef bint ams = bool(_hp(hp, 'amsgrad'))
        cdef bint bound = bool(_hp(hp, 'adabound'))
        cdef bint a_is_one
        if ams:
            r = _add(A, _state(rule, 'vhat'), True)
            if r is not None:
                return r
        else:
            A.lo[4] = NULL       # the kernel's vhat: none
        tt = get(rule, &_get_t)
        if type(tt) is not int or tt == 0:
            return 't'
        if bound and 'initial_alpha' not in rule.__dict__:
            return 'initial_alpha'
        interm = 64 if A.bits == 64 else 32
        eps_o = _hp(hp, 'eps')
        eta_o = _hp(hp, 'eta')
        a_o = 1.0 - eta_o * _hp(hp, 'weight_decay_rate')
        a_is_one = bool(a_o == 1)
        if not (_cast(A, 1.0 - _hp(hp, 'beta1'), interm, &s[0])
                and _cast(A, 1.0 - _hp(hp, 'beta2'), interm, &s[1])
                and _cast(A, _alpha_t(rule, hp), interm, &s[2])
                and _cast(A, eps_o, interm, &s[3])
                and _cast(A, -eta_o, interm, &s[7])
                and (a_is_one or _cast(A, a_o, A.bits, &s[6]))):
            return 'hyperparameter'
        if s[3] == 0 and eps_o != 0:
            return 'eps underflows'     # stock raises ValueError
        if a_is_one:
            s[6] = 1
        s[4] = s[5] = 0         # lower, upper: passed even when unused
        if bound:
            lo_o, up_o = rule.bounds
            if not (_cast(A, lo_o, interm, &s[4])
                    and _cast(A, up_o, interm, &s[5])):
                return 'hyperparameter'
        f[0] = bound
        f[1] = a_is_one
        return None


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


cdef class _RMSprop(_Kernel):

    cdef str scalars(self, object rule, object hp, Arrays *A, double *s,
                     int *f):
        eps_o = _hp(hp, 'eps')
        alpha_o = _hp(hp, 'alpha')
        if not (_eps_as_dtype(eps_o, A.bits, &s[2])
                and _cast(A, alpha_o, A.bits, &s[0])
                and _cast(A, 1 - alpha_o, A.bits, &s[1])
                and _cast(A, _hp(hp, 'lr'), A.bits, &s[3])):
            return 'hyperparameter'
        if eps_o != 0 and s[2] == 0:
            return 'eps underflows'     # stock raises ValueError
        f[0] = bool(_hp(hp, 'eps_inside_sqrt'))
        return None


cdef class _SMORMS3(_Kernel):
    """Stock replaces the three states with new arrays."""

    cdef object outputs(self, object data, Arrays *A):
        dt = data.dtype
        outputs = (empty(dt, cfp_nd(data), cfp_dims(data)),
                   empty(dt, cfp_nd(data), cfp_dims(data)),
                   empty(dt, cfp_nd(data), cfp_dims(data)))
        for i in range(3):
            A.lo[5 + i] = cfp_data(outputs[i])
        return outputs

    cdef object finish(self, object rule, object outputs):
        state = rule.state
        for key, array in zip(self.states, outputs):
            state[key] = array
        return None


cdef class _MSVAG(_Kernel):

    cdef str scalars(self, object rule, object hp, Arrays *A, double *s,
                     int *f):
        beta = _hp(hp, 'beta')
        bp = rule.beta_power
        rho_o = (((1.0 - beta) ** 2) * (1.0 - bp ** 2) /
                 (((1.0 - bp) ** 2) * (1.0 - beta ** 2)))
        rho_o = _pymin(rho_o, 0.9999)
        if not (_cast(A, 1 - beta, A.bits, &s[0])
                and _cast(A, 1 - bp, A.bits, &s[1])
                and _cast(A, 1 - rho_o, A.bits, &s[2])
                and _cast(A, rho_o, A.bits, &s[3])
                and _cast(A, _hp(hp, 'eta'), A.bits, &s[4])
                and _cast(A, _hp(hp, 'lr'), A.bits, &s[5])
                and _cast(A, _hp(hp, 'weight_decay_rate'), A.bits, &s[6])):
            return 'hyperparameter'
        return None

    cdef object finish(self, object rule, object outputs):
        rule.beta_power *= _hp(rule.hyperparam, 'beta')
        return None


# One per built-in rule class, in the order of the report.
cdef tuple _KERNELS = (
    _Kernel(sgd.SGDRule, CFP_SGD, (), ('lr',), methods=()),
    _Kernel(momentum_sgd.MomentumSGDRule, CFP_MOMENTUM, ('v',),
            ('lr', 'momentum')),
    _Kernel(corrected_momentum_sgd.CorrectedMomentumSGDRule, CFP_CORRECTED,
            ('v',), ('lr', 'momentum')),
    _NesterovAG(nesterov_ag.NesterovAGRule, CFP_NESTEROV, ('v',)),
    _Adam(adam.AdamRule, CFP_ADAM, ('m', 'v'), set_data=False,
          methods=('state', '_check_eps', 'alpha_t'),
          functions=((adam, '_get_intermediate_dtype'),
                     (adam, '_inplace_axpby'), (adam, '_learning_rate'))),
    _RMSprop(rmsprop.RMSpropRule, CFP_RMSPROP, ('ms',)),
    _Kernel(rmsprop_graves.RMSpropGravesRule, CFP_GRAVES, ('n', 'g', 'delta'),
            ('momentum', 'lr', 'eps'), decay='alpha'),
    _Kernel(ada_grad.AdaGradRule, CFP_ADAGRAD, ('h',), ('lr', 'eps')),
    _Kernel(ada_delta.AdaDeltaRule, CFP_ADADELTA, ('msg', 'msdx'), ('eps',),
            decay='rho'),
    _SMORMS3(smorms3.SMORMS3Rule, CFP_SMORMS3, ('mem', 'g', 'g2'),
             ('lr', 'eps'), in_place=False),
    _MSVAG(msvag.MSVAGRule, CFP_MSVAG, ('m', 'v')),
)

cdef dict _kernel_of = {k.rule_class: k for k in _KERNELS}


cdef object update_core_cpu(object rule, object param):
    """``rule.update_core_cpu(param)``: the kernel itself where the rule's
    class has its drop-in and the rule does not shadow it."""
    k = _kernel_of.get(type(rule))
    if k is not None and method_is_at(rule, &_update_core_cpu_site,
                                      (<_Kernel>k).replacement):
        return (<_Kernel>k).update(rule, param)
    return rule.update_core_cpu(param)


# --------------------------------------------------------------------------
# Optimizer hooks

cdef class _WeightDecay:
    """The fused ``WeightDecay.__call__``: stock's ``g += rate * p`` in one
    pass, without the product's temporary array."""
    cdef EntryStats stats
    cdef object original          # stock __call__, given to bind()
    cdef readonly object replacement

    def __init__(self):
        self.stats = _stats.entry('WeightDecay.__call__')
        self.replacement = _hook_replacement(self)

    cdef object call(self, object hook, object rule, object param):
        """Does what stock ``WeightDecay.__call__(hook, rule, param)``
        does: in one fused pass, or by calling it."""
        cdef Arrays A
        cdef double s[1]
        cdef int f[1]
        if not _plain(param):
            return self.fall_back('not a plain Parameter', hook, rule, param)
        replaced = stock_replaced()
        if replaced is not None:
            return self.fall_back(replaced, hook, rule, param)
        data = _data(param, True)
        grad = _grad(param, True)
        if data is None or grad is None:
            self.stats.fast += 1
            return None
        dev = param_device(param)
        if type(dev) is not _CpuDevice or not stock_cpu_device(dev):
            return self.fall_back('device', hook, rule, param)
        if param._loss_scale is not None:
            return self.fall_back('loss scaling', hook, rule, param)
        A.count = 0
        try:
            r = _begin(&A, grad, data)
            if r is None:
                try:
                    rate = hook.rate
                except Exception:
                    r = 'hyperparameter raises'     # stock raises it
                else:
                    if not _cast(&A, rate, A.bits, &s[0]):
                        r = 'hyperparameter'
            if r is None:
                r = _launch(CFP_WDECAY, &A, s, f, False, True)
                if r is not None and A.done:
                    return self.finish_stock(r, hook, rule, data, grad, dev,
                                             A.done)
            if r is not None:
                return self.fall_back(r, hook, rule, param)
        finally:
            _release(&A)
        self.stats.fast += 1
        return None

    cdef object finish_stock(self, str reason, object hook, object rule,
                             object data, object grad, object dev,
                             Py_ssize_t done):
        """Stock's ``__call__`` on the elements from ``done`` on, those
        before it being final (as _Kernel.finish_stock)."""
        global _stock_finished
        _stock_finished += 1
        self.stats.fallback(reason)
        shape = data.shape
        return self.original(hook, rule, _Part(
            _tail(data, shape, done), _tail(grad, shape, done), dev))

    cdef object fall_back(self, str reason, object hook, object rule,
                          object param):
        self.stats.fallback(reason)
        return self.original(hook, rule, param)


def _hook_replacement(_WeightDecay kernel):
    """The drop-in for ``WeightDecay.__call__``."""
    def __call__(self, rule, param):
        return kernel.call(self, rule, param)
    return __call__


cdef _WeightDecay _weight_decay = _WeightDecay()
cdef object _WeightDecayHook = optimizer_hooks.WeightDecay

TARGETS = tuple((k.rule_class, 'update_core_cpu') for k in _KERNELS) + (
    (_WeightDecayHook, '__call__'),)


def bind(owner, attribute, original):
    """Records ``original``, the stock ``owner.attribute`` (the first one
    given wins); returns the replacement."""
    if owner is _WeightDecayHook and attribute == '__call__':
        if _weight_decay.original is None:
            _weight_decay.original = original
            _functools.update_wrapper(_weight_decay.replacement, original)
        return _weight_decay.replacement
    cdef _Kernel kernel = (_kernel_of.get(owner)
                           if attribute == 'update_core_cpu' else None)
    if kernel is None:
        raise KeyError((owner, attribute))
    if kernel.original is None:
        kernel.original = original
        _functools.update_wrapper(kernel.replacement, original)
    return kernel.replacement


# Test helpers: NumPy's float16 conversions as the kernels do them.
def _f32_to_f16_bits(float[::1] src, unsigned short[::1] dst):
    cdef Py_ssize_t i
    if dst.shape[0] < src.shape[0]:
        raise ValueError('dst is shorter than src')
    for i in range(src.shape[0]):
        dst[i] = cfp_f2h(src[i])


def _f32_to_f16_flags(float x):
    """``(overflow, underflow)``: the flags converting ``x`` raises."""
    clear_flags(FE_OVERFLOW | FE_UNDERFLOW)
    cfp_f2h(x)
    return (bool(fetestexcept(FE_OVERFLOW)),
            bool(fetestexcept(FE_UNDERFLOW)))


def _f64_to_f16(double x):
    """``(bits, underflow)`` of a hyperparameter cast to float16."""
    cdef int under
    cdef uint16_t h = cfp_d2h(x, &under)
    return h, bool(under)


def _f16_bits_to_f32(unsigned short[::1] src, float[::1] dst):
    cdef Py_ssize_t i
    if dst.shape[0] < src.shape[0]:
        raise ValueError('dst is shorter than src')
    for i in range(src.shape[0]):
        dst[i] = cfp_h2f(src[i])
