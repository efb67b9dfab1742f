# cython: boundscheck=True, wraparound=True
"""Compiled ``LeakyReLU``: forward and backward on NumPy arrays.

Each NumPy operation runs with NumPy's error handling off (``_fpe``); where
NumPy would act on a floating-point exception, the node's own code runs.
"""
import numpy

from chainer.functions.activation import leaky_relu

from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

from chainer_fastpath._core._attrs cimport retain_inputs, retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, all_flags, clear_flags, fetestexcept, quiet_into)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_layout, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, builtin_typenum, cfp_c_aligned, cfp_data,
    cfp_dims, cfp_nd, numpy_struct_matches)
from chainer_fastpath._core._objects cimport node_data
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport array_of, retained_output

cdef extern from "_leaky_relu.h" nogil:
    void cfp_leaky_relu_blend_f(float *a, const float *cond, Py_ssize_t n,
                                float s)
    void cfp_leaky_relu_blend_d(double *a, const double *cond, Py_ssize_t n,
                                double s)

cdef type _ndarray = numpy.ndarray
cdef type _float16 = numpy.float16
cdef type _float32 = numpy.float32
cdef type _float64 = numpy.float64
cdef object _np_multiply = numpy.multiply
cdef object _copyto = numpy.copyto
cdef object _result_type = numpy.result_type
cdef object _finfo = numpy.finfo
# The slopes whose ``slope >= 0`` runs no code of anybody's: the backward
# reads the sign before it may hand the node back to stock.
cdef tuple _SLOPE_TYPES = (float, int, numpy.float16, numpy.float32,
                           numpy.float64)


# NumPy's value-based casting computes ``float32_array * s`` in float32 only
# for a float ``s`` strictly inside this bound (min_scalar_type).
cdef double _FLOAT32_SCALAR_BOUND = 3.4e38


cdef inline bint _not_positive_f(float v) noexcept nogil:
    """``v <= 0``, read from the bits: no flag raised, as NumPy's
    comparison loops raise none."""
    cdef uint32_t u
    memcpy(&u, &v, 4)
    return (u & 0x7fffffffu) <= 0x7f800000u and (
        u >> 31 or u & 0x7fffffffu == 0)


cdef inline bint _not_positive_d(double v) noexcept nogil:
    cdef uint64_t u
    memcpy(&u, &v, 8)
    cdef uint64_t magnitude = u & 0x7fffffffffffffffu
    return magnitude <= 0x7ff0000000000000u and (
        u >> 63 or magnitude == 0)


ctypedef fused real:
    float
    double


cdef void _scale(real *a, const real *cond, Py_ssize_t n,
                 real s) noexcept nogil:
    cdef Py_ssize_t i
    cdef bint selected
    for i in range(n):
        if real is float:
            selected = _not_positive_f(cond[i])
        else:
            selected = _not_positive_d(cond[i])
        if selected:
            a[i] = a[i] * s


cdef bint _scaled_in_c(object a, object cond, object slope, object source,
                       int *raised) except -1:
    """``a[cond <= 0] *= slope`` in one pass, where the multiplications are
    float32's or float64's with ``slope`` cast to that dtype, as NumPy's
    are for a float slope; False (nothing done) for other operands. The
    products are NumPy's own: one rounding each. ``a`` is a copy of
    ``source``: where the pass without a branch (``_leaky_relu.h``) raised
    a flag (which a signaling NaN not selected may have), ``a`` is copied
    again and the pass that multiplies only the selected elements runs, so
    the flags raised are the gathered multiply's. A NaN slope is left to
    NumPy: of two NaNs, which one a product keeps is its loop's choice."""
    if (not numpy_struct_matches() or type(cond) is not _ndarray
            or (type(slope) is not float and type(slope) is not _float16
                and type(slope) is not _float32
                and type(slope) is not _float64)):
        return False
    cdef int typenum = builtin_typenum(a)
    if ((typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE)
            or builtin_typenum(cond) != typenum
            or not cfp_c_aligned(a) or not cfp_c_aligned(cond)
            or cfp_nd(cond) != cfp_nd(a)):
        return False
    cdef Py_ssize_t n = 1
    cdef int k
    for k in range(cfp_nd(a)):
        if cfp_dims(cond)[k] != cfp_dims(a)[k]:
            return False
        n *= cfp_dims(a)[k]
    cdef double s = slope
    if s != s or (typenum == CFP_NPY_FLOAT and type(slope) is not _float32
                  and not -_FLOAT32_SCALAR_BOUND < s < _FLOAT32_SCALAR_BOUND):
        return False
    cdef char *a_data = cfp_data(a)
    cdef char *cond_data = cfp_data(cond)
    cdef int flags
    with nogil:
        clear_flags(all_flags())
        if typenum == CFP_NPY_FLOAT:
            cfp_leaky_relu_blend_f(<float *>a_data, <const float *>cond_data,
                                   n, <float>s)
        else:
            cfp_leaky_relu_blend_d(<double *>a_data, <const double *>cond_data,
                                   n, s)
        flags = fetestexcept(all_flags())
    if not flags:
        return True
    _copyto(a, source)
    with nogil:
        clear_flags(all_flags())
        if typenum == CFP_NPY_FLOAT:
            _scale(<float *>a_data, <const float *>cond_data, n, <float>s)
        else:
            _scale(<double *>a_data, <const double *>cond_data, n, s)
        raised[0] |= fetestexcept(all_flags())
    return True


cdef bint _casts_quietly(object slope, object dtype) except -1:
    """Whether NumPy casts ``slope`` to ``dtype`` raising no floating-point
    flag: zero, NaN, infinite, or a magnitude among the dtype's normal
    numbers (more strictly than the cast's own rounding needs)."""
    if dtype.kind != 'f':
        return True     # an integer multiply: no floating-point flag
    if type(slope) is int and not -2 ** 53 <= slope <= 2 ** 53:
        return False
    cdef double s = slope
    if s == 0 or s != s or s - s != 0:
        return True
    info = _finfo(dtype)
    return info.tiny <= abs(s) <= info.max


cdef object _scaled_where_not_positive(object a, object cond, object slope,
                                       object source):
    """``a[cond <= 0] *= slope`` on ``a``, a new copy of ``source``; False
    where NumPy would have acted on a floating-point exception."""
    cdef int raised = 0
    if _scaled_in_c(a, cond, slope, source, &raised):
        return not acts(raised)
    if (_result_type(a.dtype, slope) != a.dtype
            or not _casts_quietly(slope, a.dtype)):
        # The multiply casts (its result back, or the slope to the array's
        # dtype) with a floating-point error, which escapes the quiet call:
        # leave it to stock.
        return False
    mask = cond <= 0
    part = a[mask]
    a[mask] = quiet_into(_np_multiply, part, slope, part, &raised)
    return not acts(raised)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # FunctionNode.forward -> LeakyReLU.forward_cpu, iDeep unavailable:
    # the same NumPy operations, for the slopes whose ``*=`` is NumPy's
    # multiply.
    assert len(inputs) > 0
    x, = inputs
    if type(node.slope) not in _SLOPE_TYPES:
        return NOT_HANDLED
    y = x.copy()
    # ``x <= 0`` read from the copy: the same bits, and contiguous.
    if not _scaled_where_not_positive(y, y, node.slope, x):
        return NOT_HANDLED
    if node.slope >= 0:
        retain_outputs(node, (0,))
    else:
        retain_inputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # LeakyReLU.backward: cond is the retained output (slope >= 0) or the
    # retained input (slope < 0); then _LeakyReLUGrad(cond, slope).apply(
    # grad_outputs), a node without a type check whose forward_cpu (iDeep
    # unavailable) is gy.copy() with the elements where cond <= 0
    # multiplied in place by slope.
    slope = func.slope
    if type(slope) not in _SLOPE_TYPES or len(grad_outputs) != 1:
        return NOT_HANDLED
    if slope >= 0:
        node = retained_output(func)
        if node is None:
            return NOT_HANDLED
    else:
        retained = func._input_indexes_to_retain
        if type(retained) is not tuple or retained != (0,):
            return NOT_HANDLED
        node = func.inputs[0]
        if node_data(node) is None:
            return NOT_HANDLED
    cond = array_of(node)
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    # Stock's errors (a gradient of another shape, an integer one, a
    # non-standard layout) are left to stock to raise.
    if (type(cond) is not _ndarray or gy is None
            or grad_layout(gy_var) is not None
            or cond.dtype.kind != 'f' or gy.dtype.kind != 'f'
            or cond.shape != gy.shape):
        return NOT_HANDLED
    gx = gy.copy()
    if not _scaled_where_not_positive(gx, cond, slope, gy):
        return NOT_HANDLED
    return (new_grad(gx, grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(leaky_relu.LeakyReLU,
             _forward, ('forward', 'forward_cpu', 'retain_inputs',
                        'retain_outputs'),
             _backward, backward_callees=(
                 (leaky_relu._LeakyReLUGrad, '__init__'),
                 (leaky_relu._LeakyReLUGrad, 'check_type_forward'),
                 (leaky_relu._LeakyReLUGrad, 'forward'),
                 (leaky_relu._LeakyReLUGrad, 'forward_cpu')),
             type_check=()),
)
