# cython: boundscheck=True, wraparound=True
"""Compiled ``Concat``: forward and backward on NumPy arrays, and
``F.concat``."""
import numpy

import chainer.functions
from chainer.functions.array import concat
from chainer.functions.array import split_axis

from libc.string cimport memcpy

from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    builtin_typenum, canonical, cfp_data, cfp_descr_of, cfp_dims, cfp_elsize,
    cfp_nd, cfp_strides, numpy_struct_matches, new_shaped)
from chainer_fastpath._core._objects cimport bare
from chainer_fastpath._core._registry cimport NOT_HANDLED, checked, compiled
from chainer_fastpath._runtime._public cimport Public

cdef object _concatenate = numpy.concatenate
cdef type _ndarray = numpy.ndarray


cdef object _forward(object node, tuple xs, ConfigView config):
    # Concat.forward, iDeep unavailable.
    axis = node.axis
    y = _concatenated(xs, axis)
    if y is None:
        y = _concatenate(xs, axis)
    return y,


cdef bint _c_ordered(object a, Py_ssize_t elsize):
    """Whether the strides of ``a``, which has no empty dimension, are
    exactly those of a new C-ordered array of its shape."""
    cdef int k
    cdef Py_ssize_t expected = elsize
    cdef Py_ssize_t *dims = cfp_dims(a)
    cdef Py_ssize_t *strides = cfp_strides(a)
    for k in range(cfp_nd(a) - 1, -1, -1):
        if strides[k] != expected:
            return False
        expected *= dims[k]
    return True


cdef object _concatenated(tuple xs, object axis):
    """``numpy.concatenate(xs, axis)`` where every input is a non-empty
    C-ordered ndarray of one builtin numeric dtype: the C-ordered output
    NumPy makes for such inputs, each input's block copied into it per
    index before ``axis``. None where NumPy must decide (other inputs, and
    every error)."""
    cdef Py_ssize_t n = len(xs), i, k, ax, outer = 1, row, size
    cdef Py_ssize_t dims[32]
    cdef int nd
    if n == 0 or type(axis) is not int or not numpy_struct_matches():
        return None
    x0 = xs[0]
    if type(x0) is not _ndarray or not canonical(x0):
        return None
    nd = cfp_nd(x0)
    if nd == 0 or nd > 32 or not -nd <= axis < nd:
        return None
    ax = axis
    if ax < 0:
        ax += nd
    cdef void *descr = cfp_descr_of(x0)
    cdef Py_ssize_t elsize = cfp_elsize(x0)
    for k in range(nd):
        dims[k] = 0 if k == ax else cfp_dims(x0)[k]
    for i in range(n):
        x = xs[i]
        if (type(x) is not _ndarray or cfp_descr_of(x) != descr
                or cfp_nd(x) != nd):
            return None
        for k in range(nd):
            if cfp_dims(x)[k] == 0 or (k != ax
                                       and cfp_dims(x)[k] != dims[k]):
                return None
        if not _c_ordered(x, elsize):
            return None
        dims[ax] += cfp_dims(x)[ax]
    y = new_shaped(x0, nd, dims)
    if y is None:
        return None
    row = elsize
    for k in range(nd):
        if k < ax:
            outer *= dims[k]
        elif k > ax:
            row *= dims[k]
    cdef char *dst = cfp_data(y)
    cdef Py_ssize_t o
    for o in range(outer):
        for i in range(n):
            x = xs[i]
            size = cfp_dims(x)[ax] * row
            memcpy(dst, cfp_data(x) + o * size, size)
            dst += size
    return y


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Concat.backward: F.split_axis(gy, sizes, axis), sizes the cumulative
    # input sizes along axis (a NumPy integer array): a SplitAxis node whose
    # type check passes (checked below) and whose forward, numpy.split,
    # returns the views of gy between [0] + list(sizes) + [n]. The same
    # views are taken here, the offsets summed as Python integers.
    inputs = func.inputs
    if len(inputs) == 1:
        return grad_outputs
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    axis = func.axis
    if gy is None or type(axis) is not int:
        return NOT_HANDLED
    cdef Py_ssize_t ndim = gy.ndim
    cdef Py_ssize_t ax = axis
    cdef Py_ssize_t i, n_in = len(inputs)
    cdef list points = [0]
    total = 0
    for i in range(n_in - 1):
        total = total + inputs[i].shape[ax]
        points.append(total)
    # SplitAxis's check: gy.ndim > axis, gy.shape[axis] >= sizes[-1].
    if not ndim > ax:
        return NOT_HANDLED
    if ax < 0:
        ax += ndim
        if ax < 0:
            return NOT_HANDLED
    n = gy.shape[ax]
    if not n >= total:
        return NOT_HANDLED
    points.append(n)
    cdef tuple lead = (slice(None),) * ax
    cdef bint rg = grad_requires_grad(gy_var)
    cdef list ret = []
    for i in range(n_in):
        view = gy[lead + (slice(points[i], points[i + 1]),)]
        ret.append(new_grad(view, rg))
    return tuple(ret)


# -- F.concat ----------------------------------------------------------------

TARGETS = ((concat, 'concat'), (chainer.functions, 'concat'))

cdef Public _concat = Public('concat.concat', concat, ('xs', 'axis'), (1,))
cdef type _Concat = concat.Concat
cdef StockMethods _concat_init = StockMethods(_Concat, ('__init__',))


def bind(owner, attribute, original):
    """Keeps stock's ``concat`` to fall back to; returns its
    replacement."""
    return _concat.bind(concat_, original)


def concat_(*args, **kwargs):
    """Drop-in for ``F.concat``: ``y, = Concat(axis).apply(xs)``, the class
    read from its module as stock reads it, and for stock's Concat and an
    int axis the instance its ``__init__`` leaves built here."""
    cdef tuple values = _concat.arguments(args, kwargs)
    if values is not None:
        xs, axis = values
        cls = _concat.read_global('Concat')
        if cls is not None:
            if (cls is _Concat and type(axis) is int
                    and _concat_init.on_class()):
                node = bare(_Concat)
                node.axis = axis
            else:
                node = cls(axis)
            y = _concat.apply(node, xs)
            if y is not None:
                return y
    return _concat.stock(args, kwargs)


cdef bint _check(object node, tuple xs) except -1:
    # Concat.check_type_forward: -ndim <= axis < ndim for the first input,
    # and every other of its dtype, its ndim and its shape but along
    # axis % ndim. A dtype equal by other means than one type number is
    # left to stock's check.
    cdef Py_ssize_t n = len(xs), i
    if n == 0 or not numpy_struct_matches():
        return False
    axis = node.axis
    x0 = xs[0]
    if type(axis) is not int or type(x0) is not _ndarray:
        return False
    cdef int nd = cfp_nd(x0), d
    if not -nd <= axis < nd:
        return False
    cdef int ax = <int>(axis % nd)
    cdef int num = builtin_typenum(x0)
    if num < 0:
        return False
    cdef Py_ssize_t *dims0 = cfp_dims(x0)
    cdef Py_ssize_t *dims
    for i in range(1, n):
        x = xs[i]
        if (type(x) is not _ndarray or cfp_nd(x) != nd
                or builtin_typenum(x) != num):
            return False
        dims = cfp_dims(x)
        for d in range(nd):
            if d != ax and dims[d] != dims0[d]:
                return False
    return True


ENTRIES = (
    checked(compiled(
        concat.Concat, _forward, ('forward',),
        _backward, backward_callees=(
            (chainer.functions, 'split_axis'),
            (split_axis.SplitAxis, '__init__'),
            (split_axis.SplitAxis, 'check_type_forward'),
            (split_axis.SplitAxis, 'forward'),
            (split_axis.SplitAxis, 'indices_or_sections'),
            (numpy, 'split'),
            (split_axis, '_get_indices_or_sections')),
        type_check=('axis',)), _check),
)
