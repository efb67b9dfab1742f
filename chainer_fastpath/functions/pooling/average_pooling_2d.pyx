# cython: boundscheck=True, wraparound=True
"""Compiled ``AveragePooling2D`` (``F.average_pooling_2d``): its forward
and backward on NumPy arrays, and ``AveragePooling2DGrad``'s forward and
backward (double backprop).

Stock's forward copies the zero-padded image's windows into a patch array
(``im2col_cpu``) and takes its ``mean``; here one C loop (``_pooling.h``)
writes the same patch array from the image in place, and NumPy's own
``mean`` runs on it as stock runs it (its sums' order is NumPy's). The
gradient tiles ``gy`` over the kernel, sums the tiles into a padded image
(``col2im_cpu``) and divides the image's view by the kernel's size; here
one C loop makes the same additions and divisions, element by element, in
stock's order, for float32 and float64 (float16's are rounded through
float by NumPy, and stay stock's), and returns stock's view. An image with
a NaN is stock's (which of two NaNs an add keeps is its loop's).
"""
from libc.stdint cimport uint16_t, uint32_t, uint64_t

import numpy

from chainer.functions.pooling import average_pooling_2d
from chainer.functions.pooling import pooling_2d
from chainer.utils import conv

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, all_flags, clear_flags, fetestexcept)
from chainer_fastpath._core._grads cimport grad_array
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_HALF, cfp_data, cfp_dims,
    cfp_strides, empty)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)
from chainer_fastpath._runtime._geometry cimport within
from chainer_fastpath.functions.pooling.max_pooling_nd cimport (
    float_typenum, grad_of, node_calls, outputs, padded_image)

cdef extern from "_pooling.h" nogil:
    void cfp_avg_patches_2(uint16_t *dst, const char *src,
                           const Py_ssize_t *shape,
                           const Py_ssize_t *strides,
                           const Py_ssize_t *geometry)
    void cfp_avg_patches_4(uint32_t *dst, const char *src,
                           const Py_ssize_t *shape,
                           const Py_ssize_t *strides,
                           const Py_ssize_t *geometry)
    void cfp_avg_patches_8(uint64_t *dst, const char *src,
                           const Py_ssize_t *shape,
                           const Py_ssize_t *strides,
                           const Py_ssize_t *geometry)
    int cfp_avg_scatter_f(float *img, Py_ssize_t hp, Py_ssize_t wp,
                          const char *gy, const Py_ssize_t *gstr,
                          const Py_ssize_t *shape,
                          const Py_ssize_t *geometry)
    int cfp_avg_scatter_d(double *img, Py_ssize_t hp, Py_ssize_t wp,
                          const char *gy, const Py_ssize_t *gstr,
                          const Py_ssize_t *shape,
                          const Py_ssize_t *geometry)

cdef type _ndarray = numpy.ndarray
cdef tuple _AXES = (2, 3)
# Stock's code calls these through conv at run time; while one is
# replaced (a mock, a user's own), the node's code runs (the registry's
# audit of the entries' callees). The output sizes are stock's
# (max_pooling_nd.outputs).
cdef tuple _PATCHES = ((conv, 'im2col_cpu'), (conv, 'get_conv_outsize'))
cdef tuple _SUMS = ((conv, 'col2im_cpu'),)
# Kernel sizes whose count ``kh * kw`` float32 holds exactly: stock's
# division by it is C's.
cdef Py_ssize_t _EXACT_COUNT = 1 << 24


cdef bint _window(object node, Py_ssize_t *g) except -1:
    # Whether the node's kernel and strides are at least 1 and its pads at
    # least 0, plain ints below 2**31 (``_geometry``); fills g[0:6]: kh,
    # kw, sy, sx, ph, pw (Pooling2D's and AveragePooling2DGrad's names).
    kh, kw, sy, sx, ph, pw = (node.kh, node.kw, node.sy, node.sx, node.ph,
                              node.pw)
    if not (within(kh, 1) and within(kw, 1) and within(sy, 1)
            and within(sx, 1) and within(ph, 0) and within(pw, 0)):
        return False
    g[0], g[1], g[2], g[3], g[4], g[5] = kh, kw, sy, sx, ph, pw
    return True


cdef object _averages(Py_ssize_t *g, object x):
    # The patch array im2col_cpu makes of x for the geometry g[0:6] (fills
    # g[6:8]: oh, ow), or NOT_HANDLED where it would raise.
    if type(x) is not _ndarray:
        return NOT_HANDLED
    cdef int typenum = float_typenum(x, 4)
    if typenum < 0 or not outputs(x, g, False):     # without cover_all
        return NOT_HANDLED
    cdef Py_ssize_t *dims = cfp_dims(x)
    cdef Py_ssize_t shape[6]
    shape[0], shape[1], shape[2] = dims[0], dims[1], g[0]
    shape[3], shape[4], shape[5] = g[1], g[6], g[7]
    try:
        col = empty(x.dtype, 6, shape)
    except (MemoryError, ValueError):
        return NOT_HANDLED  # stock's own allocations raise, as stock does
    cdef const char *src = cfp_data(x)
    cdef Py_ssize_t *strides = cfp_strides(x)
    cdef char *dst = cfp_data(col)
    with nogil:
        if typenum == CFP_NPY_HALF:
            cfp_avg_patches_2(<uint16_t *>dst, src, dims, strides, g)
        elif typenum == CFP_NPY_FLOAT:
            cfp_avg_patches_4(<uint32_t *>dst, src, dims, strides, g)
        else:
            cfp_avg_patches_8(<uint64_t *>dst, src, dims, strides, g)
    return col


cdef object _forward(object node, tuple inputs, ConfigView config):
    # AveragePooling2D.forward_cpu, without iDeep (compiled entries are
    # left out where iDeep is installed).
    cdef Py_ssize_t g[8]
    if len(inputs) != 1 or not _window(node, g):
        return NOT_HANDLED
    x = inputs[0]
    col = _averages(g, x)
    if col is NOT_HANDLED:
        return NOT_HANDLED
    node._in_shape = x.shape
    node._in_dtype = x.dtype
    # NumPy's mean, as stock calls it: its sums and its floating-point
    # exceptions (acted on from NumPy's own frame) are stock's.
    return col.mean(axis=_AXES),


cdef object _gradient(object node, Py_ssize_t *g, object gy):
    # AveragePooling2DGrad.forward_cpu((gy,)) for the geometry g[0:6] and
    # the node's input shape, without iDeep: stock's view of the padded
    # image, or NOT_HANDLED.
    if type(gy) is not _ndarray:
        return NOT_HANDLED
    cdef int typenum = float_typenum(gy, 4)
    if typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE:
        return NOT_HANDLED  # float16: NumPy's sums round through float
    if g[0] * g[1] > _EXACT_COUNT:
        return NOT_HANDLED
    cdef Py_ssize_t hp, wp
    img = padded_image(gy, node._in_shape, g, &hp, &wp)
    if img is None:
        return NOT_HANDLED
    cdef Py_ssize_t *dims = cfp_dims(gy)
    cdef char *dst = cfp_data(img)
    cdef const char *src = cfp_data(gy)
    cdef Py_ssize_t *gstr = cfp_strides(gy)
    cdef int nan, raised
    with nogil:
        clear_flags(all_flags())
        if typenum == CFP_NPY_FLOAT:
            nan = cfp_avg_scatter_f(<float *>dst, hp, wp, src, gstr, dims, g)
        else:
            nan = cfp_avg_scatter_d(<double *>dst, hp, wp, src, gstr, dims,
                                    g)
        raised = fetestexcept(all_flags())
    if nan or acts(raised):
        return NOT_HANDLED  # which NaN an add keeps is stock loop's
    return img[:, :, g[4]:g[6] + g[4], g[5]:g[7] + g[5]]


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # AveragePooling2D.backward: AveragePooling2DGrad(self).apply(gy), whose
    # __init__ reads the node's geometry, _used_cudnn and input shape.
    cdef Py_ssize_t g[8]
    gy = grad_array(grad_outputs[0]) if len(grad_outputs) == 1 else None
    if gy is None or func._used_cudnn is not False or not _window(func, g):
        return NOT_HANDLED
    return grad_of(_gradient(func, g, gy), grad_outputs)


cdef object _grad_forward(object node, tuple inputs, ConfigView config):
    # AveragePooling2DGrad.forward_cpu.
    cdef Py_ssize_t g[8]
    if len(inputs) != 1 or not _window(node, g):
        return NOT_HANDLED
    gx = _gradient(node, g, inputs[0])
    return gx if gx is NOT_HANDLED else (gx,)


cdef object _grad_backward(object func, tuple indexes, tuple grad_outputs):
    # AveragePooling2DGrad.backward: AveragePooling2D((kh, kw), (sy, sx),
    # (ph, pw), False).apply(ggx), a node of the grad node's geometry.
    cdef Py_ssize_t g[8]
    ggx = grad_array(grad_outputs[0]) if len(grad_outputs) == 1 else None
    if ggx is None or not _window(func, g):
        return NOT_HANDLED
    col = _averages(g, ggx)
    if col is NOT_HANDLED:
        return NOT_HANDLED
    return grad_of(col.mean(axis=_AXES), grad_outputs)


# The check is Pooling2D's; stock's backward reads no retained data.
ENTRIES = (
    forward_callees(compiled(
        average_pooling_2d.AveragePooling2D, _forward,
        ('forward', 'forward_cpu'), _backward,
        node_calls(average_pooling_2d.AveragePooling2DGrad) + _SUMS,
        (), NULL, -1, ('backward',), pooling_2d.Pooling2D), _PATCHES),
    forward_callees(compiled(
        average_pooling_2d.AveragePooling2DGrad, _grad_forward,
        ('forward', 'forward_cpu'), _grad_backward,
        node_calls(average_pooling_2d.AveragePooling2D) + _PATCHES,
        type_check=None), _SUMS),
)
