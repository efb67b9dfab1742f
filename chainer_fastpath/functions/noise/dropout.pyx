# cython: boundscheck=True, wraparound=True
"""Compiled ``Dropout`` and ``DropoutGrad``: forward and backward on NumPy
arrays.

A new mask is drawn as stock draws it: one call of ``numpy.random.rand``
with the input's shape, then ``scale * (r >= ratio)`` and ``x * mask``
evaluated by NumPy as stock's expressions are. Once the numbers are drawn
the forward cannot hand the node to stock (stock would draw again), so it
first checks, in C, that ``x * scale`` raises no floating-point flag for any
element (every element finite, every product finite and not tiny): a flag
NumPy could act on leaves the whole forward to stock, before any draw.
"""
import numpy

from chainer.functions.noise import dropout

from libc.math cimport isfinite, fabs
from libc.float cimport DBL_MIN, FLT_MIN

from chainer_fastpath._core import _attrs

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, set_site)
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, all_flags, clear_flags, quiet2
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_DOUBLE, CFP_NPY_FLOAT, cfp_byteorder,
    cfp_c_aligned, cfp_data, cfp_dims, cfp_flags, cfp_nd, cfp_typenum,
    dense_transposed, numpy_struct_matches)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled

cdef type _ndarray = numpy.ndarray
cdef object _np_multiply = numpy.multiply
cdef object _float32 = numpy.float32
cdef object _float64 = numpy.float64
# Stock's ``numpy.random.rand``: while any function of numpy.random is
# rebound, the compiled entry points leave every node to stock
# (``_audit.stock_replaced``).
cdef object _rand = numpy.random.rand

cfp_attr_enable(_attrs.FAST)

cdef cfp_attr _get_mask = get_site('mask')
cdef cfp_attr _set_mask = set_site('mask')
cdef cfp_attr _get_dropout_ratio = get_site('dropout_ratio')
cdef cfp_attr _get_use_cudnn = get_site('_use_cudnn')


ctypedef fused real:
    float
    double


cdef bint _quiet_items(const real *a, Py_ssize_t n, real scale,
                       real smallest) noexcept nogil:
    cdef Py_ssize_t i
    cdef real p
    for i in range(n):
        p = a[i] * scale
        if not (isfinite(a[i]) and isfinite(p)
                and (p == 0 or fabs(p) >= smallest)):
            return False
    return True


cdef bint _products_quiet(object x, double scale) except -1:
    """Whether ``x * scale`` and ``x * 0`` raise no floating-point flag in
    any element of ``x`` (an aligned float32 or float64 array whose items
    fill its memory from its data pointer on): every element finite, every
    product finite and either 0 or normal."""
    cdef Py_ssize_t n = 1
    cdef int k
    cdef bint quiet
    for k in range(cfp_nd(x)):
        n *= cfp_dims(x)[k]
    if cfp_typenum(x) == CFP_NPY_FLOAT:
        quiet = _quiet_items(<const float *>cfp_data(x), n, <float>scale,
                             <float>FLT_MIN)
    else:
        quiet = _quiet_items(<const double *>cfp_data(x), n, scale, DBL_MIN)
    # The products above set flags of their own: NumPy's checks must not
    # see them.
    clear_flags(all_flags())
    return quiet


cdef object _forward(object node, tuple inputs, ConfigView config):
    # FunctionNode.forward -> Dropout.forward_cpu, iDeep unavailable.
    if len(inputs) == 0:
        return NOT_HANDLED      # stock's IndexError
    x = inputs[0]
    if (type(x) is not _ndarray or not numpy_struct_matches()
            or cfp_nd(x) == 0):
        return NOT_HANDLED
    num = cfp_typenum(x)
    if num != CFP_NPY_FLOAT and num != CFP_NPY_DOUBLE:
        return NOT_HANDLED
    mask = get(node, &_get_mask)
    cdef int raised = 0
    if mask is not None:
        # y = x[0] * self.mask
        if type(mask) is not _ndarray:
            return NOT_HANDLED
        y = quiet2(_np_multiply, x, mask, &raised)
        if acts(raised):
            return NOT_HANDLED
        return y,
    ratio = get(node, &_get_dropout_ratio)
    if type(ratio) is not float:
        # Another type's arithmetic below could run Python code, twice
        # where the node then went to stock.
        return NOT_HANDLED
    # scale = x[0].dtype.type(1. / (1 - self.dropout_ratio))
    scale = (_float32 if num == CFP_NPY_FLOAT else _float64)(
        1. / (1 - ratio))
    # A transposed layout (a convolution's output, say) is read as the
    # block of memory it fills.
    if (not (cfp_c_aligned(x) or cfp_flags(x) & CFP_NPY_ALIGNED
             and dense_transposed(x))
            or cfp_byteorder(x) == b'>' or not _products_quiet(x, scale)):
        return NOT_HANDLED
    # flag = numpy.random.rand(*x[0].shape) >= self.dropout_ratio
    flag = _rand(*x.shape) >= ratio
    mask = scale * flag
    put(node, &_set_mask, mask)
    return x * mask,


cdef object _grad_forward(object node, tuple inputs, ConfigView config):
    # DropoutGrad.forward, iDeep unavailable: inputs[0] * self.mask.
    if len(inputs) == 0:
        return NOT_HANDLED      # stock's IndexError
    gy = inputs[0]
    mask = get(node, &_get_mask)
    if (type(gy) is not _ndarray or type(mask) is not _ndarray
            or cfp_nd(gy) == 0):
        return NOT_HANDLED
    cdef int raised = 0
    y = quiet2(_np_multiply, gy, mask, &raised)
    if acts(raised):
        return NOT_HANDLED
    return y,


cdef object _grad_of(object func, tuple grad_outputs):
    # DropoutGrad(self.mask).apply(gy), whose forward is gy * self.mask.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    mask = get(func, &_get_mask)
    if gy is None or type(mask) is not _ndarray or cfp_nd(gy) == 0:
        return NOT_HANDLED
    cdef int raised = 0
    gx = quiet2(_np_multiply, gy, mask, &raised)
    if acts(raised):
        return NOT_HANDLED
    return (new_grad(gx, grad_requires_grad(gy_var)),)


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Dropout.backward: cuDNN's states where its forward used them, else
    # the gradient node.
    if get(func, &_get_use_cudnn):
        return NOT_HANDLED
    return _grad_of(func, grad_outputs)


cdef object _grad_backward(object func, tuple indexes, tuple grad_outputs):
    # DropoutGrad.backward: DropoutGrad(self.mask).apply(gy).
    return _grad_of(func, grad_outputs)


cdef tuple _GRAD_NODE = (
    (dropout.DropoutGrad, '__init__'),
    (dropout.DropoutGrad, 'check_type_forward'),
    (dropout.DropoutGrad, 'forward'))

ENTRIES = (
    compiled(dropout.Dropout, _forward, ('forward', 'forward_cpu'),
             _backward, _GRAD_NODE, type_check=()),
    compiled(dropout.DropoutGrad, _grad_forward, ('forward',),
             _grad_backward, _GRAD_NODE, type_check=None),
)
