# cython: boundscheck=True, wraparound=True
"""Compiled ``MaxPoolingND`` over two spatial axes (``F.max_pooling_2d``):
its forward and backward on NumPy arrays, and the forwards of
``MaxPoolingNDGrad`` and ``MaxPoolingNDWithIndexes`` (double backprop).

Stock pads the image with -inf, copies its windows into a patch array
(``im2col_nd_cpu``) and takes ``max`` and ``argmax`` over it; the
gradient puts each ``gy`` into a zeroed patch array at its index and sums
the patches into a padded image (``col2im_nd_cpu``). Here one C loop
(``_pooling.h``) reads each window in place for its maximum and the
maximum's first index, and one adds each gradient into the padded image at
its index in the order of stock's sums: the same values, and the gradient
stock's view of the padded image. Where stock's pick among equal items is
its NumPy loop's (a NaN, a maximum of zeros of both signs), or a float16
image gets two additions into one element, the work is stock's.
"""
from libc.stdint cimport int64_t, uint16_t

import numpy

from chainer.functions.pooling import max_pooling_nd
from chainer.functions.pooling import pooling_nd
from chainer.utils import conv
from chainer.utils import conv_nd

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, all_flags, clear_flags, fetestexcept)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_HALF,
    CFP_NPY_LONG, builtin_typenum, cfp_data, cfp_dims, cfp_flags, cfp_nd,
    cfp_strides, empty, numpy_struct_matches)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)
from chainer_fastpath._runtime._geometry cimport fits, within

cdef extern from "_pooling.h" nogil:
    int cfp_max_pool_h(uint16_t *y, int64_t *idx, const char *src,
                       const Py_ssize_t *shape, const Py_ssize_t *strides,
                       const Py_ssize_t *geometry)
    int cfp_max_pool_f(float *y, int64_t *idx, const char *src,
                       const Py_ssize_t *shape, const Py_ssize_t *strides,
                       const Py_ssize_t *geometry)
    int cfp_max_pool_d(double *y, int64_t *idx, const char *src,
                       const Py_ssize_t *shape, const Py_ssize_t *strides,
                       const Py_ssize_t *geometry)
    int cfp_max_gather_h(uint16_t *y, const char *idx,
                         const Py_ssize_t *istr, const char *src,
                         const Py_ssize_t *shape, const Py_ssize_t *strides,
                         const Py_ssize_t *geometry)
    int cfp_max_gather_f(float *y, const char *idx, const Py_ssize_t *istr,
                         const char *src, const Py_ssize_t *shape,
                         const Py_ssize_t *strides,
                         const Py_ssize_t *geometry)
    int cfp_max_gather_d(double *y, const char *idx, const Py_ssize_t *istr,
                         const char *src, const Py_ssize_t *shape,
                         const Py_ssize_t *strides,
                         const Py_ssize_t *geometry)
    int cfp_max_scatter_h(uint16_t *img, Py_ssize_t hp, Py_ssize_t wp,
                          const char *gy, const Py_ssize_t *gstr,
                          const char *idx, const Py_ssize_t *istr,
                          const Py_ssize_t *shape,
                          const Py_ssize_t *geometry)
    int cfp_max_scatter_f(float *img, Py_ssize_t hp, Py_ssize_t wp,
                          const char *gy, const Py_ssize_t *gstr,
                          const char *idx, const Py_ssize_t *istr,
                          const Py_ssize_t *shape,
                          const Py_ssize_t *geometry)
    int cfp_max_scatter_d(double *img, Py_ssize_t hp, Py_ssize_t wp,
                          const char *gy, const Py_ssize_t *gstr,
                          const char *idx, const Py_ssize_t *istr,
                          const Py_ssize_t *shape,
                          const Py_ssize_t *geometry)

cdef type _ndarray = numpy.ndarray
cdef object _INTP = numpy.dtype(numpy.intp)
# Stock's code calls these through conv_nd at run time; while either is
# replaced (a mock, a user's own), the node's code runs (the registry's
# audit of the entries' callees). The output size is stock's function.
cdef tuple _PATCHES = ((conv_nd, 'im2col_nd_cpu'),
                       (conv_nd, 'get_conv_outsize'))
cdef tuple _SUMS = ((conv_nd, 'col2im_nd_cpu'),)
cdef object _stock_outsize = conv.get_conv_outsize


cdef int float_typenum(object a, int nd):
    """The type number of ``a``, an exact ``numpy.ndarray``, where it is an
    aligned ``nd``-d array of native float16, float32 or float64 (the
    loops load items as C numbers), else -1."""
    if (not numpy_struct_matches() or cfp_nd(a) != nd
            or not cfp_flags(a) & CFP_NPY_ALIGNED):
        return -1
    cdef int typenum = builtin_typenum(a)
    if (typenum == CFP_NPY_HALF or typenum == CFP_NPY_FLOAT
            or typenum == CFP_NPY_DOUBLE):
        return typenum
    return -1


cdef bint pair(object values, long low, Py_ssize_t *out) except -1:
    """Whether ``values`` is a tuple of two plain ints in ``[low, 2**31)``
    (``_geometry.within``); stores them at ``out``."""
    if type(values) is not tuple or len(<tuple>values) != 2:
        return False
    a, b = values
    if not (within(a, low) and within(b, low)):
        return False
    out[0] = a
    out[1] = b
    return True


cdef object padded_image(object gy, object in_shape, Py_ssize_t *g,
                         Py_ssize_t *hp, Py_ssize_t *wp):
    """An empty padded image of ``gy``'s dtype into which the gradient
    ``gy`` (a 4-d ndarray) of the windows ``g[0:6]`` (kh, kw, sy, sx, ph,
    pw) over an input of shape ``in_shape`` sums, as stock's col2im
    makes it (``hp``, ``wp``: its height and width; fills g[6:8] with the
    input's, h and w); None where stock's slices of it would raise or
    broadcast, or the sizes are not plain ints below 2**31."""
    if type(in_shape) is not tuple or len(<tuple>in_shape) != 4:
        return None
    h, w = in_shape[2], in_shape[3]
    cdef Py_ssize_t *dims = cfp_dims(gy)
    if (not (within(h, 0) and within(w, 0)) or gy.size == 0
            or not (within(dims[2], 1) and within(dims[3], 1))):
        return None
    g[6] = h
    g[7] = w
    hp[0] = g[6] + 2 * g[4] + g[2] - 1
    wp[0] = g[7] + 2 * g[5] + g[3] - 1
    if not (fits(g[0], 1, g[2], dims[2], hp[0])
            and fits(g[1], 1, g[3], dims[3], wp[0])):
        return None
    cdef Py_ssize_t shape[4]
    shape[0], shape[1], shape[2], shape[3] = dims[0], dims[1], hp[0], wp[0]
    try:
        return empty(gy.dtype, 4, shape)
    except (MemoryError, ValueError):
        return None     # stock's own allocation raises, as stock does


cdef object grad_of(object result, tuple grad_outputs):
    """The gradient array ``result`` (or NOT_HANDLED) as a backward
    returns it, for the one output gradient ``grad_outputs[0]``."""
    if result is NOT_HANDLED:
        return NOT_HANDLED
    return (new_grad(result, grad_requires_grad(grad_outputs[0])),)


cdef tuple node_calls(object cls):
    """What applying a new ``cls`` node calls, which a compiled backward
    stands for."""
    return ((cls, '__init__'), (cls, 'check_type_forward'),
            (cls, 'forward'), (cls, 'forward_cpu'))


cdef bint _window(object func, Py_ssize_t *g) except -1:
    # Whether ``func`` (a MaxPoolingND) pools two spatial axes with kernels
    # and strides of at least 1 and pads of at least 0, plain ints below
    # 2**31 (``_geometry``); fills g[0:6]: kh, kw, sy, sx, ph, pw.
    ndim = func.ndim
    return (type(ndim) is int and ndim == 2 and pair(func.ksize, 1, g)
            and pair(func.stride, 1, g + 2) and pair(func.pad, 0, g + 4))


cdef bint outputs(object x, Py_ssize_t *g, object cover_all) except -1:
    """Whether stock's im2col takes the windows ``g[0:6]`` (kh, kw, sy, sx,
    ph, pw) of ``x`` (a 4-d ndarray, not empty) without raising, as
    stock's output sizes give them (each in [1, 2**31), every slice of the
    padded image as long); fills g[6:8]: oh, ow."""
    cdef Py_ssize_t *dims = cfp_dims(x)
    if dims[0] == 0 or dims[1] == 0 or dims[2] == 0 or dims[3] == 0:
        return False
    oh = _stock_outsize(dims[2], g[0], g[2], g[4], cover_all)
    ow = _stock_outsize(dims[3], g[1], g[3], g[5], cover_all)
    if not (within(oh, 1) and within(ow, 1)):
        return False    # stock's assertion, or an output too large
    g[6] = oh
    g[7] = ow
    return (fits(g[0], 1, g[2], g[6], dims[2] + 2 * g[4] + g[2] - 1)
            and fits(g[1], 1, g[3], g[7], dims[3] + 2 * g[5] + g[3] - 1))


cdef bint _indexes_fit(object indexes, tuple shape) except -1:
    # Whether ``indexes`` is an exact, aligned intp array of ``shape``, as
    # the forward leaves it (the loops test each index's range).
    return (type(indexes) is _ndarray and indexes.shape == shape
            and builtin_typenum(indexes) == CFP_NPY_LONG
            and cfp_flags(indexes) & CFP_NPY_ALIGNED != 0
            and indexes.itemsize == 8)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # MaxPoolingND.forward_cpu for two spatial axes, without iDeep
    # (compiled entries are left out where iDeep is installed).
    cdef Py_ssize_t g[8]
    if len(inputs) != 1 or not _window(node, g):
        return NOT_HANDLED
    x = inputs[0]
    if type(x) is not _ndarray:
        return NOT_HANDLED
    cdef int typenum = float_typenum(x, 4)
    if typenum < 0 or not outputs(x, g, node.cover_all):
        return NOT_HANDLED
    cdef Py_ssize_t *dims = cfp_dims(x)
    cdef Py_ssize_t shape[4]
    shape[0], shape[1], shape[2], shape[3] = dims[0], dims[1], g[6], g[7]
    try:
        y = empty(x.dtype, 4, shape)
        indexes = empty(_INTP, 4, shape)
    except (MemoryError, ValueError):
        return NOT_HANDLED  # stock's own allocations raise, as stock does
    cdef const char *src = cfp_data(x)
    cdef Py_ssize_t *strides = cfp_strides(x)
    cdef char *dst = cfp_data(y)
    cdef int64_t *idx = <int64_t *>cfp_data(indexes)
    cdef int unsure
    with nogil:
        if typenum == CFP_NPY_HALF:
            unsure = cfp_max_pool_h(<uint16_t *>dst, idx, src, dims,
                                    strides, g)
        elif typenum == CFP_NPY_FLOAT:
            unsure = cfp_max_pool_f(<float *>dst, idx, src, dims, strides, g)
        else:
            unsure = cfp_max_pool_d(<double *>dst, idx, src, dims, strides,
                                    g)
    if unsure:
        return NOT_HANDLED  # a NaN, or zeros of both signs: NumPy's pick
    node._in_shape = x.shape
    node._in_dtype = x.dtype
    node.indexes = indexes
    return y,


cdef object _gradient(object func, object gy):
    # MaxPoolingNDGrad(func).forward_cpu((gy,)), without iDeep: stock's
    # view of the padded image, or NOT_HANDLED.
    cdef Py_ssize_t g[8]
    if type(gy) is not _ndarray or not _window(func, g):
        return NOT_HANDLED
    cdef int typenum = float_typenum(gy, 4)
    in_dtype, indexes = func._in_dtype, func.indexes
    if (typenum < 0 or type(in_dtype) is not type(gy.dtype)
            or in_dtype != gy.dtype     # a cast into the patches
            or not _indexes_fit(indexes, gy.shape)):
        return NOT_HANDLED
    if typenum == CFP_NPY_HALF and (g[2] < g[0] or g[3] < g[1]):
        return NOT_HANDLED  # two float16 additions into one element
    cdef Py_ssize_t hp, wp
    img = padded_image(gy, func._in_shape, g, &hp, &wp)
    if img is None:
        return NOT_HANDLED
    cdef Py_ssize_t *dims = cfp_dims(gy)
    cdef char *dst = cfp_data(img)
    cdef const char *src = cfp_data(gy)
    cdef Py_ssize_t *gstr = cfp_strides(gy)
    cdef const char *idx = cfp_data(indexes)
    cdef Py_ssize_t *istr = cfp_strides(indexes)
    cdef int unsure, raised
    with nogil:
        clear_flags(all_flags())
        if typenum == CFP_NPY_HALF:
            unsure = cfp_max_scatter_h(<uint16_t *>dst, hp, wp, src, gstr,
                                       idx, istr, dims, g)
        elif typenum == CFP_NPY_FLOAT:
            unsure = cfp_max_scatter_f(<float *>dst, hp, wp, src, gstr, idx,
                                       istr, dims, g)
        else:
            unsure = cfp_max_scatter_d(<double *>dst, hp, wp, src, gstr,
                                       idx, istr, dims, g)
        raised = fetestexcept(all_flags())
    if unsure or acts(raised):
        return NOT_HANDLED  # an index out of range, a NaN, or a flag
    return img[:, :, g[4]:g[6] + g[4], g[5]:g[7] + g[5]]


cdef object _gathered(object func, object x):
    # MaxPoolingNDWithIndexes(func).forward_cpu((x,)), or NOT_HANDLED.
    cdef Py_ssize_t g[8]
    if type(x) is not _ndarray or not _window(func, g):
        return NOT_HANDLED
    cdef int typenum = float_typenum(x, 4)
    if typenum < 0 or not outputs(x, g, func.cover_all):
        return NOT_HANDLED
    cdef Py_ssize_t *dims = cfp_dims(x)
    cdef Py_ssize_t shape[4]
    shape[0], shape[1], shape[2], shape[3] = dims[0], dims[1], g[6], g[7]
    indexes = func.indexes
    if not _indexes_fit(indexes, (shape[0], shape[1], shape[2], shape[3])):
        return NOT_HANDLED
    try:
        y = empty(x.dtype, 4, shape)
    except (MemoryError, ValueError):
        return NOT_HANDLED
    cdef const char *src = cfp_data(x)
    cdef Py_ssize_t *strides = cfp_strides(x)
    cdef char *dst = cfp_data(y)
    cdef const char *idx = cfp_data(indexes)
    cdef Py_ssize_t *istr = cfp_strides(indexes)
    cdef int outside
    with nogil:
        if typenum == CFP_NPY_HALF:
            outside = cfp_max_gather_h(<uint16_t *>dst, idx, istr, src, dims,
                                       strides, g)
        elif typenum == CFP_NPY_FLOAT:
            outside = cfp_max_gather_f(<float *>dst, idx, istr, src, dims,
                                       strides, g)
        else:
            outside = cfp_max_gather_d(<double *>dst, idx, istr, src, dims,
                                       strides, g)
    if outside:
        return NOT_HANDLED  # stock's fancy index wraps or raises
    return y


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # MaxPoolingND.backward: MaxPoolingNDGrad(self).apply(gy).
    gy = grad_array(grad_outputs[0]) if len(grad_outputs) == 1 else None
    if gy is None:
        return NOT_HANDLED
    return grad_of(_gradient(func, gy), grad_outputs)


cdef object _grad_forward(object node, tuple inputs, ConfigView config):
    # MaxPoolingNDGrad.forward_cpu.
    if len(inputs) != 1:
        return NOT_HANDLED
    gx = _gradient(node.func, inputs[0])
    return gx if gx is NOT_HANDLED else (gx,)


cdef object _grad_backward(object func, tuple indexes, tuple grad_outputs):
    # MaxPoolingNDGrad.backward: MaxPoolingNDWithIndexes(self.func).apply.
    ggx = grad_array(grad_outputs[0]) if len(grad_outputs) == 1 else None
    if ggx is None:
        return NOT_HANDLED
    return grad_of(_gathered(func.func, ggx), grad_outputs)


cdef object _with_indexes_forward(object node, tuple inputs,
                                  ConfigView config):
    # MaxPoolingNDWithIndexes.forward_cpu.
    if len(inputs) != 1:
        return NOT_HANDLED
    y = _gathered(node.func, inputs[0])
    return y if y is NOT_HANDLED else (y,)


# The check is _PoolingND's; stock's backward reads no retained data.
ENTRIES = (
    forward_callees(compiled(
        max_pooling_nd.MaxPoolingND, _forward, ('forward', 'forward_cpu'),
        _backward, node_calls(max_pooling_nd.MaxPoolingNDGrad) + _SUMS,
        ('ndim',), NULL, -1, ('backward',), pooling_nd._PoolingND),
        _PATCHES),
    forward_callees(compiled(
        max_pooling_nd.MaxPoolingNDGrad, _grad_forward,
        ('forward', 'forward_cpu'), _grad_backward,
        node_calls(max_pooling_nd.MaxPoolingNDWithIndexes) + _PATCHES,
        type_check=None), _SUMS),
    forward_callees(compiled(
        max_pooling_nd.MaxPoolingNDWithIndexes, _with_indexes_forward,
        ('forward', 'forward_cpu'), NULL, (), type_check=None), _PATCHES),
)
