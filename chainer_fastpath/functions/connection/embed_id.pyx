# cython: boundscheck=True, wraparound=True
"""Compiled ``EmbedIDFunction`` and its gradient node ``EmbedIDGrad``:
forwards and backward on NumPy arrays, and W's gradient added row by row
into the backward pass's gradient sum."""
cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc

import numpy

from chainer.functions.connection import embed_id

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport clear_flags, fetestexcept, watched
from chainer_fastpath._core._grads cimport (
    grad_array, grad_raw, grad_requires_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    retained_inputs, retained_inputs_require_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    CFP_NPY_INT, CFP_NPY_LONG, CFP_NPY_LONGLONG, builtin_typenum, cfp_data,
    cfp_byteorder, cfp_dims, cfp_elsize, cfp_flags, cfp_nd, cfp_strides,
    cfp_typenum,
    empty1, empty2, made_adding_zeros_exactly, new_shaped,
    numpy_struct_matches, size_of)
from chainer_fastpath._core._rows cimport (
    cfp_indices_in_range, cfp_scatter_add_rows_d, cfp_scatter_add_rows_f,
    gather_rows, indices_within)

cdef type _ndarray = numpy.ndarray
cdef object _INTP = numpy.dtype(numpy.intp)
cdef object _where = numpy.where
cdef object _zeros = numpy.zeros
cdef object _ascontiguousarray = numpy.ascontiguousarray
cdef object _int64 = numpy.int64
cdef object _float32 = numpy.float32
cdef object _float64 = numpy.float64


cdef object _forward(object node, tuple inputs, ConfigView config):
    # EmbedIDFunction.forward, not in debug mode (apply falls back there).
    if len(inputs) != 2:
        return NOT_HANDLED   # stock's unpacking error, not Cython's
    x, W = inputs
    if W.size == 0:
        # NumPy may warn of out-of-bound indices into an empty result: from
        # stock's line.
        return NOT_HANDLED
    retain_inputs(node, (0,))
    node._w_shape = W.shape
    ignore_label = node.ignore_label
    if ignore_label is not None:
        mask = (x == ignore_label)
        return _where(mask[..., None], 0, W[_where(mask, 0, x)]),
    y = _rows_of(W, x)
    return (W[x] if y is None else y),


cdef object _rows_of(object W, object x):
    """``W[x]`` by row copies (``cfp_gather_rows``) into the array NumPy's
    indexing makes (C order, W's descr, shape ``x.shape + W.shape[1:]``),
    for a 2-d float32 or float64 W and aligned int32 or int64 indices,
    C-contiguous or in one axis of any stride (a column of a batch of
    sequences), each in ``[0, len(W))``; None elsewhere (a negative index
    NumPy wraps, one out of range it raises for, another layout of x, a 0-d
    x, for which NumPy returns a view of W)."""
    if (type(W) is not _ndarray or type(x) is not _ndarray
            or not numpy_struct_matches() or cfp_nd(W) != 2
            or not 1 <= cfp_nd(x) <= 16
            or not cfp_flags(x) & CFP_NPY_ALIGNED
            or not cfp_flags(W) & CFP_NPY_ALIGNED):
        return None
    if cfp_flags(x) & CFP_NPY_C_CONTIGUOUS:
        return _rows_at(W, x, cfp_data(x))
    cdef int xt = builtin_typenum(x)
    cdef size_t size = cfp_elsize(x)
    if cfp_nd(x) != 1 or not (
            xt == CFP_NPY_INT and size == 4
            or (xt == CFP_NPY_LONG or xt == CFP_NPY_LONGLONG) and size == 8):
        return None
    # The indices, read with their stride, into a contiguous buffer.
    cdef Py_ssize_t n = cfp_dims(x)[0], step = cfp_strides(x)[0], i
    cdef char local[1024]
    cdef char *ids = local
    if n * size > sizeof(local):
        ids = <char *>PyMem_Malloc(n * size)
        if ids == NULL:
            raise MemoryError()
    cdef const char *read = cfp_data(x)
    try:
        if size == 4:
            for i in range(n):
                (<int *>ids)[i] = (<const int *>(read + i * step))[0]
        else:
            for i in range(n):
                (<long long *>ids)[i] = (
                    <const long long *>(read + i * step))[0]
        return _rows_at(W, x, ids)
    finally:
        if ids != local:
            PyMem_Free(ids)


cdef object _rows_at(object W, object x, const char *ids):
    """``_rows_of(W, x)`` with x's indices read, in C order, from
    ``ids``."""
    cdef int wt = builtin_typenum(W), xt = builtin_typenum(x)
    if wt != CFP_NPY_FLOAT and wt != CFP_NPY_DOUBLE:
        return None
    cdef Py_ssize_t n = 1, rows = cfp_dims(W)[0], units = cfp_dims(W)[1]
    cdef Py_ssize_t dims[17]
    cdef int k, nd = cfp_nd(x)
    for k in range(nd):
        dims[k] = cfp_dims(x)[k]
        n *= dims[k]
    dims[nd] = units
    if xt == CFP_NPY_INT:
        if not indices_within(<const int *>ids, n, rows):
            return None
    elif xt == CFP_NPY_LONG or xt == CFP_NPY_LONGLONG:
        if not indices_within(<const long long *>ids, n, rows):
            return None
    else:
        return None
    y = new_shaped(W, nd + 1, dims)
    if y is None:
        return None
    cdef const char *w = cfp_data(W)
    cdef Py_ssize_t s0 = cfp_strides(W)[0], s1 = cfp_strides(W)[1]
    cdef const int *ids32 = <const int *>ids
    cdef const Py_ssize_t *ids64 = <const Py_ssize_t *>ids
    if wt == CFP_NPY_FLOAT:
        if xt == CFP_NPY_INT:
            gather_rows(w, s0, s1, ids32, n, units, <float *>cfp_data(y))
        else:
            gather_rows(w, s0, s1, ids64, n, units, <float *>cfp_data(y))
    elif xt == CFP_NPY_INT:
        gather_rows(w, s0, s1, ids32, n, units, <double *>cfp_data(y))
    else:
        gather_rows(w, s0, s1, ids64, n, units, <double *>cfp_data(y))
    return y


ctypedef fused _float_t:
    float
    double


cdef class _EmbedGrad:
    """EmbedIDGrad's operands as its NumPy loop reads them: the indices as
    contiguous int64, the gradient one row per index, ``gy`` itself where
    its last axis is a row, else a contiguous copy of ``gy.reshape(n, -1)``
    (as stock's)."""
    cdef object xs, gy, dtype
    cdef bint has_ignore
    cdef long long ignore


cdef _EmbedGrad _embed_grad_operands(object w_shape, object ignore, object x,
                                     object gy):
    """None unless stock's ``EmbedIDGrad.forward`` on ``(x, gy)`` is what
    the loops below compute: float32 or float64 gradient rows of the
    weight's width, signed integer indices, every one stock would use in
    range (stock raises IndexError otherwise)."""
    if (type(x) is not _ndarray or type(gy) is not _ndarray
            or not numpy_struct_matches()
            # the loops load its items as C's
            or not cfp_flags(gy) & CFP_NPY_ALIGNED
            or type(w_shape) is not tuple or len(<tuple>w_shape) != 2
            or x.dtype.kind != 'i'
            or (gy.dtype != _float32 and gy.dtype != _float64)):
        return None
    if ignore is not None and (type(ignore) is not int
                               or not (-2 ** 63 <= ignore < 2 ** 63)):
        return None
    rows, cols = w_shape
    if (type(rows) is not int or type(cols) is not int
            or not 0 <= rows < 2 ** 63):
        return None
    n = size_of(x)
    if n == 0 or size_of(gy) != n * cols:
        return None
    cdef _EmbedGrad g = _EmbedGrad.__new__(_EmbedGrad)
    # A copy of its own: what is checked below is what the loops index by,
    # whatever Python code runs in between (a finalizer, another thread).
    # (A fresh C-ordered int64 array: the loops index it as long long.)
    g.xs = x.ravel().astype(_int64)
    g.has_ignore = ignore is not None
    g.ignore = ignore if g.has_ignore else 0
    if not _indices_in_range(_indices(g.xs), n, g.has_ignore, g.ignore,
                             rows):
        return None
    # A broadcast gradient (the backward of a sum over the rows) is read
    # where it lies rather than copied.
    g.gy = (gy if cfp_nd(gy) >= 1 and cfp_dims(gy)[cfp_nd(gy) - 1] == cols
            else _ascontiguousarray(gy.reshape(n, -1)))
    g.dtype = gy.dtype
    return g


cdef inline const long long *_indices(object xs):
    """The items of ``xs``, an ``_EmbedGrad``'s C-ordered int64 array."""
    return <const long long *>cfp_data(xs)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef bint _indices_in_range(const long long *x, Py_ssize_t n, bint has_ignore,
                            long long ignore, long long rows) noexcept nogil:
    # Each index but the ignore label within [-rows, rows).
    cdef Py_ssize_t i
    if n == 0:
        return True
    if rows < (<long long>1) << 62:
        return cfp_indices_in_range(x, n, rows, has_ignore, ignore)
    for i in range(n):
        if has_ignore and x[i] == ignore:
            continue
        if x[i] < -rows or x[i] >= rows:
            return False
    return True


cdef bint _scatter_rows(_float_t *gW, Py_ssize_t rows, Py_ssize_t cols,
                        const long long *x, Py_ssize_t n, object gy,
                        bint has_ignore, long long ignore):
    # for ix, igy in zip(x, gy.reshape(len(x), -1)): gW[ix] += igy, skipping
    # the ignore label; one IEEE add per element, in stock's order. True
    # where stock must compute it: a sum is a NaN, whose payload NumPy's
    # add chooses (its vector loops may differ), or gy's geometry is no
    # longer what _embed_grad_operands checked (set in place by code that
    # ran since); it is read here, where no Python code runs before the
    # loop.
    cdef Py_ssize_t count = 1
    if n == 0 or cols == 0:
        return False
    cdef int k, nd = cfp_nd(gy) - 1
    for k in range(nd):
        count *= cfp_dims(gy)[k]
    if (nd < 0 or nd > 31 or count != n or cfp_dims(gy)[nd] != cols
            or not cfp_flags(gy) & CFP_NPY_ALIGNED):
        return True
    if _float_t is float:
        return cfp_scatter_add_rows_f(
            gW, rows, cols, x, n, cfp_data(gy), nd,
            cfp_dims(gy), cfp_strides(gy), cfp_strides(gy)[nd], has_ignore,
            ignore)
    else:
        return cfp_scatter_add_rows_d(
            gW, rows, cols, x, n, cfp_data(gy), nd,
            cfp_dims(gy), cfp_strides(gy), cfp_strides(gy)[nd], has_ignore,
            ignore)


# Whether EmbedIDGrad's forward runs for the compiled EmbedID backward, whose
# gradient goes to the backward engine and nowhere else.
cdef bint _in_backward = False


cdef object _grad_forward(object node, tuple inputs, ConfigView config):
    # EmbedIDGrad.forward on NumPy: gW = zeros(w_shape, gy.dtype), then
    # gW[ix] += igy for each index and gradient row, in order, skipping
    # the ignore label. What _embed_grad_operands declines (float16, whose
    # add rounds through float, rows that would broadcast, indices out of
    # range), a floating-point exception that numpy.errstate does not
    # ignore and a NaN sum are left to stock, which computes, warns or
    # raises as it does.
    if len(inputs) != 2 or numpy.zeros is not _zeros:
        return NOT_HANDLED
    x, gy = inputs
    cdef _EmbedGrad g = _embed_grad_operands(node.w_shape, node.ignore_label,
                                             x, gy)
    if g is None:
        return NOT_HANDLED
    retain_inputs(node, (0,))
    node._gy_shape = gy.shape
    gW = _zeros(node.w_shape, dtype=g.dtype)
    # numpy.zeros' own array: C-ordered, of the checked (rows, cols).
    cdef Py_ssize_t rows = cfp_dims(gW)[0], cols = cfp_dims(gW)[1]
    cdef Py_ssize_t n = cfp_dims(g.xs)[0]
    cdef int flags = watched()
    cdef bint nan
    clear_flags(flags)
    if g.dtype == _float32:
        nan = _scatter_rows[float](<float *>cfp_data(gW), rows, cols,
                                   _indices(g.xs), n, g.gy, g.has_ignore,
                                   g.ignore)
    else:
        nan = _scatter_rows[double](<double *>cfp_data(gW), rows, cols,
                                    _indices(g.xs), n, g.gy, g.has_ignore,
                                    g.ignore)
    if nan or fetestexcept(flags):
        return NOT_HANDLED
    if _in_backward:
        # straight to the backward engine, which may sum into it
        made_adding_zeros_exactly(gW)
    return gW,


cdef bint _grad_into(object acc, object w_shape, object ignore, object x,
                     object gy) except -1:
    """``numpy.add(acc, gW, out=acc)``, ``gW`` what stock's
    ``EmbedIDGrad(w_shape, ignore).forward((x, gy))`` returns, without
    building ``gW``: its rows of zeros leave ``acc`` as it is, given that
    ``acc`` holds no -0.0 and no signaling NaN (``adds_zeros_exactly``).
    False, with ``acc`` untouched, where ``_grad_forward`` would leave the
    work to stock, a row's sum is a NaN (whose payload NumPy's add
    chooses), or the batch is too large for the duplicate search."""
    if numpy.zeros is not _zeros:
        return False
    cdef _EmbedGrad g = _embed_grad_operands(w_shape, ignore, x, gy)
    if (g is None or type(acc) is not _ndarray or acc.dtype != g.dtype
            or cfp_nd(acc) != 2
            or cfp_dims(acc)[0] != (<tuple>w_shape)[0]
            or cfp_dims(acc)[1] != (<tuple>w_shape)[1]
            or not cfp_flags(acc) & CFP_NPY_C_CONTIGUOUS
            or not cfp_flags(acc) & CFP_NPY_ALIGNED):
        return False
    cdef Py_ssize_t n = cfp_dims(g.xs)[0]
    if n > 256:    # duplicates are found by comparing each index with
        return False    # those before it
    cdef Py_ssize_t rows = (<tuple>w_shape)[0], cols = (<tuple>w_shape)[1]
    cdef int typenum = (CFP_NPY_FLOAT if g.dtype == _float32
                        else CFP_NPY_DOUBLE)
    rows_gy = _ascontiguousarray(g.gy.reshape(n, -1))
    tmp = empty2(g.dtype, n, cols)    # fresh, n by cols
    order = empty1(_INTP, n)          # fresh, n intp
    cdef Py_ssize_t k
    cdef int flags = watched()
    clear_flags(flags)
    # The loops index acc and the gradient's rows through pointers: their
    # geometry is read here, after the calls above (whose allocations may
    # run a finalizer that reshapes an array in place), with no Python
    # code before the loops.
    if not (_float_matrix(acc, rows, cols, typenum)
            and _float_matrix(rows_gy, n, cols, typenum)):
        return False
    if typenum == CFP_NPY_FLOAT:
        k = _rows_added[float](
            <const float *>cfp_data(acc), rows, cols, _indices(g.xs), n,
            <const float *>cfp_data(rows_gy), g.has_ignore, g.ignore,
            <float *>cfp_data(tmp), <Py_ssize_t *>cfp_data(order))
    else:
        k = _rows_added[double](
            <const double *>cfp_data(acc), rows, cols, _indices(g.xs), n,
            <const double *>cfp_data(rows_gy), g.has_ignore, g.ignore,
            <double *>cfp_data(tmp), <Py_ssize_t *>cfp_data(order))
    if k < 0 or fetestexcept(flags):
        return False
    if typenum == CFP_NPY_FLOAT:
        _put_rows[float](<float *>cfp_data(acc), cols,
                         <const float *>cfp_data(tmp),
                         <const Py_ssize_t *>cfp_data(order), k)
    else:
        _put_rows[double](<double *>cfp_data(acc), cols,
                          <const double *>cfp_data(tmp),
                          <const Py_ssize_t *>cfp_data(order), k)
    return True


cdef inline bint _float_matrix(object a, Py_ssize_t rows, Py_ssize_t cols,
                               int typenum) noexcept:
    """Whether the ndarray ``a`` is ``rows`` by ``cols``, C-ordered, aligned
    and of the native float type ``typenum``, read off its struct."""
    return (cfp_nd(a) == 2 and cfp_dims(a)[0] == rows
            and cfp_dims(a)[1] == cols
            and cfp_flags(a) & CFP_NPY_C_CONTIGUOUS
            and cfp_flags(a) & CFP_NPY_ALIGNED
            and cfp_typenum(a) == typenum and cfp_byteorder(a) != b'>')


cdef inline Py_ssize_t _row_of(long long index,
                               Py_ssize_t rows) noexcept nogil:
    # The row a negative index wraps to, as NumPy indexing wraps it.
    return <Py_ssize_t>(index + rows if index < 0 else index)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _rows_added(const _float_t *acc, Py_ssize_t rows,
                            Py_ssize_t cols, const long long *x,
                            Py_ssize_t n, const _float_t *gy, bint has_ignore,
                            long long ignore, _float_t *tmp,
                            Py_ssize_t *order) noexcept nogil:
    # For each row r that x names, in order of first appearance:
    # tmp[k] = acc[r] + ((0 + gy[i1]) + gy[i2] ...), the row's gradients in
    # stock's order (_scatter_rows), and order[k] = r. Returns the number
    # of rows, or -1 on a NaN.
    # All C-ordered: acc rows by cols, gy and tmp n by cols.
    cdef Py_ssize_t i, j, c, k = 0, r
    cdef _float_t zero = 0, v
    cdef bint nan = False, seen
    for i in range(n):
        if has_ignore and x[i] == ignore:
            continue
        r = _row_of(x[i], rows)
        seen = False
        for j in range(i):
            if (not (has_ignore and x[j] == ignore)
                    and _row_of(x[j], rows) == r):
                seen = True
                break
        if seen:
            continue
        for c in range(cols):
            tmp[k * cols + c] = zero + gy[i * cols + c]
        for j in range(i + 1, n):
            if (not (has_ignore and x[j] == ignore)
                    and _row_of(x[j], rows) == r):
                for c in range(cols):
                    tmp[k * cols + c] = tmp[k * cols + c] + gy[j * cols + c]
        for c in range(cols):
            v = acc[r * cols + c] + tmp[k * cols + c]
            nan |= v != v
            tmp[k * cols + c] = v
        order[k] = r
        k += 1
    return -1 if nan else k


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _put_rows(_float_t *acc, Py_ssize_t cols, const _float_t *tmp,
                    const Py_ssize_t *order, Py_ssize_t k) noexcept nogil:
    # acc's rows order[i] (of cols each) = tmp's rows i, for i < k.
    cdef Py_ssize_t i, c
    for i in range(k):
        for c in range(cols):
            acc[order[i] * cols + c] = tmp[i * cols + c]


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # EmbedIDFunction.backward: (None, EmbedIDGrad(...).apply((x, gy))[0]).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    arrays = retained_inputs(func, [])
    if arrays is None:
        return NOT_HANDLED
    arrays.append(gy)
    global _in_backward
    _in_backward = True
    try:
        gW = apply_detached(
            embed_id.EmbedIDGrad(func._w_shape, func.ignore_label),
            tuple(arrays),
            retained_inputs_require_grad(func)
            or grad_requires_grad(gy_var))[0]
    finally:
        _in_backward = False
    return None, gW


# What building and applying EmbedIDGrad calls, when embed_id_into stands
# in for it.
cdef StockMethods _EMBED_ID_GRAD = StockMethods(
    embed_id.EmbedIDGrad,
    ('__init__', 'check_type_forward', 'forward', 'retain_inputs'))


cdef bint _backward_into(object func, tuple grad_outputs,
                         object acc_var) except -1:
    """For the caller that records no graph, has no function hook and owns
    ``acc_var``, W's gradient sum so far: adds W's gradient from ``func``'s
    stock ``backward`` into it, as the caller's in-place sum of the two
    would (``_grad_into``), and returns True; or False, with nothing done,
    where ``_backward`` must be taken."""
    if not _EMBED_ID_GRAD.on_class():
        return False
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return False
    arrays = retained_inputs(func, [])
    if arrays is None or len(arrays) != 1:
        return False
    # Engine.reduce sums in place only where the sum's requires_grad stays
    # as it is; the gradient's is what _backward gives it.
    if (not grad_requires_grad(acc_var)
            and (retained_inputs_require_grad(func)
                 or grad_requires_grad(gy_var))):
        return False
    return _grad_into(grad_raw(acc_var), func._w_shape,
                      func.ignore_label, arrays[0], gy)


ENTRIES = (
    # W, input 1, takes its gradient into its sum in place.
    compiled(embed_id.EmbedIDFunction, _forward, ('forward', 'retain_inputs'),
             _backward, backward_callees=(
                 (embed_id.EmbedIDGrad, '__init__'),
                 (embed_id.EmbedIDGrad, 'check_type_forward'),
                 (embed_id.EmbedIDGrad, 'forward'),
                 (embed_id.EmbedIDGrad, 'retain_inputs')),
             type_check=(),
             backward_into=_backward_into, into_index=1),
    compiled(embed_id.EmbedIDGrad, _grad_forward, ('forward', 'retain_inputs'),
             NULL, backward_callees=(), type_check=None),
)
