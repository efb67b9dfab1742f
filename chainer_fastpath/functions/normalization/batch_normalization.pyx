# cython: boundscheck=True, wraparound=True
"""Compiled ``BatchNormalization`` and ``FixedBatchNormalization``, their
backwards and their gradient nodes' forwards, on NumPy arrays (iDeep
unavailable, no cuDNN: ``GeneralBatchNormalizationImpl`` and the generic
branch of the fixed forward).

Every value is computed by stock's NumPy calls in stock's order and dtypes:
``x.mean`` and ``x.var`` as ``numpy.core._methods`` makes them (NumPy's
pairwise sums, the same divisions), the elementwise expressions as stock
writes them. They run between ``quiet_begin`` and ``quiet_end``: where NumPy
would act on a floating-point exception, or a call raises, the node's own
code runs. Nothing is changed before that is known: the running averages
are updated on copies, written back last.

Where ``x`` is C-contiguous with the channels on axis 1 and every array of
one float type, the passes over ``x`` and ``gy`` are the kernels of
``_batch_norm.h``: the same operations and NumPy's own add loop on the same
rows, without the temporaries.
"""
import numpy

from chainer import memory_layouts
from chainer.functions.normalization import batch_normalization as bn

from chainer_fastpath._core._attrs cimport retain_inputs, retain_outputs
from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, all_flags, buffer_size, clear_flags, fetestexcept, quiet_begin,
    quiet_end)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_HALF,
    CFP_NPY_WRITEABLE, builtin_typenum, canonical, cfp_c_aligned, cfp_data,
    cfp_dims, cfp_flags, cfp_nd, cfp_strides, cfp_typenum, new_shaped,
    numpy_struct_matches)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)
from chainer_fastpath._core._retained cimport (
    requires_grad_of, retained_inputs)
from chainer_fastpath._core._ufunc_loop cimport Reduction, UfuncLoop
from libc.stdlib cimport free, malloc

cdef extern from "_batch_norm.h" nogil:
    ctypedef void (*cfp_bn_loop)(char **args, const Py_ssize_t *dimensions,
                                 const Py_ssize_t *steps, void *data)
    void cfp_bn_sums_f(cfp_bn_loop add, void *data, const float *x,
                       Py_ssize_t n, Py_ssize_t c, Py_ssize_t hw, float *sums)
    void cfp_bn_sums_d(cfp_bn_loop add, void *data, const double *x,
                       Py_ssize_t n, Py_ssize_t c, Py_ssize_t hw,
                       double *sums)
    void cfp_bn_sq_dev_sums_f(cfp_bn_loop add, void *data, const float *x,
                              const float *mean, Py_ssize_t n, Py_ssize_t c,
                              Py_ssize_t hw, float *sums, float *scratch)
    void cfp_bn_sq_dev_sums_d(cfp_bn_loop add, void *data, const double *x,
                              const double *mean, Py_ssize_t n, Py_ssize_t c,
                              Py_ssize_t hw, double *sums, double *scratch)
    void cfp_bn_apply_f(const float *x, const float *mean,
                        const float *inv_std, const float *gamma,
                        const float *beta, Py_ssize_t n, Py_ssize_t c,
                        Py_ssize_t hw, float *y)
    void cfp_bn_apply_d(const double *x, const double *mean,
                        const double *inv_std, const double *gamma,
                        const double *beta, Py_ssize_t n, Py_ssize_t c,
                        Py_ssize_t hw, double *y)
    void cfp_bn_grad_sums_f(cfp_bn_loop add, void *data, const float *x,
                            const float *gy, const float *mean,
                            const float *inv_std, Py_ssize_t n, Py_ssize_t c,
                            Py_ssize_t hw, float *ggamma, float *gbeta,
                            float *scratch)
    void cfp_bn_grad_sums_d(cfp_bn_loop add, void *data, const double *x,
                            const double *gy, const double *mean,
                            const double *inv_std, Py_ssize_t n,
                            Py_ssize_t c, Py_ssize_t hw, double *ggamma,
                            double *gbeta, double *scratch)
    void cfp_bn_grad_x_f(const float *x, const float *gy, const float *mean,
                         const float *inv_std, const float *gamma,
                         const float *ggamma, const float *gbeta, float inv_m,
                         Py_ssize_t n, Py_ssize_t c, Py_ssize_t hw, float *gx)
    void cfp_bn_grad_x_d(const double *x, const double *gy,
                         const double *mean, const double *inv_std,
                         const double *gamma, const double *ggamma,
                         const double *gbeta, double inv_m, Py_ssize_t n,
                         Py_ssize_t c, Py_ssize_t hw, double *gx)

cdef type _ndarray = numpy.ndarray
cdef object _promote_types = numpy.promote_types
cdef object _reciprocal = numpy.reciprocal
cdef object _sqrt = numpy.sqrt
cdef object _copyto = numpy.copyto
cdef object _intp = numpy.intp
cdef object _true_divide = numpy.true_divide
cdef object _np_multiply = numpy.multiply
cdef object _np_maximum = numpy.maximum
# What ndarray.sum and numpy.core._methods call, without the Python
# function around them.
cdef object _add_reduce = numpy.add.reduce
cdef object _empty_like = numpy.empty_like
cdef object _ascontiguousarray = numpy.ascontiguousarray
cdef object _may_share_memory = getattr(
    numpy.may_share_memory, '_implementation', numpy.may_share_memory)
cdef object _SLICE = slice(None)
cdef Reduction _add = Reduction(numpy.add)

# What stock's forwards read from their module per call: the classes its
# ``_impl_selector`` and ``FixedBatchNormalization.forward`` build, and
# their methods (while any is replaced, the node's code runs).
cdef dict _bn_globals = bn.__dict__
cdef object _impl_selector = bn._impl_selector
cdef type _General = bn.GeneralBatchNormalizationImpl
cdef type _BNMode = bn._BNMode
cdef StockMethods _general_methods = StockMethods(
    _General, ('forward', 'get_mean_and_var', 'backward',
               'get_ggamma_and_gbeta'))
cdef StockMethods _mode_methods = StockMethods(
    _BNMode, ('__init__', 'can_use_cudnn', 'can_use_ideep'))


cdef bint _classes_stock() except -1:
    """Whether stock's forwards would build and call the classes as they
    were read here."""
    return (_bn_globals.get('GeneralBatchNormalizationImpl') is _General
            and _bn_globals.get('_BNMode') is _BNMode
            and _general_methods.on_class() and _mode_methods.on_class())


cdef bint _float(object a) except -1:
    """Whether ``a`` is an ndarray of exactly NumPy's native float16,
    float32 or float64."""
    if type(a) is not _ndarray:
        return False
    cdef int num = builtin_typenum(a)
    return num == CFP_NPY_HALF or num == CFP_NPY_FLOAT or num == CFP_NPY_DOUBLE


cdef tuple _axes(object axis, object x, object gamma):
    """``(axis, key_axis, expander)`` as stock's forwards compute them from
    the node's ``axis`` (None or a tuple) for ``x`` and ``gamma`` (no
    layout), calling the module's ``_compute_axis`` and
    ``_compute_key_axis`` as they do; None where stock would meet anything
    unusual (``_expander``)."""
    if axis is not None and type(axis) is not tuple:
        return None
    cdef Py_ssize_t ndim = x.ndim
    axis = _bn_globals['_compute_axis'](ndim, gamma.ndim, axis)
    key_axis = _bn_globals['_compute_key_axis'](ndim, gamma.ndim, axis)
    if not _in_order(axis, ndim):
        return None
    expected = _key_axis(axis, ndim)
    if key_axis != expected:
        return None
    expander = _expander(expected, x, gamma)
    if expander is None:
        return None
    return axis, key_axis, expander


cdef tuple _key_axis(tuple axis, Py_ssize_t ndim):
    # bn._compute_key_axis for an axis ``_in_order``.
    cdef Py_ssize_t i
    return tuple([i for i in range(ndim) if i not in axis])


cdef tuple _expander(tuple key_axis, object x, object gamma):
    """The ``expander`` stock's forwards make of ``key_axis``; None where
    there is no channel axis (statistics of 0-d) or the channel shape is
    not ``gamma``'s."""
    if not key_axis:
        return None
    shape = x.shape
    if gamma.shape != tuple([shape[k] for k in key_axis]):
        return None
    expander = [None] * len(shape)
    for k in key_axis:
        expander[k] = _SLICE
    return tuple(expander)


cdef bint _in_order(object axis, Py_ssize_t ndim) except -1:
    """Whether ``axis`` is a tuple of ints, ascending, within ``ndim``
    dimensions."""
    if type(axis) is not tuple:
        return False
    cdef Py_ssize_t last = -1
    for a in <tuple>axis:
        if type(a) is not int or not (last < a < ndim):
            return False
        last = a
    return True


cdef object _x_hat(object x, object mean, object inv_std):
    # bn._x_hat
    x_mu = x - mean
    x_mu *= inv_std
    return x_mu


cdef object _count(object x, tuple axis):
    # numpy.core._methods._count_reduce_items, ``where`` True.
    cdef Py_ssize_t items = 1
    shape = x.shape
    for a in axis:
        items *= <Py_ssize_t>shape[a]
    return _intp(items)


cdef tuple _mean_and_var(object x, tuple axis, object dtype):
    """``(x.mean(axis=axis, dtype=dtype), x.var(axis=axis, dtype=dtype))``
    as ``numpy.core._methods._mean`` and ``_var`` compute them, for an
    ``x`` of at least one element and an ``axis`` that leaves a
    dimension."""
    rcount = _count(x, axis)
    mean = _add_reduce(x, axis, dtype, None, False)
    mean = _true_divide(mean, rcount, out=mean, casting='unsafe',
                        subok=False)
    arrmean = _add_reduce(x, axis, dtype, None, True)
    arrmean = _true_divide(arrmean, rcount, out=arrmean, casting='unsafe',
                           subok=False)
    d = x - arrmean
    d = _np_multiply(d, d, out=d)
    var = _add_reduce(d, axis, dtype, None, False)
    var = _true_divide(var, _np_maximum(rcount - 0, 0), out=var,
                       casting='unsafe', subok=False)
    return mean, var


cdef object _apply_bn_fwd(object x, object mean, object inv_std,
                          object gamma, object beta):
    # bn._apply_bn_fwd on NumPy arrays.
    y = _x_hat(x, mean, inv_std)
    y = y * gamma
    y += beta
    return y.astype(x.dtype)


ctypedef tuple (*values_t)(tuple args, int *kernel_raised)


cdef tuple _quietly(values_t values, tuple args):
    """``values(args, &flags)`` with NumPy acting on no floating-point
    exception; None where a call raised, or raised a flag NumPy would act
    on (errstate's recorder sees NumPy's calls, ``flags`` collects what the
    kernels raised): the node's own code then runs, and raises or acts from
    stock's line."""
    cdef int raised = 0, kernel_raised = 0
    saved = quiet_begin()
    try:
        out = values(args, &kernel_raised)
    except Exception:
        return None
    finally:
        raised = quiet_end(saved)
    if acts(raised | kernel_raised):
        return None
    return out


# -- The kernels of _batch_norm.h ----------------------------------------

ctypedef struct _Blocks:
    # x's memory as n blocks of c rows of hw items, of float type
    # ``typenum``: C-contiguous (channels first), or n * hw blocks of c
    # items (hw 1) where the channels are the last axis in memory.
    Py_ssize_t n, c, hw
    int typenum


cdef bint _blocks(object x, tuple axis, bint sums, _Blocks *b) except -1:
    """Whether ``x`` (an ndarray of ``_float``) can go to the kernels for
    statistics over ``axis``, its channels on axis 1, and, with ``sums``,
    whether NumPy's reduction of it runs the rows the kernels run (more
    than one channel: NumPy merges a single one into one row; rows of
    channels first no longer than NumPy's buffer, which splits them) and
    its add loop was found. Sets ``b``."""
    if not canonical(x):
        return False
    cdef int typenum = cfp_typenum(x)
    cdef int nd = cfp_nd(x)
    if typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE:
        return False
    if nd < 2 or len(axis) != nd - 1 or axis[0] != 0:
        return False
    cdef Py_ssize_t *dims = cfp_dims(x)
    cdef Py_ssize_t k, hw = 1
    for k in range(2, nd):
        if axis[k - 1] != k:
            return False
        hw *= dims[k]
    if dims[0] * dims[1] * hw == 0:
        return False
    b.typenum = typenum
    b.c = dims[1]
    if sums and (b.c < 2 or _add.for_type(typenum) is None):
        return False
    if cfp_c_aligned(x):
        b.n = dims[0]
        b.hw = hw
        return not sums or hw <= buffer_size()
    # Of channels last, only arrays without unit axes: NumPy's outputs
    # give those strides of their own choosing.
    if cfp_flags(x) & CFP_NPY_ALIGNED and _channels_last(x):
        b.n = dims[0] * hw
        b.hw = 1
        return True
    return False


cdef bint _channels_last(object x):
    # Whether x.transpose(0, 2, ..., 1) is C-contiguous (the layout of a
    # convolution's output) and x has no unit axis.
    cdef int nd = cfp_nd(x), k
    cdef Py_ssize_t *dims = cfp_dims(x)
    cdef Py_ssize_t *strides = cfp_strides(x)
    cdef Py_ssize_t expected = 4 if cfp_typenum(x) == CFP_NPY_FLOAT else 8
    for k in [1] + list(range(nd - 1, 1, -1)) + [0]:
        if dims[k] == 1 or strides[k] != expected:
            return False
        expected *= dims[k]
    return True


cdef bint _like(object a, object x, _Blocks *b) except -1:
    """Whether ``a`` is an ndarray the kernels can read beside ``x``: of its
    type, and of shape (c,) and C-contiguous (``x`` None), or of ``x``'s
    shape and strides."""
    if (type(a) is not _ndarray or not canonical(a)
            or not cfp_flags(a) & CFP_NPY_ALIGNED
            or cfp_typenum(a) != b.typenum):
        return False
    if x is None:
        return (cfp_nd(a) == 1 and cfp_dims(a)[0] == b.c
                and cfp_c_aligned(a))
    cdef int nd = cfp_nd(x), k
    if cfp_nd(a) != nd:
        return False
    for k in range(nd):
        if (cfp_dims(a)[k] != cfp_dims(x)[k]
                or cfp_strides(a)[k] != cfp_strides(x)[k]):
            return False
    return True


cdef bint _has_nan(object a, _Blocks *b) except -1:
    # Whether the (c,) array ``a`` of the kernels' type holds a NaN.
    cdef Py_ssize_t k
    cdef const float *f = <const float *>cfp_data(a)
    cdef const double *d = <const double *>cfp_data(a)
    for k in range(b.c):
        if b.typenum == CFP_NPY_FLOAT:
            if f[k] != f[k]:
                return True
        elif d[k] != d[k]:
            return True
    return False


cdef bint _nan_free(tuple channels, _Blocks *b) except -1:
    """Whether no (c,) array of ``channels`` holds a NaN. Of two NaNs, which
    one a product or a sum keeps is the choice of the NumPy loop that makes
    it (its SIMD code may take the operands the other way round, and does
    for two arrays): the kernels run only where no operation meets two.
    An operand per channel without NaN, beside an x without NaN (a NaN in
    x makes its channel's mean NaN) or a gy without NaN (a NaN in gy makes
    its channel's gbeta NaN), leaves each operation at most one."""
    for a in channels:
        if _has_nan(a, b):
            return False
    return True


def kernel_blocks(x, axis):
    """``(n, c, hw)``, the blocks the kernels see the ndarray ``x`` as for
    statistics over ``axis`` (a tuple), or None where NumPy's calls compute
    them; for the tests."""
    cdef _Blocks b
    if (type(x) is not _ndarray or not numpy_struct_matches()
            or not _blocks(x, axis, True, &b)):
        return None
    return b.n, b.c, b.hw


cdef UfuncLoop _add_loop(_Blocks *b):
    # NumPy's add loop of x's type, which _blocks with sums found.
    return _add.for_type(b.typenum)


cdef object _new_sums(object x, _Blocks *b):
    # An uninitialized (c,) array of x's dtype; the kernels clear it.
    sums = new_shaped(x, 1, &b.c)
    if sums is None:
        raise MemoryError
    return sums


cdef object _kernel_sums(object x, _Blocks *b, int *raised):
    # add.reduce(x, axis)
    cdef UfuncLoop loop = _add_loop(b)
    sums = _new_sums(x, b)
    clear_flags(all_flags())
    if b.typenum == CFP_NPY_FLOAT:
        cfp_bn_sums_f(<cfp_bn_loop>loop.function, loop.data,
                      <float *>cfp_data(x), b.n, b.c, b.hw,
                      <float *>cfp_data(sums))
    else:
        cfp_bn_sums_d(<cfp_bn_loop>loop.function, loop.data,
                      <double *>cfp_data(x), b.n, b.c, b.hw,
                      <double *>cfp_data(sums))
    raised[0] |= fetestexcept(all_flags())
    return sums


cdef void *_scratch(_Blocks *b) except NULL:
    # A block of c * hw items of x's type.
    cdef void *p = malloc(b.c * b.hw * (
        4 if b.typenum == CFP_NPY_FLOAT else 8))
    if p == NULL:
        raise MemoryError
    return p


cdef object _kernel_sq_dev_sums(object x, object mean, _Blocks *b,
                                int *raised):
    # add.reduce((x - mean) ** 2, axis), as d = x - mean; d * d
    cdef UfuncLoop loop = _add_loop(b)
    sums = _new_sums(x, b)
    cdef void *scratch = _scratch(b)
    clear_flags(all_flags())
    if b.typenum == CFP_NPY_FLOAT:
        cfp_bn_sq_dev_sums_f(<cfp_bn_loop>loop.function, loop.data,
                             <float *>cfp_data(x), <float *>cfp_data(mean),
                             b.n, b.c, b.hw, <float *>cfp_data(sums),
                             <float *>scratch)
    else:
        cfp_bn_sq_dev_sums_d(<cfp_bn_loop>loop.function, loop.data,
                             <double *>cfp_data(x), <double *>cfp_data(mean),
                             b.n, b.c, b.hw, <double *>cfp_data(sums),
                             <double *>scratch)
    raised[0] |= fetestexcept(all_flags())
    free(scratch)
    return sums


cdef object _kernel_apply(object x, object mean, object inv_std,
                          object gamma, object beta, _Blocks *b, int *raised):
    # _apply_bn_fwd(x, mean, inv_std, gamma, beta), every operand expanded
    y = _empty_like(x)     # x's layout, as the ufuncs' outputs
    clear_flags(all_flags())
    if b.typenum == CFP_NPY_FLOAT:
        cfp_bn_apply_f(<float *>cfp_data(x), <float *>cfp_data(mean),
                       <float *>cfp_data(inv_std), <float *>cfp_data(gamma),
                       <float *>cfp_data(beta), b.n, b.c, b.hw,
                       <float *>cfp_data(y))
    else:
        cfp_bn_apply_d(<double *>cfp_data(x), <double *>cfp_data(mean),
                       <double *>cfp_data(inv_std),
                       <double *>cfp_data(gamma), <double *>cfp_data(beta),
                       b.n, b.c, b.hw, <double *>cfp_data(y))
    raised[0] |= fetestexcept(all_flags())
    return y


cdef tuple _kernel_grads(object x, object gamma, object gy, object mean,
                         object inv_std, double inv_m, _Blocks *b,
                         int *raised):
    # _bn_grads: gx, ggamma, gbeta; None where an operation could meet two
    # NaNs (_nan_free): NumPy's calls then run.
    if not _nan_free((mean, inv_std, gamma), b):
        return None
    cdef UfuncLoop loop = _add_loop(b)
    ggamma = _new_sums(x, b)
    gbeta = _new_sums(x, b)
    cdef void *scratch = _scratch(b)
    clear_flags(all_flags())
    if b.typenum == CFP_NPY_FLOAT:
        cfp_bn_grad_sums_f(<cfp_bn_loop>loop.function, loop.data,
                           <float *>cfp_data(x), <float *>cfp_data(gy),
                           <float *>cfp_data(mean),
                           <float *>cfp_data(inv_std), b.n, b.c, b.hw,
                           <float *>cfp_data(ggamma),
                           <float *>cfp_data(gbeta), <float *>scratch)
    else:
        cfp_bn_grad_sums_d(<cfp_bn_loop>loop.function, loop.data,
                           <double *>cfp_data(x), <double *>cfp_data(gy),
                           <double *>cfp_data(mean),
                           <double *>cfp_data(inv_std), b.n, b.c, b.hw,
                           <double *>cfp_data(ggamma),
                           <double *>cfp_data(gbeta), <double *>scratch)
    raised[0] |= fetestexcept(all_flags())
    free(scratch)
    if (not _nan_free((ggamma, gbeta), b)
            or not _products_nan_free(gamma, inv_std, b)):
        return None
    gx = _empty_like(x)
    clear_flags(all_flags())
    if b.typenum == CFP_NPY_FLOAT:
        cfp_bn_grad_x_f(<float *>cfp_data(x), <float *>cfp_data(gy),
                        <float *>cfp_data(mean), <float *>cfp_data(inv_std),
                        <float *>cfp_data(gamma), <float *>cfp_data(ggamma),
                        <float *>cfp_data(gbeta), <float>inv_m, b.n, b.c,
                        b.hw, <float *>cfp_data(gx))
    else:
        cfp_bn_grad_x_d(<double *>cfp_data(x), <double *>cfp_data(gy),
                        <double *>cfp_data(mean), <double *>cfp_data(inv_std),
                        <double *>cfp_data(gamma), <double *>cfp_data(ggamma),
                        <double *>cfp_data(gbeta), inv_m, b.n, b.c, b.hw,
                        <double *>cfp_data(gx))
    raised[0] |= fetestexcept(all_flags())
    return gx, ggamma, gbeta


cdef bint _products_nan_free(object gamma, object inv_std,
                             _Blocks *b) except -1:
    # Whether no gamma * inv_std (gx's factor) is 0 * inf, both NaN-free;
    # compared, not multiplied: no flag raised.
    cdef Py_ssize_t k
    cdef double g, s
    for k in range(b.c):
        if b.typenum == CFP_NPY_FLOAT:
            g = (<const float *>cfp_data(gamma))[k]
            s = (<const float *>cfp_data(inv_std))[k]
        else:
            g = (<const double *>cfp_data(gamma))[k]
            s = (<const double *>cfp_data(inv_std))[k]
        if (g == 0 and s - s != 0) or (s == 0 and g - g != 0):
            return False
    return True


# -- BatchNormalization --------------------------------------------------

cdef tuple _train_values(tuple args, int *kernel_raised):
    # GeneralBatchNormalizationImpl.forward on NumPy arrays: y, mean, var,
    # inv_std, and the new running averages (copies, or None).
    x, gamma, beta, axis, expander, eps, decay, running_mean, running_var = (
        args)
    cdef Py_ssize_t m
    cdef _Blocks blocks
    interm_dtype = _promote_types(x.dtype, gamma.dtype)
    mean = y = None
    if (_blocks(x, axis, True, &blocks) and _like(gamma, None, &blocks)
            and _like(beta, None, &blocks)):
        # _mean_and_var's values: one sum serves as both of its means.
        rcount = _count(x, axis)
        mean = _kernel_sums(x, &blocks, kernel_raised)
        mean = _true_divide(mean, rcount, out=mean, casting='unsafe',
                            subok=False)
        if _has_nan(mean, &blocks):
            mean = None     # a NaN in x: _nan_free's rule
    if mean is not None:
        var = _kernel_sq_dev_sums(x, mean, &blocks, kernel_raised)
        var = _true_divide(var, _np_maximum(rcount - 0, 0), out=var,
                           casting='unsafe', subok=False)
        inv_std = _reciprocal(_sqrt(var + eps, dtype=interm_dtype))
        if _nan_free((inv_std, gamma, beta), &blocks):
            y = _kernel_apply(x, mean, inv_std, gamma, beta, &blocks,
                              kernel_raised)
    else:
        mean, var = _mean_and_var(x, axis, interm_dtype)
        inv_std = _reciprocal(_sqrt(var + eps, dtype=interm_dtype))
    if y is None:
        g = gamma[expander].astype(interm_dtype, copy=False)
        b = beta[expander].astype(interm_dtype, copy=False)
        y = _apply_bn_fwd(x, mean[expander], inv_std[expander], g, b)
    new_mean = new_var = None
    if running_mean is not None:
        m = x.size // gamma.size
        adjust = m / max(m - 1., 1.)  # unbiased estimation
        new_mean = running_mean.copy()
        new_mean *= decay
        new_mean += (1 - decay) * mean
        new_var = running_var.copy()
        new_var *= decay
        new_var += (1 - decay) * adjust * var
    return y, mean, var, inv_std, new_mean, new_var


cdef object _forward(object node, tuple inputs, ConfigView config):
    # BatchNormalization.forward with GeneralBatchNormalizationImpl, every
    # layout None.
    if len(inputs) != 3 or not numpy_struct_matches():
        return NOT_HANDLED
    x, gamma, beta = inputs
    if (not _float(x) or not _float(gamma) or not _float(beta)
            or beta.shape != gamma.shape or x.size == 0
            or node._impl_selector is not _impl_selector
            or not _classes_stock()):
        return NOT_HANDLED
    axes = _axes(node.axis, x, gamma)
    if axes is None:
        return NOT_HANDLED
    axis, key_axis, expander = axes
    shape = x.shape
    for i in axis:
        if shape[i] != 1:
            break
    else:
        return NOT_HANDLED      # stock's warning, from its line
    eps = node.eps
    decay = node.decay
    running_mean = node.running_mean
    running_var = node.running_var
    if type(eps) is not float:
        return NOT_HANDLED
    if running_mean is not None:
        if (type(decay) is not float or not _float(running_mean)
                or not _float(running_var)
                or running_mean.shape != gamma.shape
                or running_var.shape != gamma.shape
                or not cfp_flags(running_mean) & CFP_NPY_WRITEABLE
                or not cfp_flags(running_var) & CFP_NPY_WRITEABLE
                or _may_share_memory(running_mean, running_var)):
            # Updated in place one after the other: stock's order.
            return NOT_HANDLED
    out = _quietly(_train_values, (x, gamma, beta, axis, expander, eps,
                                   decay, running_mean, running_var))
    if out is None:
        return NOT_HANDLED
    y, mean, var, inv_std, new_mean, new_var = out
    if running_mean is not None:
        _copyto(running_mean, new_mean)
        _copyto(running_var, new_var)
    retain_inputs(node, (0, 1))
    node._output_layouts = (None,)
    node.axis = axis
    node.key_axis = key_axis
    node.expander = expander
    node._impl = _General()
    node.mean = mean
    node.var = var
    node.inv_std = inv_std
    node.forward_data = None
    return y,


cdef tuple _grad_axes(object axis, object expander, object x, object gamma,
                      object gy, object mean):
    """``(axis, m)`` of a gradient node's forward, where the node's
    ``axis`` and ``expander`` are what a forward on ``x`` and ``gamma``
    set, ``gy`` has ``x``'s shape, ``mean`` ``gamma``'s, and the batch is
    not empty (``1. / m`` is finite); else None."""
    if not (_float(x) and _float(gamma) and _float(gy) and _float(mean)):
        return None
    cdef Py_ssize_t ndim = x.ndim
    if not _in_order(axis, ndim):
        return None
    expected = _expander(_key_axis(axis, ndim), x, gamma)
    if (expected is None or expected != expander or gy.shape != x.shape
            or mean.shape != gamma.shape):
        return None
    cdef Py_ssize_t n = gamma.size
    if n == 0 or x.size // n == 0:
        return None
    return axis, x.size // n


cdef tuple _bn_grads(tuple args, int *kernel_raised):
    # GeneralBatchNormalizationImpl.backward on NumPy arrays: gx, ggamma,
    # gbeta.
    axis, m, expander, x, gamma, gy, mean, inv_std = args
    cdef _Blocks blocks
    cdef bint same = _blocks(x, axis, True, &blocks) and _like(gy, x, &blocks)
    # Else a convolution's output x (channels last, or a window of its
    # padded image) and its gradient gy in C order: gy * x_hat and gx are
    # then C-ordered (where operands' layouts differ, NumPy's iterator keeps
    # C order), and the sums run over them and gy as over arrays of gy's
    # layout. x's values are then read from a copy in that layout (x
    # aligned: NumPy's copy is, and x C-contiguous is not copied).
    if ((same or (cfp_c_aligned(gy) and _blocks(gy, axis, True, &blocks)
                  and canonical(x) and cfp_typenum(x) == blocks.typenum
                  and cfp_flags(x) & CFP_NPY_ALIGNED))
            and _like(gamma, None, &blocks) and _like(mean, None, &blocks)
            and _like(inv_std, None, &blocks)):
        grads = _kernel_grads(x if same else _ascontiguousarray(x), gamma,
                              gy, mean, inv_std, gamma.dtype.type(1. / m),
                              &blocks, kernel_raised)
        if grads is not None:
            return grads
    x_hat = _x_hat(x, mean[expander], inv_std[expander])
    if x_hat.dtype != _promote_types(x.dtype, gamma.dtype):
        raise AssertionError     # stock's assertion
    gamma_dtype = gamma.dtype
    gbeta = _add_reduce(gy, axis, gamma_dtype, None, False)
    ggamma = _add_reduce(gy * x_hat, axis, gamma_dtype, None, False)
    inv_m = gamma_dtype.type(1. / m)
    gx = (gamma * inv_std)[expander] * (
        gy - (x_hat * ggamma[expander] + gbeta[expander]) * inv_m)
    gx = gx.astype(dtype=x.dtype, copy=False)
    return gx, ggamma, gbeta


cdef tuple _bn_grads_quietly(object node, tuple arrays):
    """``node``'s ``_bn_grads`` (a BatchNormalization or its gradient
    node, whose attributes name the statistics), or None where the node's
    own code is to run; ``arrays``: x, gamma, gy."""
    x, gamma, gy = arrays
    impl = node._impl
    mean = node.mean
    inv_std = node.inv_std
    if (type(impl) is not _General or not _general_methods.found_by(impl)
            or not _float(inv_std)):
        return None
    state = _grad_axes(node.axis, node.expander, x, gamma, gy, mean)
    if state is None or inv_std.shape != gamma.shape:
        return None
    return _quietly(_bn_grads, state + (node.expander, x, gamma, gy, mean,
                                        inv_std))


cdef tuple _backward_operands(object func, tuple retained,
                              tuple grad_outputs):
    """``(arrays, requires_grad)`` of a backward that applies a gradient
    node to ``func``'s retained inputs (``retained``) and its output
    gradient: their arrays, and whether that node's outputs would require
    grad; None where stock would see something unusual."""
    if (func._input_indexes_to_retain != retained
            or len(grad_outputs) != 1):
        return None
    arrays = retained_inputs(func, [])
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if arrays is None or gy is None:
        return None
    arrays.append(gy)
    inputs = func.inputs
    cdef bint rg = grad_requires_grad(gy_var)
    for i in retained:
        rg = rg or requires_grad_of(inputs[i])
    return tuple(arrays), rg


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # BatchNormalization.backward: BatchNormalizationGrad(...).apply((x,
    # gamma, gy)), whose forward is GeneralBatchNormalizationImpl.backward.
    operands = _backward_operands(func, (0, 1), grad_outputs)
    if operands is None:
        return NOT_HANDLED
    grads = _bn_grads_quietly(func, operands[0])
    if grads is None:
        return NOT_HANDLED
    return tuple([new_grad(g, operands[1]) for g in grads])


cdef object _grad_forward(object node, tuple inputs, ConfigView config):
    # BatchNormalizationGrad.forward with GeneralBatchNormalizationImpl,
    # every layout None.
    if len(inputs) != 3 or not numpy_struct_matches():
        return NOT_HANDLED
    grads = _bn_grads_quietly(node, inputs)
    if grads is None:
        return NOT_HANDLED
    retain_inputs(node, (0, 1, 2))
    retain_outputs(node, (0, 1))
    node._output_layouts = (None, None, None)
    return grads


# -- FixedBatchNormalization ---------------------------------------------

cdef tuple _fixed_values(tuple args, int *kernel_raised):
    # The generic branch of FixedBatchNormalization.forward: y, inv_var,
    # inv_std.
    x, gamma, beta, mean, var, axis, expander, eps = args
    cdef _Blocks blocks
    inv_var = _reciprocal(var + eps)
    inv_std = _sqrt(inv_var, dtype=inv_var.dtype)
    if (_blocks(x, axis, False, &blocks) and _like(gamma, None, &blocks)
            and _like(beta, None, &blocks) and _like(mean, None, &blocks)
            and _like(inv_std, None, &blocks)
            and _nan_free((mean, inv_std, gamma, beta), &blocks)):
        y = _kernel_apply(x, mean, inv_std, gamma, beta, &blocks,
                          kernel_raised)
    else:
        y = _apply_bn_fwd(x, mean[expander], inv_std[expander],
                          gamma[expander], beta[expander])
    return y, inv_var, inv_std


cdef object _fixed_forward(object node, tuple inputs, ConfigView config):
    # FixedBatchNormalization.forward, its generic branch (no iDeep, no
    # cuDNN).
    if len(inputs) != 5 or not numpy_struct_matches():
        return NOT_HANDLED
    x, gamma, beta, mean, var = inputs
    if not (_float(x) and _float(gamma) and _float(beta) and _float(mean)
            and _float(var)):
        return NOT_HANDLED
    shape = gamma.shape
    if (beta.shape != shape or mean.shape != shape or var.shape != shape
            or type(node.eps) is not float or not _classes_stock()):
        return NOT_HANDLED
    axes = _axes(node.axis, x, gamma)
    if axes is None:
        return NOT_HANDLED
    axis, key_axis, expander = axes
    out = _quietly(_fixed_values, (x, gamma, beta, mean, var, axis,
                                   expander, node.eps))
    if out is None:
        return NOT_HANDLED
    y, inv_var, inv_std = out
    retain_inputs(node, (0, 1, 3, 4))
    node.axis = axis
    node.key_axis = key_axis
    node.expander = expander
    node.inv_var = inv_var
    node.inv_std = inv_std
    return y,


cdef tuple _fixed_grads(object node, tuple arrays):
    """``(outputs, inv_std, inv_var, gamma_over_std)`` of
    ``FixedBatchNormalizationGrad.forward`` on ``arrays`` (x, gamma, mean,
    var, gy), ``node`` holding the gradient node's attributes (a
    FixedBatchNormalization or its gradient node); None where the node's
    own code is to run."""
    x, gamma, mean, var, gy = arrays
    eps = node.eps
    inv_std = node.inv_std
    inv_var = node.inv_var
    state = _grad_axes(node.axis, node.expander, x, gamma, gy, mean)
    if state is None or not _float(var) or var.shape != gamma.shape:
        return None
    cdef bint given = inv_std is not None and inv_var is not None
    if given:
        if not (_float(inv_std) and _float(inv_var)
                and inv_std.shape == gamma.shape
                and inv_var.shape == gamma.shape):
            return None
    elif type(eps) is not float:
        return None
    return _quietly(_fixed_grad_values, (
        state[0], node.expander, x, gamma, mean, var, gy, eps,
        inv_std if given else None, inv_var))


cdef tuple _fixed_grad_values(tuple args, int *kernel_raised):
    # FixedBatchNormalizationGrad.forward on NumPy arrays.
    axis, expander, x, gamma, mean, var, gy, eps, inv_std, inv_var = args
    if inv_std is None:
        inv_var = _reciprocal(var + eps)
        inv_std = _sqrt(inv_var, dtype=inv_var.dtype)
    gamma_over_std = gamma * inv_std
    x_hat = _x_hat(x, mean[expander], inv_std[expander])
    gx = gamma_over_std[expander] * gy
    gbeta = _add_reduce(gy, axis, gamma.dtype, None, False)
    ggamma = _add_reduce(x_hat * gy, axis, None, None, False)
    gmean = -gamma_over_std * gbeta
    gvar = - 0.5 * inv_var * (gamma * ggamma).astype(var.dtype, copy=False)
    gx = gx.astype(dtype=x.dtype)
    return (gx, ggamma, gbeta, gmean, gvar), inv_std, inv_var, gamma_over_std


cdef object _fixed_backward(object func, tuple indexes, tuple grad_outputs):
    # FixedBatchNormalization.backward: FixedBatchNormalizationGrad(...)
    # .apply((x, gamma, mean, var, gy)).
    operands = _backward_operands(func, (0, 1, 3, 4), grad_outputs)
    if operands is None:
        return NOT_HANDLED
    state = _fixed_grads(func, operands[0])
    if state is None:
        return NOT_HANDLED
    return tuple([new_grad(g, operands[1]) for g in state[0]])


cdef object _fixed_grad_forward(object node, tuple inputs, ConfigView config):
    # FixedBatchNormalizationGrad.forward on NumPy arrays.
    if len(inputs) != 5 or not numpy_struct_matches():
        return NOT_HANDLED
    state = _fixed_grads(node, inputs)
    if state is None:
        return NOT_HANDLED
    outputs, inv_std, inv_var, gamma_over_std = state
    retain_inputs(node, (0, 1, 2, 4))
    node.inv_var = inv_var
    node.inv_std = inv_std
    node.gamma_over_std = gamma_over_std
    retain_outputs(node, (0, 1, 2, 3, 4))
    return outputs


# What the stock forwards call by their module's name.
cdef tuple _HELPERS = (
    (bn, '_x_hat'), (bn, '_apply_bn_fwd'), (bn, '_impl_selector'),
    (memory_layouts, '_transpose_shape'),
    (memory_layouts, '_get_layout_transpose_axes'))


cdef tuple _grad_node(object cls, tuple names):
    # What applying a gradient node of ``cls`` calls of it, and what its
    # forward calls by its module's name.
    return tuple([(cls, name) for name in (
        '__init__', 'check_type_forward', 'forward', 'retain_inputs',
        'retain_outputs') + names]) + ((bn, '_x_hat'),)


cdef tuple _GRAD_NODE = _grad_node(bn.BatchNormalizationGrad,
                                   ('check_layout_forward',))
cdef tuple _FIXED_GRAD_NODE = _grad_node(bn.FixedBatchNormalizationGrad, ())

ENTRIES = (
    forward_callees(compiled(
        bn.BatchNormalization, _forward, ('forward', 'retain_inputs'),
        _backward, _GRAD_NODE, type_check=('axis',)), _HELPERS),
    forward_callees(compiled(
        bn.BatchNormalizationGrad, _grad_forward,
        ('forward', 'retain_inputs', 'retain_outputs'), NULL, (),
        type_check=None), ((bn, '_x_hat'),)),
    forward_callees(compiled(
        bn.FixedBatchNormalization, _fixed_forward,
        ('forward', 'retain_inputs'), _fixed_backward, _FIXED_GRAD_NODE,
        type_check=('axis',)), _HELPERS[:2]),
    forward_callees(compiled(
        bn.FixedBatchNormalizationGrad, _fixed_grad_forward,
        ('forward', 'retain_inputs', 'retain_outputs'), NULL, (),
        type_check=None), ((bn, '_x_hat'),)),
)
