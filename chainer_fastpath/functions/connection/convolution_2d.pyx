# cython: boundscheck=True, wraparound=True
"""Compiled ``Convolution2DFunction`` and ``Convolution2DGradW`` forwards on
NumPy arrays (one group), ``im2col``, and ``Convolution2DFunction``'s
backward (with what ``Deconvolution2DFunction``'s shares: the operands,
the bias's gradient, the callees).

Stock's CPU convolution makes its patches with ``im2col_cpu`` (a padded
copy of the input, then one strided copy per kernel position into an
array laid out ``(n, c, kh, kw, out_h, out_w)``), and ``numpy.tensordot``
then copies them once more into the ``(n * out_h * out_w, c * kh * kw)``
matrix it hands to BLAS; the weight gradient copies them a third time.
Here the patches are written once, by one pass in C, straight into that
matrix's order: the array handed to ``tensordot`` has stock's shape and
values, and is a view whose transposes ``tensordot`` reshapes without a
copy. BLAS is called with the same matrices as stock's, so the results
are stock's bit for bit; the two large copies and their fresh pages are
saved. For a batch of one, stock's ``tensordot`` needs no copy either:
its matrix is a view in the other memory order, which BLAS may sum in
another order (OpenBLAS's small-matrix kernels for AVX-512 do), so stock's
code runs.
"""
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport uint16_t, uint32_t, uint64_t

import numpy

import chainer.functions
from chainer.functions.connection import convolution_2d
from chainer.functions.connection import deconvolution_2d
from chainer.functions.math import sum as sum_mod
from chainer.utils import argument
from chainer.utils import conv

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_into
from chainer_fastpath._core._grads cimport (
    grad_array, grad_layout, grad_raw, grad_requires_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_HALF,
    builtin_typenum, cfp_data, cfp_dims, cfp_flags, cfp_strides, empty,
    numpy_struct_matches)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)
from chainer_fastpath._core._retained cimport (
    requires_grad_of, retained_inputs)
from chainer_fastpath._runtime._geometry cimport (
    strides_ok, within)

cdef type _ndarray = numpy.ndarray
cdef object _np_add = numpy.add
cdef object _numpy = numpy
cdef object _conv = conv
# Stock's forwards call these through their module at run time; while
# either is replaced (a mock, a user's own), the node's code runs:
# im2col_cpu is the entries' forward callee (the registry's audit), the
# output size is checked here (stock's type checks call it too, and their
# passes are cached patched: a replacement is not called as often there).
cdef tuple _HELPERS = ((conv, 'im2col_cpu'),)
cdef object _stock_outsize = conv.get_conv_outsize
cdef type _Sum = sum_mod.Sum
cdef type _Deconvolution2DFunction = deconvolution_2d.Deconvolution2DFunction
cdef type _Convolution2DGradW = convolution_2d.Convolution2DGradW
# What both backwards call besides their input gradient's node: W's
# gradient node, and F.sum for b's.
cdef tuple _GRAD_CALLEES = (
    (convolution_2d.Convolution2DGradW, '__init__'),
    (convolution_2d.Convolution2DGradW, 'check_type_forward'),
    (convolution_2d.Convolution2DGradW, 'forward'),
    (convolution_2d.Convolution2DGradW, 'forward_cpu'),
    (convolution_2d.Convolution2DGradW, 'retain_inputs'),
    (convolution_2d.Convolution2DGradW, '_forward_cpu_core'),
    (conv, 'im2col_cpu'),
    (chainer.functions, 'sum'),
    (sum_mod.Sum, '__init__'),
    (sum_mod.Sum, 'check_type_forward'),
    (sum_mod.Sum, 'forward'))


cdef inline bint _stock_outsize_found():
    return _conv.get_conv_outsize is _stock_outsize

cdef extern from "_im2col.h" nogil:
    void cfp_im2col_2(uint16_t *dst, const char *src, const Py_ssize_t *shape,
                      const Py_ssize_t *strides, const Py_ssize_t *geometry,
                      const Py_ssize_t *offsets)
    void cfp_im2col_4(uint32_t *dst, const char *src, const Py_ssize_t *shape,
                      const Py_ssize_t *strides, const Py_ssize_t *geometry,
                      const Py_ssize_t *offsets)
    void cfp_im2col_8(uint64_t *dst, const char *src, const Py_ssize_t *shape,
                      const Py_ssize_t *strides, const Py_ssize_t *geometry,
                      const Py_ssize_t *offsets)


cdef object im2col(object x, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sy,
                   Py_ssize_t sx, Py_ssize_t ph, Py_ssize_t pw, bint cover_all,
                   Py_ssize_t dy, Py_ssize_t dx):
    """``conv.im2col_cpu(x, ...)``'s values, shape and dtype, as a
    transposed view of a C-ordered ``(n, out_h, out_w, c, kh, kw)`` array;
    None where ``x`` is not a 4-d ``numpy.ndarray`` of a native half, single
    or double dtype, or ``im2col_cpu`` would raise."""
    if (not numpy_struct_matches() or type(x) is not _ndarray or x.ndim != 4
            or not cfp_flags(x) & CFP_NPY_ALIGNED):
        return None     # the loop loads items as C integers: aligned only
    cdef int typenum = builtin_typenum(x)
    if (typenum != CFP_NPY_HALF and typenum != CFP_NPY_FLOAT
            and typenum != CFP_NPY_DOUBLE):
        return None
    cdef Py_ssize_t *shape = cfp_dims(x)
    cdef Py_ssize_t oh = _stock_outsize(shape[2], kh, sy, ph, cover_all, dy)
    cdef Py_ssize_t ow = _stock_outsize(shape[3], kw, sx, pw, cover_all, dx)
    if oh <= 0 or ow <= 0:
        return None     # stock's assertion
    cdef Py_ssize_t dims[6]
    dims[0], dims[1], dims[2] = shape[0], oh, ow
    dims[3], dims[4], dims[5] = shape[1], kh, kw
    try:
        buffer = empty(x.dtype, 6, dims)
    except (MemoryError, ValueError):
        return None     # stock's own allocations raise, as stock does
    cdef Py_ssize_t geometry[10]
    geometry[:] = [kh, kw, sy, sx, ph, pw, dy, dx, oh, ow]
    cdef const char *src = cfp_data(x)
    cdef char *dst = cfp_data(buffer)
    cdef Py_ssize_t *strides = cfp_strides(x)
    cdef Py_ssize_t ky, kx
    cdef Py_ssize_t *offsets = <Py_ssize_t *>PyMem_Malloc(
        max(kh * kw, 1) * sizeof(Py_ssize_t))
    if offsets is NULL:
        raise MemoryError()
    for ky in range(kh):
        for kx in range(kw):
            offsets[ky * kw + kx] = ky * dy * strides[2] + kx * dx * strides[3]
    try:
        with nogil:
            if typenum == CFP_NPY_HALF:
                cfp_im2col_2(<uint16_t *>dst, src, shape, strides, geometry,
                             offsets)
            elif typenum == CFP_NPY_FLOAT:
                cfp_im2col_4(<uint32_t *>dst, src, shape, strides, geometry,
                             offsets)
            else:
                cfp_im2col_8(<uint64_t *>dst, src, shape, strides, geometry,
                             offsets)
    finally:
        PyMem_Free(offsets)
    return buffer.transpose(0, 3, 4, 5, 1, 2)


cdef inline bint _any_one(Py_ssize_t a, Py_ssize_t b, Py_ssize_t c):
    # A product with a dimension of 1: NumPy's ``dot`` picks its BLAS call
    # from the operands' strides, which a dimension of 1 leaves free, and
    # the view handed here need not have the strides of stock's copy: a
    # matrix-vector product may then sum in another order.
    return a == 1 or b == 1 or c == 1


cdef inline bint _batch_of_one(object x):
    return type(x) is _ndarray and x.ndim == 4 and x.shape[0] == 1


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Convolution2DFunction.forward_cpu for one group, without iDeep
    # (compiled entries are left out where iDeep is installed).
    if node.cudnn_fast or node.groups != 1 or not 2 <= len(inputs) <= 3:
        return NOT_HANDLED   # stock's errors, and grouped convolutions
    # Stock retains them before anything below can raise.
    retain_inputs(node, (0, 1))
    if not _stock_outsize_found() or not strides_ok(node):
        return NOT_HANDLED
    x, W = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) == 3 else None
    if (type(W) is not _ndarray or W.ndim != 4 or W.dtype != x.dtype
            or (b is not None and (type(b) is not _ndarray
                                   or b.dtype != x.dtype))):
        return NOT_HANDLED   # a cast after the product, which may warn
    if _batch_of_one(x):
        return NOT_HANDLED   # see the module's text
    kh, kw = W.shape[2:]
    if not (within(kh, 1) and within(kw, 1)):
        return NOT_HANDLED
    col = im2col(x, kh, kw, node.sy, node.sx, node.ph, node.pw,
                 node.cover_all, node.dy, node.dx)
    if col is None:
        return NOT_HANDLED
    n, c, _, _, oh, ow = col.shape
    if _any_one(n * oh * ow, c * kh * kw, W.shape[0]):
        return NOT_HANDLED
    # dot acts on no floating-point exception; the bias's add does.
    y = _numpy.tensordot(col, W, ((1, 2, 3), (1, 2, 3)))
    cdef int raised = 0
    if b is not None:
        quiet_into(_np_add, y, b, y, &raised)
        if acts(raised):
            return NOT_HANDLED
    return _numpy.rollaxis(y, 3, 1),


cdef object _grad_w_forward(object node, tuple inputs, ConfigView config):
    # Convolution2DGradW.forward_cpu for one group, without iDeep.
    if node.groups != 1 or len(inputs) != 2:
        return NOT_HANDLED
    retain_inputs(node, (0, 1))     # as stock, before anything can raise
    if (not _stock_outsize_found() or not strides_ok(node)
            or not (within(node.kh, 1) and within(node.kw, 1))):
        return NOT_HANDLED
    x, gy = inputs
    if (type(gy) is not _ndarray or gy.dtype != x.dtype
            or x.dtype != node.W_dtype):
        return NOT_HANDLED   # a cast after the product, which may warn
    if (not (gy.flags.c_contiguous or gy.flags.f_contiguous)
            and 1 in gy.shape):
        gy = _numpy.ascontiguousarray(gy)   # as stock, for NumPy's sake
    if _batch_of_one(x):
        return NOT_HANDLED   # see the module's text
    col = im2col(x, node.kh, node.kw, node.sy, node.sx, node.ph, node.pw,
                 node.cover_all, node.dy, node.dx)
    if col is None:
        return NOT_HANDLED
    n, c, kh, kw, oh, ow = col.shape
    if _any_one(gy.shape[1], n * oh * ow, c * kh * kw):
        return NOT_HANDLED
    gW = _numpy.tensordot(gy, col, ((0, 2, 3), (0, 4, 5)))
    return gW,


cdef tuple grad_operands(object func, tuple grad_outputs):
    """``(x, W, gy, gy's requires_grad)`` of a convolution's or a
    deconvolution's backward: the retained inputs 0 and 1, 4-d NumPy
    arrays, and the output gradient's array; None where stock sees
    anything else (a layout, a missing array)."""
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if (gy is None or grad_layout(gy_var) is not None
            or func._input_indexes_to_retain != (0, 1)):
        return None
    layouts = func._input_layouts
    if type(layouts) is not tuple or not 2 <= len(layouts) <= 3:
        return None
    for layout in layouts:
        if layout is not None:
            return None
    xs = retained_inputs(func, [])
    if xs is None or xs[0].ndim != 4 or xs[1].ndim != 4:
        return None
    return xs[0], xs[1], gy, grad_requires_grad(gy_var)


cdef object bias_grad(object gy, bint requires_grad):
    """``F.sum(gy, axis=(0, 2, 3))``: a Sum node applied detached."""
    return apply_detached(_Sum((0, 2, 3), False), (gy,), requires_grad)[0]


cdef tuple grad_callees():
    """The ``backward_callees`` the two backwards share."""
    return _GRAD_CALLEES


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Convolution2DFunction.backward: x's gradient F.deconvolution_2d(gy, W,
    # ...), W's Convolution2DGradW(...).apply((x, gy)), b's F.sum(gy,
    # axis=(0, 2, 3)); the nodes built as stock builds them and applied
    # detached (stock's type checks; the registry's forwards, else their
    # own), in stock's order.
    args = grad_operands(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    x, W, gy, gy_rg = args
    inputs = func.inputs
    cdef list ret = []
    if 0 in indexes:
        node = _Deconvolution2DFunction(
            (func.sy, func.sx), (func.ph, func.pw), x.shape[2:],
            dilate=(func.dy, func.dx), groups=func.groups)
        gx = apply_detached(node, (gy, W),
                            gy_rg or requires_grad_of(inputs[1]))[0]
        assert grad_raw(gx).shape == x.shape
        ret.append(gx)
    if 1 in indexes:
        node = _Convolution2DGradW(func, W.shape, W.dtype, None)
        ret.append(apply_detached(node, (x, gy),
                                  requires_grad_of(inputs[0]) or gy_rg)[0])
    if 2 in indexes:
        ret.append(bias_grad(gy, gy_rg))
    return ret


ENTRIES = (
    forward_callees(compiled(
        convolution_2d.Convolution2DFunction, _forward,
        ('forward', 'forward_cpu', '_check_input_layouts_all_standard',
         'retain_inputs', '_forward_cpu_core'),
        _backward, backward_callees=(
            (chainer.functions, 'deconvolution_2d'),
            (argument, 'check_unexpected_kwargs'),
            (deconvolution_2d.Deconvolution2DFunction, '__init__'),
            (deconvolution_2d.Deconvolution2DFunction, 'check_type_forward'),
            (deconvolution_2d.Deconvolution2DFunction, 'forward'),
            (deconvolution_2d.Deconvolution2DFunction, 'forward_cpu'),
            (deconvolution_2d.Deconvolution2DFunction, 'retain_inputs'),
            (deconvolution_2d.Deconvolution2DFunction, '_forward_cpu_core'),
            (conv, 'col2im_cpu')) + _GRAD_CALLEES,
        type_check=('groups',)), _HELPERS),
    forward_callees(compiled(
        convolution_2d.Convolution2DGradW, _grad_w_forward,
        ('forward', 'forward_cpu', 'retain_inputs', '_forward_cpu_core'),
        NULL, (), type_check=()), _HELPERS),
)
