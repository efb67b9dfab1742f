# cython: boundscheck=True, wraparound=True
"""Compiled ``ReLU``: forward and backward on NumPy arrays, and
``F.relu``.

Each NumPy operation that may raise a floating-point exception runs with
NumPy's error handling off (``_fpe``); where NumPy would act on one, the
node's own code runs. The backward's ``gy * (y > 0)`` is one pass of
``_relu.h``, into an output laid out as NumPy's would be.
"""
import numpy

import chainer
import chainer.functions
from chainer.functions.activation import relu

from chainer_fastpath._core._attrs cimport retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, all_flags, clear_flags, fetestexcept, quiet2)
from chainer_fastpath._core._grads cimport grad_requires_grad, new_grad
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_DOUBLE, CFP_NPY_FLOAT, canonical, cfp_c_aligned,
    cfp_data, cfp_dims, cfp_flags, cfp_nd, cfp_strides, cfp_typenum,
    dense_transposed, new_like, numpy_struct_matches)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath._core._retained cimport activation_inputs, array_of
from chainer_fastpath._core._ufunc_loop cimport Binary
from chainer_fastpath._runtime._public cimport Public
from chainer_fastpath._runtime._forced cimport forced

cdef extern from "_relu.h" nogil:
    void cfp_relu_grad_f(const float *gy, const float *y, Py_ssize_t n,
                         float *gx)
    void cfp_relu_grad_d(const double *gy, const double *y, Py_ssize_t n,
                         double *gx)
    void cfp_relu_grad_strided_f(int nd, const Py_ssize_t *dims,
                                 const char *gy, const Py_ssize_t *sgy,
                                 const char *y, const Py_ssize_t *sy,
                                 char *gx, const Py_ssize_t *sgx)
    void cfp_relu_grad_strided_d(int nd, const Py_ssize_t *dims,
                                 const char *gy, const Py_ssize_t *sgy,
                                 const char *y, const Py_ssize_t *sy,
                                 char *gx, const Py_ssize_t *sgx)

cdef type _ndarray = numpy.ndarray
cdef object _empty_like = numpy.empty_like
cdef object _nditer = numpy.nditer
cdef tuple _NDITER_FLAGS = (('readonly',), ('readonly',),
                            ('writeonly', 'allocate'))
# Below this many items, arrays of two layouts go through NumPy: asking its
# iterator for the output's layout costs more than the kernel saves.
cdef Py_ssize_t _STRIDED_MIN = 4096
cdef object _maximum = numpy.maximum
cdef object _np_multiply = numpy.multiply
cdef object _utils = chainer.utils
cdef Binary _maximum_loop = Binary(_maximum)
# The 0 of ``maximum(x, 0, dtype=x.dtype)`` as NumPy casts it.
cdef object _ZERO32 = numpy.zeros((), numpy.float32)
cdef object _ZERO64 = numpy.zeros((), numpy.float64)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # FunctionNode.forward -> ReLU.forward_cpu, iDeep unavailable. NumPy's
    # maximum raises no floating-point exception, not even on a NaN (its
    # loop clears the flags).
    assert len(inputs) > 0
    x, = inputs
    cdef int raised = 0
    y = None
    if type(x) is _ndarray and numpy_struct_matches():
        num = cfp_typenum(x)
        if num == CFP_NPY_FLOAT or num == CFP_NPY_DOUBLE:
            y = _maximum_loop.call(
                x, _ZERO32 if num == CFP_NPY_FLOAT else _ZERO64, &raised)
    if y is None or acts(raised):
        y = _maximum(x, 0, dtype=x.dtype)
    retain_outputs(node, (0,))
    return forced(y),


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # ReLU.backward: ReLUGrad2(y).apply((gy,)), a node without a type check
    # whose forward_cpu (iDeep unavailable) is gy * (y > 0) cast to gy's
    # dtype.
    args = activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    y_node, gy_var, gy = args
    y = array_of(y_node)
    cdef int raised = 0
    gx = _grad_kernel(gy, y, &raised)
    if gx is None:
        gx = quiet2(_np_multiply, gy, y > 0, &raised)
    if acts(raised):
        return NOT_HANDLED
    return (new_grad(_utils.force_array(gx, dtype=gy.dtype),
                     grad_requires_grad(gy_var)),)


cdef object _grad_kernel(object gy, object y, int *raised):
    """``gy * (y > 0)`` by ``_relu.h``, adding the flags it raised to
    ``raised``; None (nothing done) unless ``gy`` and ``y`` are aligned
    ndarrays of one canonical float32 or float64 dtype and one shape, and
    either of one layout, C-contiguous or ``dense_transposed`` (NumPy's
    output then takes ``gy``'s strides), or large, ``y`` of such a layout
    (as the mask ``y > 0`` then is) and ``gy``'s strides positive: the
    output then has the layout NumPy's iterator gives it."""
    if (type(gy) is not _ndarray or type(y) is not _ndarray
            or not numpy_struct_matches() or not canonical(gy)
            or not canonical(y)):
        return None
    cdef int typenum = cfp_typenum(gy)
    cdef int nd = cfp_nd(gy), k
    if ((typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE)
            or cfp_typenum(y) != typenum or cfp_nd(y) != nd or nd > 32
            or not cfp_flags(gy) & cfp_flags(y) & CFP_NPY_ALIGNED):
        return None
    cdef Py_ssize_t n = 1
    cdef bint same = True
    for k in range(nd):
        if cfp_dims(y)[k] != cfp_dims(gy)[k]:
            return None
        same = same and cfp_strides(y)[k] == cfp_strides(gy)[k]
        n *= cfp_dims(gy)[k]
    if same and cfp_c_aligned(gy):
        gx = new_like(gy)
    elif same and dense_transposed(gy):
        gx = _empty_like(gy)
    elif (n >= _STRIDED_MIN and (cfp_c_aligned(y) or dense_transposed(y))
            and _positive_strides(gy)):
        gx = _nditer((gy, y, None), op_flags=_NDITER_FLAGS,
                     order='K').operands[2]
        clear_flags(all_flags())
        _strided(typenum, gy, y, gx)
        raised[0] |= fetestexcept(all_flags())
        return gx
    else:
        return None
    if gx is None or n == 0:
        return gx
    clear_flags(all_flags())
    if typenum == CFP_NPY_FLOAT:
        cfp_relu_grad_f(<float *>cfp_data(gy), <float *>cfp_data(y), n,
                        <float *>cfp_data(gx))
    else:
        cfp_relu_grad_d(<double *>cfp_data(gy), <double *>cfp_data(y), n,
                        <double *>cfp_data(gx))
    raised[0] |= fetestexcept(all_flags())
    return gx


def grad_kernel(gy, y):
    """``(gy * (y > 0), flags raised)`` by the kernels, or ``(None, 0)``
    where NumPy computes it; for the tests."""
    cdef int raised = 0
    gx = _grad_kernel(gy, y, &raised)
    return gx, raised


cdef bint _positive_strides(object a):
    cdef int k
    for k in range(cfp_nd(a)):
        if cfp_strides(a)[k] <= 0:
            return False
    return True


cdef void _strided(int typenum, object gy, object y, object gx):
    # The strided kernel over the axes in gx's memory order, outermost
    # first: it writes gx in order.
    cdef int nd = cfp_nd(gx), k, j, at
    cdef Py_ssize_t dims[32]
    cdef Py_ssize_t sgy[32]
    cdef Py_ssize_t sy[32]
    cdef Py_ssize_t sgx[32]
    cdef Py_ssize_t *gx_strides = cfp_strides(gx)
    cdef int order[32]
    for k in range(nd):
        # Insertion by gx's stride, largest first.
        at = k
        while at > 0 and gx_strides[order[at - 1]] < gx_strides[k]:
            order[at] = order[at - 1]
            at -= 1
        order[at] = k
    for j in range(nd):
        k = order[j]
        dims[j] = cfp_dims(gx)[k]
        sgy[j] = cfp_strides(gy)[k]
        sy[j] = cfp_strides(y)[k]
        sgx[j] = gx_strides[k]
    if typenum == CFP_NPY_FLOAT:
        cfp_relu_grad_strided_f(nd, dims, cfp_data(gy), sgy, cfp_data(y), sy,
                                cfp_data(gx), sgx)
    else:
        cfp_relu_grad_strided_d(nd, dims, cfp_data(gy), sgy, cfp_data(y), sy,
                                cfp_data(gx), sgx)


# -- F.relu ------------------------------------------------------------------

TARGETS = ((relu, 'relu'), (chainer.functions, 'relu'))

cdef Public _relu = Public('relu.relu', relu, ('x',), ())


def bind(owner, attribute, original):
    """Keeps stock's ``relu`` to fall back to; returns its replacement."""
    return _relu.bind(relu_, original)


def relu_(*args, **kwargs):
    """Drop-in for ``F.relu``: ``y, = ReLU().apply((x,))``."""
    return _relu.call_new('ReLU', args, kwargs)


ENTRIES = (
    nodeless(compiled(relu.ReLU,
                      _forward, ('forward', 'forward_cpu', 'retain_outputs'),
                      _backward, backward_callees=(
                          (relu.ReLUGrad2, '__init__'),
                          (relu.ReLUGrad2, 'check_type_forward'),
                          (relu.ReLUGrad2, 'forward'),
                          (relu.ReLUGrad2, 'forward_cpu')),
                      type_check=())),
)
