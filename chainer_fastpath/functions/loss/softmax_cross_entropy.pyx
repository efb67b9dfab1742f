"""Compiled ``SoftmaxCrossEntropy``: forward and backward on NumPy arrays,
on a 2-D input in one pass, bit for bit stock's.

Stock's ``SoftmaxCrossEntropy.forward_cpu`` and its gradient's chain some
twenty NumPy calls; on a small batch their cost is the calls. As in the
LSTM's kernels, each result is computed element by element: ``+``, ``-``,
``*``, comparisons and gathers in C, exactly as NumPy's loops do them, and
what C cannot reproduce stays NumPy's own: ``exp`` and ``log`` (called
with NumPy's error handling off), and the sums, whose pairwise order only
``numpy.add.reduce`` gives (on operands no order of additions overflows). A
NaN input, a label out of range or a floating-point exception that
``numpy.errstate`` does not ignore (``_fpe``) makes the kernels
(``fused_forward``, ``fused_grad``) return None, and the node's own code
runs, which raises or warns as stock does, from stock's lines.
"""
cimport cython
from libc.math cimport INFINITY

import numpy

import chainer
from chainer.functions.activation import log_softmax
from chainer.functions.loss import softmax_cross_entropy

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, retain_inputs, set_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._grads cimport grad_array, new_grad
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_INT, CFP_NPY_LONG,
    CFP_NPY_LONGLONG, builtin_typenum, cfp_c_aligned, cfp_data, cfp_dims,
    cfp_elsize, cfp_flags, cfp_nd, cfp_strides, empty1, empty2,
    numpy_struct_matches)

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    clear_flags, fetestexcept, quiet2, watched)
from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._reductions cimport sum_middle
from chainer_fastpath._core._ufunc_loop cimport FloatLoops
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)
from chainer_fastpath._core._retained cimport (
    retained_inputs, retained_inputs_require_grad)


cdef extern from "_softmax_cross_entropy.h" nogil:
    bint cfp_sce_shifted_f(const float *x, float *e, float *m,
                           Py_ssize_t rows, Py_ssize_t cols)
    bint cfp_sce_shifted_d(const double *x, double *e, double *m,
                           Py_ssize_t rows, Py_ssize_t cols)
    void cfp_sce_zero_maxima_f(const float *x, float *e, float *m,
                               const float *numpy_m, Py_ssize_t rows,
                               Py_ssize_t cols)
    void cfp_sce_zero_maxima_d(const double *x, double *e, double *m,
                               const double *numpy_m, Py_ssize_t rows,
                               Py_ssize_t cols)
    void cfp_sce_log_softmax_f(const float *x, const float *m,
                               const float *log_s, float *log_y,
                               const Py_ssize_t *index, const bint *valid,
                               float *log_p, Py_ssize_t rows,
                               Py_ssize_t cols)
    void cfp_sce_log_softmax_d(const double *x, const double *m,
                               const double *log_s, double *log_y,
                               const Py_ssize_t *index, const bint *valid,
                               double *log_p, Py_ssize_t rows,
                               Py_ssize_t cols)
    void cfp_sce_grad_rows_f(const float *y, float *gx,
                             const Py_ssize_t *index, const bint *valid,
                             const float *gloss, Py_ssize_t step,
                             Py_ssize_t rows, Py_ssize_t cols)
    void cfp_sce_grad_rows_d(const double *y, double *gx,
                             const Py_ssize_t *index, const bint *valid,
                             const double *gloss, Py_ssize_t step,
                             Py_ssize_t rows, Py_ssize_t cols)

cdef type _ndarray = numpy.ndarray
# exp and log by their loops, called as NumPy calls them on the kernel's
# contiguous arrays (else by the ufuncs' calls).
cdef FloatLoops _exp_loops = FloatLoops(numpy.exp)
cdef FloatLoops _log_loops = FloatLoops(numpy.log)
cdef object _add_reduce = numpy.add.reduce
cdef object _INTP = numpy.dtype(numpy.intp)
cdef object _INTC = numpy.dtype(numpy.intc)
cdef object _np_multiply = numpy.multiply
cdef double _FLOAT_MAX = numpy.finfo(numpy.float32).max
cdef double _DOUBLE_MAX = numpy.finfo(numpy.float64).max
cdef object _float64 = numpy.float64
cdef object _should_use_cudnn = chainer.should_use_cudnn
cdef type _GradNoDoubleBackprop = (
    softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop)


# -- the kernels ----------------------------------------------------------

ctypedef fused real:
    float
    double


cdef int _float_typenum(object x):
    # x's type number when it is a C-contiguous, non-empty float32 or
    # float64 matrix, else -1.
    if (type(x) is not _ndarray or cfp_nd(x) != 2
            or not cfp_c_aligned(x)
            or cfp_dims(x)[0] == 0 or cfp_dims(x)[1] == 0):
        return -1
    cdef int num = builtin_typenum(x)
    return num if num == CFP_NPY_FLOAT or num == CFP_NPY_DOUBLE else -1


cdef bint _labels_ok(object t, Py_ssize_t n):
    # A vector of n int32 or int64 labels, any stride.
    if (type(t) is not _ndarray or cfp_nd(t) != 1 or cfp_dims(t)[0] != n
            or not cfp_flags(t) & CFP_NPY_ALIGNED):
        return False
    cdef int num = builtin_typenum(t)
    return ((num == CFP_NPY_INT or num == CFP_NPY_LONG
             or num == CFP_NPY_LONGLONG)
            and (cfp_elsize(t) == 4 or cfp_elsize(t) == 8))


cdef inline long long _label(object t, Py_ssize_t k):
    cdef char *p = cfp_data(t) + k * cfp_strides(t)[0]
    if cfp_elsize(t) == 4:
        return (<int *>p)[0]
    return (<long long *>p)[0]


cdef class _Targets:
    """Stock's ``t_valid = t != ignore_label``, and the column each row
    gathers: ``t * t_valid``, negatives wrapped as NumPy indexing wraps
    them."""
    cdef object _index, _valid    # the arrays owning the buffers
    cdef Py_ssize_t *index
    cdef bint *valid
    cdef Py_ssize_t count


cdef _Targets _targets(object t, object ignore_label, Py_ssize_t rows,
                       Py_ssize_t cols):
    """None unless ``t`` holds ``rows`` int32 or int64 labels,
    ``ignore_label`` is an int64 and every column is in range (NumPy raises
    IndexError otherwise)."""
    if type(ignore_label) is not int or not _labels_ok(t, rows):
        return None
    cdef long long ignore, label
    try:
        ignore = ignore_label
    except OverflowError:
        return None
    cdef _Targets r = _Targets.__new__(_Targets)
    r._index = empty1(_INTP, rows)
    r._valid = empty1(_INTC, rows)
    r.index = <Py_ssize_t *>cfp_data(r._index)
    r.valid = <bint *>cfp_data(r._valid)
    r.count = 0
    cdef Py_ssize_t k
    for k in range(rows):
        label = _label(t, k)
        r.valid[k] = label != ignore
        if not r.valid[k]:
            label = 0
        if label < 0:
            label += cols
        if label < 0 or label >= cols:
            return None
        r.index[k] = <Py_ssize_t>label
        r.count += r.valid[k]
    return r


cdef bint _any_nan(const real *a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        if a[k] != a[k]:
            return True
    return False


cdef bint _sum_is_quiet(const real *a, Py_ssize_t n,
                        real limit) noexcept nogil:
    # Whether no order of adding a[:n] raises a floating-point exception:
    # no NaN, the finite values within [-limit, limit] (limit the maximum
    # over 2n: no partial sum overflows), no +inf (so no inf - inf).
    cdef Py_ssize_t k
    cdef real neg_inf = -INFINITY
    cdef bint ok = True
    for k in range(n):
        ok &= (a[k] <= limit) & ((a[k] >= -limit) | (a[k] == neg_inf))
    return ok


cdef void _negate(const real *a, real *out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        out[k] = -a[k]


cdef void _scale(real *a, double factor) noexcept nogil:
    # NumPy multiplies a (1,)-array by a Python or NumPy float in the
    # array's type.
    a[0] = a[0] * <real>factor


cpdef object fused_forward(object x, object t, object ignore_label,
                           bint normalize, str reduce, bint cache_score):
    """``(loss, y, coeff)``: what stock ``SoftmaxCrossEntropy.forward_cpu``
    returns and sets as ``self.y`` (None without ``cache_score``) and
    ``self._coeff`` (None unless ``reduce == 'mean'``), for hard labels and
    no class weight. None when the kernel does not apply."""
    if not numpy_struct_matches() or (reduce != 'mean' and reduce != 'no'):
        return None
    cdef int num = _float_typenum(x)
    if num < 0:
        return None
    cdef Py_ssize_t rows = cfp_dims(x)[0], cols = cfp_dims(x)[1]
    cdef _Targets targets = _targets(t, ignore_label, rows, cols)
    if targets is None:
        return None
    cdef int flags = watched()

    dtype = x.dtype
    cdef bint single = num == CFP_NPY_FLOAT, nan, zero
    e = empty2(dtype, rows, cols)
    m = empty1(dtype, rows)
    clear_flags(flags)
    if single:
        zero = cfp_sce_shifted_f(<float *>cfp_data(x), <float *>cfp_data(e),
                                 <float *>cfp_data(m), rows, cols)
    else:
        zero = cfp_sce_shifted_d(<double *>cfp_data(x),
                                 <double *>cfp_data(e),
                                 <double *>cfp_data(m), rows, cols)
    if fetestexcept(flags):
        return None
    if zero:
        numpy_m = x.max(axis=1)
        if single:
            cfp_sce_zero_maxima_f(
                <float *>cfp_data(x), <float *>cfp_data(e),
                <float *>cfp_data(m), <float *>cfp_data(numpy_m), rows, cols)
        else:
            cfp_sce_zero_maxima_d(
                <double *>cfp_data(x), <double *>cfp_data(e),
                <double *>cfp_data(m), <double *>cfp_data(numpy_m), rows,
                cols)
    cdef int raised = 0
    _exp_loops.quiet_unary(e, e, &raised)
    if raised & flags:
        return None
    # Values in [0, 1], or NaN from a NaN in x: no sum of them raises an
    # exception.
    s = sum_middle(e, 1, False)
    if s is None:
        s = _add_reduce(e, 1)
    # A NaN in x, or inf - inf in e, makes its row's sum NaN; NumPy would
    # choose which NaN max returns, and the caller runs stock's calls.
    if single:
        nan = _any_nan(<float *>cfp_data(s), rows)
    else:
        nan = _any_nan(<double *>cfp_data(s), rows)
    if nan:
        return None
    _log_loops.quiet_unary(s, s, &raised)
    if raised & flags:
        return None
    log_y = empty2(dtype, rows, cols)
    log_p = empty1(dtype, rows)
    clear_flags(flags)
    if single:
        cfp_sce_log_softmax_f(
            <float *>cfp_data(x), <float *>cfp_data(m),
            <float *>cfp_data(s), <float *>cfp_data(log_y), targets.index,
            targets.valid, <float *>cfp_data(log_p), rows, cols)
    else:
        cfp_sce_log_softmax_d(
            <double *>cfp_data(x), <double *>cfp_data(m),
            <double *>cfp_data(s), <double *>cfp_data(log_y), targets.index,
            targets.valid, <double *>cfp_data(log_p), rows, cols)
    if fetestexcept(flags):
        return None
    y = None
    if cache_score:
        y = _exp_loops.quiet_unary(log_y, empty2(dtype, rows, cols),
                                   &raised)
        if raised & flags:
            return None

    if reduce == 'no':
        loss = empty1(dtype, rows)
        if single:
            _negate(<float *>cfp_data(log_p), <float *>cfp_data(loss), rows)
        else:
            _negate(<double *>cfp_data(log_p), <double *>cfp_data(loss),
                    rows)
        return loss, y, None
    # Stock's 1.0 / max(count, 1), count t_valid.sum() (a NumPy int64) or
    # len(x): the types of count and coeff decide how the backward
    # multiplies by it. Divided by a NumPy int64, 1.0 is a NumPy float64 of
    # C's quotient.
    if not normalize:
        coeff = 1.0 / rows
    elif targets.count >= 1:
        coeff = _float64(1.0 / <double>targets.count)
    else:
        coeff = 1.0
    cdef double factor = -coeff
    # Stock's sum of these raises no exception in any order either.
    if single:
        nan = not _sum_is_quiet(<float *>cfp_data(log_p), rows,
                                <float>(_FLOAT_MAX / (2 * rows)))
    else:
        nan = not _sum_is_quiet(<double *>cfp_data(log_p), rows,
                                _DOUBLE_MAX / (2 * rows))
    if nan:
        return None
    loss = sum_middle(log_p, 0, True)
    if loss is None:
        loss = _add_reduce(log_p, None, dtype, None, True)
    clear_flags(flags)
    if single:
        _scale(<float *>cfp_data(loss), factor)
    else:
        _scale(<double *>cfp_data(loss), factor)
    if fetestexcept(flags):
        return None
    return loss.reshape(()), y, coeff


cpdef object fused_grad(object y, object t, object ignore_label,
                        object gloss, object coeff):
    """``gx`` as stock ``_SoftmaxCrossEntropyGrad_NoDoubleBackprop``'s
    ``forward_cpu`` computes it from a cached score ``y`` (2-D), hard
    labels and no class weight; None when the kernel does not apply."""
    if not numpy_struct_matches():
        return None
    cdef int num = _float_typenum(y)
    if num < 0 or type(gloss) is not _ndarray or builtin_typenum(gloss) != num:
        return None
    cdef Py_ssize_t rows = cfp_dims(y)[0], cols = cfp_dims(y)[1]
    cdef Py_ssize_t step
    cdef int flags = watched(), raised = 0
    cdef double g_double
    if coeff is not None:
        # Stock's gx *= gloss * coeff: a float scalar NumPy casts to gx's
        # type (here in C, as NumPy's cast does it).
        if cfp_nd(gloss) != 0:
            return None
        g = quiet2(_np_multiply, gloss, coeff, &raised)
        if raised & flags or (type(g) is not float
                              and not isinstance(g, numpy.floating)):
            return None
        g_double = g
        scalar = empty1(y.dtype, 1)
        clear_flags(flags)
        if num == CFP_NPY_FLOAT:
            (<float *>cfp_data(scalar))[0] = <float>g_double
        else:
            (<double *>cfp_data(scalar))[0] = g_double
        if fetestexcept(flags):
            return None
        gl = scalar
        step = 0
    else:
        # gloss[:, None], read with its own stride: F.sum's gradient
        # reaches reduce='no' as a broadcast, of stride 0.
        if (cfp_nd(gloss) != 1 or cfp_dims(gloss)[0] != rows
                or not cfp_flags(gloss) & CFP_NPY_ALIGNED
                or cfp_strides(gloss)[0] % cfp_elsize(gloss) != 0):
            return None
        gl = gloss
        step = cfp_strides(gloss)[0] // cfp_elsize(gloss)
    cdef _Targets targets = _targets(t, ignore_label, rows, cols)
    if targets is None:
        return None
    gx = empty2(y.dtype, rows, cols)
    clear_flags(flags)
    if num == CFP_NPY_FLOAT:
        cfp_sce_grad_rows_f(<float *>cfp_data(y), <float *>cfp_data(gx),
                            targets.index, targets.valid,
                            <float *>cfp_data(gl), step, rows, cols)
    else:
        cfp_sce_grad_rows_d(<double *>cfp_data(y), <double *>cfp_data(gx),
                            targets.index, targets.valid,
                            <double *>cfp_data(gl), step, rows, cols)
    if fetestexcept(flags):
        return None
    return gx


# -- the node -------------------------------------------------------------

cfp_attr_enable(_attrs.FAST)
# The node's attributes, read and written through the attribute caches
# (_core/_attrs.h): the generic access's result.
cdef cfp_attr _get_class_weight = get_site('class_weight')
cdef cfp_attr _get_reduce = get_site('reduce')
cdef cfp_attr _get_ignore_label = get_site('ignore_label')
cdef cfp_attr _get_normalize = get_site('normalize')
cdef cfp_attr _get_cache_score = get_site('cache_score')
cdef cfp_attr _get_soft_target = get_site('soft_target')
cdef cfp_attr _get_y = get_site('y')
cdef cfp_attr _get_coeff = get_site('_coeff')
cdef cfp_attr _set_y = set_site('y')
cdef cfp_attr _set_coeff = set_site('_coeff')


@cython.boundscheck(True)
@cython.wraparound(True)
cdef object _forward(object node, tuple inputs, ConfigView config):
    # FunctionNode.forward -> SoftmaxCrossEntropy.forward_cpu with
    # log_softmax._log_softmax inlined, for hard labels without class
    # weights (soft targets and weights go to stock): the one-pass kernel
    # on a matrix, or where it declines, stock's forward.
    if len(inputs) != 2:
        return NOT_HANDLED   # stock's assertion or unpacking error
    x, t = inputs
    if (get(node, &_get_class_weight) is not None
            or (x.ndim == t.ndim and x.shape == t.shape)
            or type(get(node, &_get_reduce)) is not str):   # a numpy.str_
        return NOT_HANDLED
    retain_inputs(node, (0, 1))
    # _log_softmax asks this first; on NumPy only its config check counts.
    _should_use_cudnn('>=auto')
    result = fused_forward(x, t, get(node, &_get_ignore_label),
                           get(node, &_get_normalize),
                           get(node, &_get_reduce),
                           get(node, &_get_cache_score))
    if result is not None:
        loss, y, coeff = result
        if get(node, &_get_cache_score):
            put(node, &_set_y, y)
        if get(node, &_get_reduce) == 'mean':
            put(node, &_set_coeff, coeff)
        return loss,
    # Stock's NumPy calls, from its own lines (where they warn).
    return NOT_HANDLED


cdef bint _kernel_applies(object y, object class_weight, object soft_target,
                          object x):
    """Whether ``fused_grad`` stands for
    ``_SoftmaxCrossEntropyGrad_NoDoubleBackprop.forward_cpu``: a cached
    score, a 2-D non-empty input, hard labels, no class weight."""
    return (y is not None and type(y) is _ndarray and class_weight is None
            and not soft_target and type(x) is _ndarray and x.size != 0
            and x.ndim == 2)


@cython.boundscheck(True)
@cython.wraparound(True)
cdef object _grad_forward(object node, tuple inputs, ConfigView config):
    # _SoftmaxCrossEntropyGrad_NoDoubleBackprop.forward -> forward_cpu, as
    # stock's backward applies it where a graph is recorded or a hook
    # watches: the one-pass kernel, or where it declines, stock's.
    if len(inputs) != 3:
        return NOT_HANDLED
    x, t, gloss = inputs
    if not _kernel_applies(get(node, &_get_y), get(node, &_get_class_weight),
                           get(node, &_get_soft_target), x):
        return NOT_HANDLED
    gx = fused_grad(get(node, &_get_y), t, get(node, &_get_ignore_label),
                    gloss, node.coeff)
    if gx is None:
        return NOT_HANDLED
    return gx,


@cython.boundscheck(True)
@cython.wraparound(True)
cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # SoftmaxCrossEntropy.backward (the node only exists without double
    # backprop): its gradient node applied to (x, t, gloss).
    gloss_var = grad_outputs[0]
    gloss = grad_array(gloss_var)
    if gloss is None:
        return NOT_HANDLED
    arrays = retained_inputs(func, [])
    if arrays is None or len(arrays) != 2:
        return NOT_HANDLED
    cdef bint rg = (retained_inputs_require_grad(func)
                    or gloss_var._requires_grad)
    x, t = arrays
    if _kernel_applies(get(func, &_get_y), get(func, &_get_class_weight),
                       get(func, &_get_soft_target), x):
        # The gradient node's forward_cpu by the one-pass kernel, or where
        # it declines, stock's backward. The node has no type check, and
        # its output, an ndarray, passes apply's.
        gx = fused_grad(get(func, &_get_y), t,
                        get(func, &_get_ignore_label), gloss,
                        get(func, &_get_coeff))
        if gx is None:
            return NOT_HANDLED
        return new_grad(gx, rg), None
    arrays.append(gloss)
    grad_node = _GradNoDoubleBackprop(
        func.ignore_label, func.class_weight, func.y, func._coeff,
        func.soft_target)
    return apply_detached(grad_node, tuple(arrays), rg) + (None,)


ENTRIES = (
    forward_callees(compiled(
        softmax_cross_entropy.SoftmaxCrossEntropy,
        _forward, ('forward', 'forward_cpu', 'retain_inputs'),
        _backward, backward_callees=(
            (_GradNoDoubleBackprop, '__init__'),
            (_GradNoDoubleBackprop, 'check_type_forward'),
            (_GradNoDoubleBackprop, 'forward'),
            (_GradNoDoubleBackprop, 'forward_cpu')),
        type_check=()), (
            (log_softmax, '_log_softmax'),
            (log_softmax, 'logsumexp'),
            (softmax_cross_entropy, '_reduction_dtype'))),
    compiled(_GradNoDoubleBackprop, _grad_forward, ('forward', 'forward_cpu'),
             NULL, backward_callees=(), type_check=None),
)
