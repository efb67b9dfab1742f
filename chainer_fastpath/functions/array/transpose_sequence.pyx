# cython: boundscheck=True, wraparound=True
"""Compiled ``TransposeSequence``: forward and backward on NumPy arrays
(the time-major reordering of ``NStepRNN``'s sequences). Stock copies one
row per Python assignment; here each row is copied by ``memcpy``, which
copies the bytes the same-dtype assignment copies."""
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcpy

import numpy

from chainer.functions.array import transpose_sequence

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport grad_array, grad_requires_grad
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_C_CONTIGUOUS, cfp_data, cfp_dims, cfp_flags, cfp_nd, empty,
    numpy_struct_matches)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, checked, compiled, forward_callees)

cdef type _ndarray = numpy.ndarray


cdef tuple _transposed(tuple xs, object length):
    """What stock's ``_transpose(xs, length)`` returns, for ndarrays of one
    dtype without objects, of one trailing shape, at least one dimension,
    ``len(xs[0]) == length > 0`` rows and lengths that do not grow along
    ``xs``; None for anything else (stock's loop then runs, as it does)."""
    cdef Py_ssize_t n = len(xs)
    if n == 0 or type(length) is not int or not numpy_struct_matches():
        return None
    x0 = xs[0]
    if type(x0) is not _ndarray or x0.ndim == 0:
        return None
    dtype = x0.dtype
    unit = x0.shape[1:]
    if dtype.hasobject or x0.shape[0] != length or length == 0:
        return None
    cdef Py_ssize_t rows = length, prev = rows, i, p, k
    cdef Py_ssize_t row_bytes = x0.nbytes // rows
    sources = []
    for x in xs:
        if (type(x) is not _ndarray or x.ndim == 0 or x.dtype != dtype
                or x.shape[1:] != unit):
            return None
        k = x.shape[0]
        if k > prev:
            return None
        prev = k
        # A copy in C order holds the same bytes as stock's reads of rows.
        sources.append(x if cfp_flags(x) & CFP_NPY_C_CONTIGUOUS
                       else x.copy())
    # Output p holds row p of every input longer than p: as many as
    # stock's lengths[p], the inputs' lengths not growing.
    outs = []
    i = n
    cdef Py_ssize_t dims[32]
    cdef int nd = cfp_nd(x0)
    for k in range(1, nd):
        dims[k] = cfp_dims(x0)[k]
    for p in range(rows):
        while xs[i - 1].shape[0] <= p:
            i -= 1
        dims[0] = i
        outs.append(empty(dtype, nd, dims))
    cdef char **dst = <char **>PyMem_Malloc(rows * sizeof(char *))
    if dst == NULL:
        raise MemoryError()
    try:
        for p in range(rows):
            dst[p] = cfp_data(outs[p])
        for i in range(n):
            src = sources[i]
            k = src.shape[0]
            # Row p of input i goes to row i of output p, which has more
            # than i rows since input i has more than p.
            for p in range(k):
                memcpy(dst[p] + i * row_bytes,
                       cfp_data(src) + p * row_bytes, row_bytes)
    finally:
        PyMem_Free(dst)
    return tuple(outs)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # TransposeSequence.forward: _transpose(xs, self._length).
    ys = _transposed(inputs, node._length)
    if ys is None:
        return NOT_HANDLED
    return ys


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # TransposeSequence.backward: TransposeSequence(len(self.inputs))
    # applied to the gradients (its type check and compiled forward run
    # detached); a missing gradient is stock's case.
    arrays = []
    cdef bint rg = False
    for g in grad_outputs:
        a = grad_array(g)
        if a is None:
            return NOT_HANDLED
        arrays.append(a)
        rg = rg or grad_requires_grad(g)
    node = transpose_sequence.TransposeSequence(len(func.inputs))
    return apply_detached(node, tuple(arrays), rg)


cdef bint _check(object node, tuple xs) except -1:
    # TransposeSequence.check_type_forward: of each two inputs one after
    # the other, the first at least as long and of the same trailing
    # shape. (A 0-d input makes stock's check raise.)
    cdef Py_ssize_t n = len(xs), i
    cdef int nd, d
    if n < 2:
        return True
    if not numpy_struct_matches():
        return False
    for i in range(n):
        if type(xs[i]) is not _ndarray or cfp_nd(xs[i]) == 0:
            return False
    for i in range(n - 1):
        p = xs[i]
        q = xs[i + 1]
        nd = cfp_nd(p)
        if cfp_nd(q) != nd or cfp_dims(p)[0] < cfp_dims(q)[0]:
            return False
        for d in range(1, nd):
            if cfp_dims(p)[d] != cfp_dims(q)[d]:
                return False
    return True


ENTRIES = (
    forward_callees(checked(compiled(
        transpose_sequence.TransposeSequence, _forward, ('forward',),
        _backward, backward_callees=(
            (transpose_sequence.TransposeSequence, '__init__'),
            (transpose_sequence.TransposeSequence, 'check_type_forward'),
            (transpose_sequence.TransposeSequence, 'forward'),
            (transpose_sequence, '_transpose')),
        type_check=()), _check), ((transpose_sequence, '_transpose'),)),
)
