# cython: boundscheck=True, wraparound=True
"""Compiled ``SelectItem``: forward and backward on NumPy arrays."""
from libc.string cimport memcpy

import numpy

from chainer.functions.array import select_item

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_INT,
    CFP_NPY_LONG, CFP_NPY_LONGLONG, builtin_typenum, cfp_data, cfp_dims,
    cfp_elsize, cfp_flags, cfp_nd, cfp_strides, cfp_typenum, new_shaped,
    numpy_struct_matches, zeros_shaped)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport retained_inputs

cdef type _ndarray = numpy.ndarray
# The type numbers of the dtypes whose items are copied as bytes: booleans,
# integers, floats and complex numbers; not objects, strings, records or
# dates.
cdef unsigned long long _NUMBERS = 0
for _code in '?bBhHiIlLqQefdgFDG':
    _NUMBERS |= 1ULL << numpy.dtype(_code).num


cdef object _forward(object node, tuple inputs, ConfigView config):
    # SelectItem.forward on NumPy arrays; debug mode's label check is left
    # to stock.
    if len(inputs) != 2 or config.get('debug'):
        return NOT_HANDLED
    retain_inputs(node, (1,))
    x, t = inputs
    node._in_shape = x.shape
    node._in_dtype = x.dtype
    y = _picked(x, t)
    return (x[range(t.size), t] if y is None else y),


cdef bint _items(object x, object t):
    """Whether ``x[range(len(t)), t]`` (or its assignment) is a copy of one
    item per row, as below: ``x`` an aligned 2-d ndarray of a numeric
    dtype (an argmax's int64 indices too), ``t`` an aligned 1-d int32 or
    int64 ndarray of ``len(x)`` items, each in ``[-cols, cols)`` (NumPy
    raises IndexError otherwise), at least one. Either dtype may be an
    equal copy of the builtin one (an unpickled array's)."""
    if (type(x) is not _ndarray or type(t) is not _ndarray
            or not numpy_struct_matches() or cfp_nd(x) != 2
            or cfp_nd(t) != 1 or not cfp_flags(x) & CFP_NPY_ALIGNED
            or not cfp_flags(t) & CFP_NPY_ALIGNED):
        return False
    cdef int xt = builtin_typenum(x), tt = builtin_typenum(t)
    if not (0 <= xt < 64 and _NUMBERS >> xt & 1):
        return False
    cdef Py_ssize_t n = cfp_dims(t)[0], cols = cfp_dims(x)[1], i, k
    if n == 0 or cfp_dims(x)[0] != n:
        return False
    cdef const char *p = cfp_data(t)
    cdef Py_ssize_t step = cfp_strides(t)[0]
    if tt == CFP_NPY_INT:
        for i in range(n):
            k = (<const int *>(p + i * step))[0]
            if not -cols <= k < cols:
                return False
    elif tt == CFP_NPY_LONG or tt == CFP_NPY_LONGLONG:
        for i in range(n):
            k = (<const long long *>(p + i * step))[0]
            if not -cols <= k < cols:
                return False
    else:
        return False
    return True


cdef inline Py_ssize_t _column(object t, Py_ssize_t i,
                               Py_ssize_t cols) noexcept:
    # t[i], a negative one counted from the end as NumPy counts it.
    cdef const char *p = cfp_data(t) + i * cfp_strides(t)[0]
    cdef Py_ssize_t k = ((<const int *>p)[0] if cfp_typenum(t) == CFP_NPY_INT
                         else (<const long long *>p)[0])
    return k + cols if k < 0 else k


cdef object _picked(object x, object t):
    """``x[range(len(t)), t]``, a new C-contiguous array of ``x``'s dtype,
    where ``_items(x, t)``; else None."""
    if not _items(x, t):
        return None
    cdef Py_ssize_t n = cfp_dims(t)[0], cols = cfp_dims(x)[1], i
    y = new_shaped(x, 1, &n)
    if y is None:
        return None
    cdef int size = cfp_elsize(x)
    cdef const char *src = cfp_data(x)
    cdef Py_ssize_t s0 = cfp_strides(x)[0], s1 = cfp_strides(x)[1]
    cdef char *dst = cfp_data(y)
    for i in range(n):
        memcpy(dst + i * size, src + i * s0 + _column(t, i, cols) * s1, size)
    return y


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # SelectItem.backward: Assign(x.shape, x.dtype, t).apply(gy) for x (a
    # node without a type check whose forward_cpu scatters gy into zeros),
    # None for t.
    gy_var = grad_outputs[0]
    if func._input_indexes_to_retain != (1,):
        return NOT_HANDLED
    ts = retained_inputs(func, [])
    if ts is None:
        return NOT_HANDLED
    cdef list ret = []
    if 0 in indexes:
        gy = grad_array(gy_var)
        t = ts[0]
        if gy is None or gy.shape != t.shape:
            return NOT_HANDLED
        gx = zeros_shaped(func._in_dtype, func._in_shape)
        if not _put(gx, t, gy):
            gx[range(t.size), t] = gy
        ret.append(new_grad(gx, grad_requires_grad(gy_var)))
    if 1 in indexes:
        ret.append(None)
    return tuple(ret)


cdef bint _put(object gx, object t, object gy):
    """``gx[range(len(t)), t] = gy`` item by item, for a ``gy`` of
    ``gx``'s dtype, where ``_items(gx, t)``; False, with nothing done,
    elsewhere."""
    if (not _items(gx, t) or type(gy) is not _ndarray or cfp_nd(gy) != 1
            or builtin_typenum(gy) != builtin_typenum(gx)
            or cfp_dims(gy)[0] != cfp_dims(t)[0]
            or not cfp_flags(gy) & CFP_NPY_ALIGNED):
        return False
    cdef Py_ssize_t n = cfp_dims(t)[0], cols = cfp_dims(gx)[1], i
    cdef int size = cfp_elsize(gx)
    cdef char *dst = cfp_data(gx)
    cdef Py_ssize_t s0 = cfp_strides(gx)[0], s1 = cfp_strides(gx)[1]
    cdef const char *src = cfp_data(gy)
    cdef Py_ssize_t step = cfp_strides(gy)[0]
    for i in range(n):
        memcpy(dst + i * s0 + _column(t, i, cols) * s1, src + i * step, size)
    return True


ENTRIES = (
    compiled(select_item.SelectItem, _forward, ('forward', 'retain_inputs'),
             _backward, backward_callees=(
                 (select_item.Assign, '__init__'),
                 (select_item.Assign, 'check_type_forward'),
                 (select_item.Assign, 'forward'),
                 (select_item.Assign, 'forward_cpu')),
             type_check=()),
)
