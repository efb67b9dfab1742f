# cython: boundscheck=True, wraparound=True
"""Compiled ``Deconvolution2DFunction`` forward on NumPy arrays (one group,
float32 or float64), and its backward.

Stock sums the product's patches into a zeroed padded image with one
strided pass over the whole image per kernel position (``col2im_cpu``).
Here one C loop makes the same additions in the same order, element by
element, a plane at a time, into an image of stock's padded shape, and
returns stock's view of it: same values, same strides. An image with a
NaN is left to stock (which of two NaNs an add keeps depends on the
order the compiler gives its operands).
"""
import numpy

import chainer.functions
from chainer.functions.connection import convolution_2d
from chainer.functions.connection import deconvolution_2d
from chainer.utils import conv

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, all_flags, clear_flags, fetestexcept, quiet_into)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, builtin_typenum, cfp_c_aligned, cfp_data,
    empty, numpy_struct_matches)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)
from chainer_fastpath._core._retained cimport requires_grad_of
from chainer_fastpath._runtime._geometry cimport (
    fits, strides_ok, within)
from chainer_fastpath.functions.connection.convolution_2d cimport (
    bias_grad, grad_callees, grad_operands)

cdef extern from "_im2col.h" nogil:
    int cfp_col2im_f(float *img, const float *col, Py_ssize_t N,
                     Py_ssize_t C, Py_ssize_t hp, Py_ssize_t wp,
                     const Py_ssize_t *geometry)
    int cfp_col2im_d(double *img, const double *col, Py_ssize_t N,
                     Py_ssize_t C, Py_ssize_t hp, Py_ssize_t wp,
                     const Py_ssize_t *geometry)

cdef type _ndarray = numpy.ndarray
cdef object _np_add = numpy.add
cdef object _numpy = numpy
# Stock's forward calls these through their module at run time; while
# either is replaced (a mock, a user's own), the node's code runs (the
# registry's audit of the entry's forward callees).
cdef tuple _HELPERS = ((conv, 'col2im_cpu'), (conv, 'get_deconv_outsize'))


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Deconvolution2DFunction.forward_cpu for one group, without iDeep
    # (compiled entries are left out where iDeep is installed).
    if node.groups != 1 or not 2 <= len(inputs) <= 3:
        return NOT_HANDLED
    x, W = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) == 3 else None
    if (not numpy_struct_matches() or type(x) is not _ndarray
            or type(W) is not _ndarray or x.ndim != 4 or W.ndim != 4):
        return NOT_HANDLED
    cdef int typenum = builtin_typenum(x)
    if ((typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE)
            or W.dtype != x.dtype
            or (b is not None and (type(b) is not _ndarray
                                   or b.dtype != x.dtype))):
        return NOT_HANDLED   # float16's rounding, or a cast that may warn
    retain_inputs(node, (0, 1))     # as stock, before anything can raise
    node._calc_out_size(x.shape, W.shape)   # stock's, with its errors
    # The loop's indices are in bounds only for this geometry (_geometry).
    if not (strides_ok(node) and within(node.outh, 1)
            and within(node.outw, 1) and within(W.shape[2], 1)
            and within(W.shape[3], 1) and within(x.shape[2], 0)
            and within(x.shape[3], 0)):
        return NOT_HANDLED
    cdef Py_ssize_t N = x.shape[0], ih = x.shape[2], iw = x.shape[3]
    cdef Py_ssize_t C = W.shape[1], kh = W.shape[2], kw = W.shape[3]
    cdef Py_ssize_t sy = node.sy, sx = node.sx, ph = node.ph, pw = node.pw
    cdef Py_ssize_t dy = node.dy, dx = node.dx
    cdef Py_ssize_t h = node.outh, w = node.outw
    cdef Py_ssize_t hp = h + 2 * ph + sy - 1, wp = w + 2 * pw + sx - 1
    if not (fits(kh, dy, sy, ih, hp) and fits(kw, dx, sx, iw, wp)):
        return NOT_HANDLED
    col = _numpy.tensordot(W, x, (0, 1))
    # Looked up per call, as stock does: a replacement (a function hook may
    # install one) need not return an array.
    if (type(col) is not _ndarray or not col.flags.c_contiguous
            or col.dtype != x.dtype or col.shape != (C, kh, kw, N, ih, iw)):
        return NOT_HANDLED
    if not cfp_c_aligned(col):
        # The loop loads items as C floats, aligned only. NumPy's
        # tensordot makes aligned arrays, and one a hook rebinds sends the
        # node to stock before this (_fast_call); a replacement the audit
        # cannot see (rebound from another thread) may not: copied, it is
        # still called once, as stock calls it.
        col = col.copy()
    cdef Py_ssize_t dims[4]
    dims[0], dims[1], dims[2], dims[3] = N, C, hp, wp
    try:
        img = empty(x.dtype, 4, dims)
    except (MemoryError, ValueError):
        return NOT_HANDLED  # stock's own allocation raises, as stock does
    cdef Py_ssize_t geometry[8]
    geometry[:] = [kh, kw, sy, sx, dy, dx, ih, iw]
    cdef char *dst = cfp_data(img)
    cdef const char *src = cfp_data(col)
    cdef int raised, nan
    with nogil:
        clear_flags(all_flags())
        if typenum == CFP_NPY_FLOAT:
            nan = cfp_col2im_f(<float *>dst, <const float *>src, N, C, hp,
                               wp, geometry)
        else:
            nan = cfp_col2im_d(<double *>dst, <const double *>src, N, C, hp,
                               wp, geometry)
        raised = fetestexcept(all_flags())
    if nan or acts(raised):
        return NOT_HANDLED   # which NaN an add keeps is stock loop's
    y = img[:, :, ph:h + ph, pw:w + pw]
    if b is not None:
        raised = 0
        quiet_into(_np_add, y, b.reshape((1, b.size, 1, 1)), y, &raised)
        if acts(raised):
            return NOT_HANDLED
    return y,


cdef type _Convolution2DFunction = convolution_2d.Convolution2DFunction
cdef type _Convolution2DGradW = convolution_2d.Convolution2DGradW


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Deconvolution2DFunction.backward, as convolution_2d.pyx's _backward:
    # F.convolution_2d(gy, W, ...) for x, Convolution2DGradW(...).apply((gy,
    # x)) for W. The node's own _set_cover_all sets its cover_all, as in
    # stock.
    args = grad_operands(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    cdef list ret = []
    x, W, gy, gy_rg = args
    inputs = func.inputs
    if 0 in indexes:
        if func.cover_all is None:
            func._set_cover_all(x.shape, W.shape)
        node = _Convolution2DFunction(
            (func.sy, func.sx), (func.ph, func.pw), func.cover_all,
            dilate=(func.dy, func.dx), groups=func.groups, cudnn_fast=False)
        ret.append(apply_detached(node, (gy, W),
                                  gy_rg or requires_grad_of(inputs[1]))[0])
    if 1 in indexes:
        if func.cover_all is None:
            # Stock hands it the retained Variables, not their shapes.
            func._set_cover_all(*func.get_retained_inputs())
        node = _Convolution2DGradW(func, W.shape, W.dtype, None)
        ret.append(apply_detached(node, (gy, x),
                                  gy_rg or requires_grad_of(inputs[0]))[0])
    if 2 in indexes:
        ret.append(bias_grad(gy, gy_rg))
    return ret


ENTRIES = (
    forward_callees(compiled(
        deconvolution_2d.Deconvolution2DFunction, _forward,
        ('forward', 'forward_cpu', 'retain_inputs', '_calc_out_size',
         '_forward_cpu_core'),
        _backward, backward_callees=(
            (chainer.functions, 'convolution_2d'),
            (convolution_2d.Convolution2DFunction, '__init__'),
            (convolution_2d.Convolution2DFunction, 'check_type_forward'),
            (convolution_2d.Convolution2DFunction, 'forward'),
            (convolution_2d.Convolution2DFunction, 'forward_cpu'),
            (convolution_2d.Convolution2DFunction,
             '_check_input_layouts_all_standard'),
            (convolution_2d.Convolution2DFunction, 'retain_inputs'),
            (convolution_2d.Convolution2DFunction, '_forward_cpu_core'))
        + grad_callees(),
        type_check=('outh', 'outw', 'sy', 'sx', 'ph', 'pw', 'dy', 'dx',
                    'groups')), _HELPERS),
)
