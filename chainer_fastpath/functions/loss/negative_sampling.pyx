# cython: boundscheck=True, wraparound=True
"""Compiled ``F.negative_sampling`` on NumPy float32 and float64 arrays: the
forward and backward of ``NegativeSamplingFunction`` and the forward of its
gradient node, ``NegativeSamplingFunctionGrad``.

The forward is stock's NumPy calls but for two copies: where no label is
ignored, ``x[ignore_mask]`` and ``W[samples][ignore_mask]`` are their
operands again, laid out alike, and ``einsum`` takes the operands
themselves (a minibatch of 1,000 words in ten contexts, five samples each,
copies 28 MB there). A floating-point flag that NumPy's errstate watches
runs stock's forward again on the samples drawn.

The gradient: stock loops over the rows in Python, and over each row's
samples again. Here both loops are C, and so is every elementwise step in
stock's order and dtype; the dot products are NumPy's own per row, on the
same shapes as stock's (the gemv call ``numpy.dot`` makes, ``_core/_blas``,
or ``numpy.dot``), and ``exp`` NumPy's inner loop
(``_core/_ufunc_loop``). A floating-point flag that NumPy's errstate
watches gives the call back to stock.
"""
cimport cython
from libc.string cimport memchr

import numpy

from chainer.functions.loss import negative_sampling

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._blas cimport gemv
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    CFP_NPY_INT, CFP_NPY_LONG,
    aligned_array, builtin_typenum, cfp_data, cfp_dims, cfp_flags, cfp_nd,
    cfp_strides, empty1, empty2, numpy_struct_matches)
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, clear_flags, fetestexcept, quiet_begin, quiet_end, watched)
from chainer_fastpath._core._grads cimport grad_array, grad_requires_grad
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    requires_grad_of, retained_inputs)
from chainer_fastpath._core._rows cimport (
    add_outer_rows, gather_rows, has_nan, negate, over_one_plus, real,
    store_row)
from chainer_fastpath._core._ufunc_loop cimport UfuncLoop

cdef type _ndarray = numpy.ndarray
cdef type _bool = numpy.bool_
# numpy.dot's own C function: the public one first runs the
# __array_function__ dispatch (a Python call), which only other array types
# than NumPy's need, and this module calls it once per sample.
cdef object _dot = getattr(numpy.dot, '_implementation', numpy.dot)

cdef object _zeros_like = numpy.zeros_like
cdef object _STOCK_FORWARD_CPU = (
    negative_sampling.NegativeSamplingFunction.forward_cpu)
cdef object _Grad = negative_sampling.NegativeSamplingFunctionGrad
cdef object _zeros = numpy.zeros
cdef object _array = numpy.array
cdef object _einsum = numpy.einsum
cdef object _logaddexp = numpy.logaddexp
cdef object _sum = numpy.sum
cdef object _INTP = numpy.dtype(numpy.intp)
cdef UfuncLoop _exp_float = UfuncLoop(numpy.exp, CFP_NPY_FLOAT)
cdef UfuncLoop _exp_double = UfuncLoop(numpy.exp, CFP_NPY_DOUBLE)


cdef class _Rows:
    """The rows stock's loop visits and each one's samples, checked."""
    cdef Py_ssize_t[::1] rows
    cdef Py_ssize_t[:, ::1] samples
    cdef Py_ssize_t n_rows


cdef _Rows _rows(object node, object x, object W):
    # numpy.arange(len(ignore_mask))[ignore_mask], and samples[i] for each
    # of those rows, where all of them index W; else None.
    mask = node.ignore_mask
    samples = node.samples
    cdef Py_ssize_t n = cfp_dims(x)[0]
    if (type(mask) is not _ndarray or mask.dtype != _bool
            or cfp_nd(mask) != 1 or cfp_dims(mask)[0] != n
            or type(samples) is not _ndarray or cfp_nd(samples) != 2
            or cfp_dims(samples)[0] != n or cfp_dims(samples)[1] < 1
            or not cfp_flags(samples) & CFP_NPY_ALIGNED):
        return None
    cdef int kind = builtin_typenum(samples)
    if kind != CFP_NPY_INT and kind != CFP_NPY_LONG:
        return None
    cdef Py_ssize_t m = cfp_dims(samples)[1], n_nodes = cfp_dims(W)[0]
    cdef const char *mp = cfp_data(mask)
    cdef Py_ssize_t ms = cfp_strides(mask)[0]
    cdef const char *sp = cfp_data(samples)
    cdef Py_ssize_t ss0 = cfp_strides(samples)[0]
    cdef Py_ssize_t ss1 = cfp_strides(samples)[1]
    cdef _Rows result = _Rows()
    result.rows = empty1(_INTP, n)
    result.samples = empty2(_INTP, n, m)
    result.n_rows = 0
    cdef Py_ssize_t i, k, s
    for i in range(n):
        if not mp[i * ms]:
            continue
        for k in range(m):
            if kind == CFP_NPY_INT:
                s = (<const int *>(sp + i * ss0 + k * ss1))[0]
            else:
                s = (<const long *>(sp + i * ss0 + k * ss1))[0]
            if s < 0 or s >= n_nodes:
                return None
            result.samples[result.n_rows, k] = s
        result.rows[result.n_rows] = i
        result.n_rows += 1
    return result


cdef bint _grad_rows(_Rows rows, UfuncLoop exp, int flags, object x,
                     object W, const real *gloss, Py_ssize_t gloss_stride,
                     object gx, object gW) except -1:
    # Per visited row i, stock's loop body: w = W[k]; f = w.dot(x[i]);
    # f[0] *= -1; g = igy / (1 + exp(-f)); g[0] *= -1; gx[i] = g.dot(w);
    # gW[ik] += ig * x[i] for each (ik, ig) in order. False where a watched
    # flag was raised or a NaN met. The flags are tested once, so a flag
    # the BLAS calls raised, on which stock's dot does not act, also sends
    # the call to stock (rare: non-finite or tiny values; only the speed is
    # lost).
    cdef Py_ssize_t m = rows.samples.shape[1], units = cfp_dims(x)[1]
    dtype = x.dtype
    cdef object w_array = empty2(dtype, m, units)
    cdef object f_array = empty1(dtype, m)
    cdef object e_array = empty1(dtype, m)
    cdef object gx_row = empty1(dtype, units)
    cdef real *w = <real *>cfp_data(w_array)
    cdef real *f = <real *>cfp_data(f_array)
    cdef real *e = <real *>cfp_data(e_array)
    cdef const real *row = <const real *>cfp_data(gx_row)
    cdef const char *Wp = cfp_data(W)
    cdef Py_ssize_t s0 = cfp_strides(W)[0], s1 = cfp_strides(W)[1]
    cdef const char *xp = cfp_data(x)
    cdef Py_ssize_t xs0 = cfp_strides(x)[0], xs1 = cfp_strides(x)[1]
    cdef char *gxp = cfp_data(gx)
    cdef Py_ssize_t gxs0 = cfp_strides(gx)[0], gxs1 = cfp_strides(gx)[1]
    cdef char *gWp = cfp_data(gW)
    cdef Py_ssize_t gs0 = cfp_strides(gW)[0], gs1 = cfp_strides(gW)[1]
    cdef real minus_one = -1, igy
    cdef char *args[2]
    cdef Py_ssize_t steps[2]
    cdef Py_ssize_t r, i
    cdef int typenum = CFP_NPY_FLOAT if real is float else CFP_NPY_DOUBLE
    steps[0] = steps[1] = sizeof(real)
    args[0] = <char *>f
    args[1] = <char *>e
    clear_flags(flags)
    for r in range(rows.n_rows):
        i = rows.rows[r]
        gather_rows(Wp, s0, s1, &rows.samples[r, 0], m, units, w)
        if not gemv(typenum, False, <char *>w, m, units, xp + i * xs0, xs1,
                    <char *>f):
            _dot(w_array, x[i], f_array)
        igy = (<const real *>(<const char *>gloss + i * gloss_stride))[0]
        f[0] = f[0] * minus_one
        negate(f, m)
        exp.function(args, &m, steps, exp.data)
        over_one_plus(f, igy, NULL, e, m)
        f[0] = f[0] * minus_one
        # Which NaN an operation keeps depends on the order of its operands,
        # which NumPy's loops and this one need not share: a NaN in the
        # gradients goes to stock. A NaN in x's row or in the weights
        # makes one there too: each of f is a dot product of a weight row
        # and x's row, and a NaN in either makes it NaN (the products and
        # sums of a NaN are NaNs), which exp and the division keep. What
        # else the weights make, gx, is the same gemv stock's dot calls.
        if has_nan(f, m):
            return False
        if not gemv(typenum, True, <char *>w, m, units, <char *>f,
                    sizeof(real), cfp_data(gx_row)):
            _dot(f_array, w_array, gx_row)
        store_row(gxp + i * gxs0, gxs1, row, units)
        add_outer_rows(gWp, gs0, gs1, &rows.samples[r, 0], f, m,
                       xp + i * xs0, xs1, units)
    return not fetestexcept(flags)


cdef object _forward(object node, tuple in_data, ConfigView config):
    if len(in_data) != 3 or not numpy_struct_matches():
        return NOT_HANDLED
    x, W, gloss = in_data
    if type(x) is not _ndarray:
        return NOT_HANDLED
    cdef int typenum = builtin_typenum(x)
    if typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE:
        return NOT_HANDLED
    cdef bint per_row = node.reduce != 'sum'
    if (not aligned_array(x, typenum, 2) or not aligned_array(W, typenum, 2)
            or cfp_dims(W)[1] != cfp_dims(x)[1]
            or not aligned_array(gloss, typenum, 1 if per_row else 0)
            or per_row and cfp_dims(gloss)[0] != cfp_dims(x)[0]):
        return NOT_HANDLED
    cdef _Rows rows = _rows(node, x, W)
    if rows is None:
        return NOT_HANDLED
    gx = _zeros_like(x)
    gW = _zeros_like(W)
    cdef int flags = watched()
    cdef Py_ssize_t stride = cfp_strides(gloss)[0] if per_row else 0
    cdef bint done
    if typenum == CFP_NPY_FLOAT:
        if _exp_float.function is NULL:
            return NOT_HANDLED
        done = _grad_rows(rows, _exp_float, flags, x, W,
                          <const float *>cfp_data(gloss), stride, gx, gW)
    else:
        if _exp_double.function is NULL:
            return NOT_HANDLED
        done = _grad_rows(rows, _exp_double, flags, x, W,
                          <const double *>cfp_data(gloss), stride, gx, gW)
    if not done:
        return NOT_HANDLED
    retain_inputs(node, (0, 1, 2))
    return gx, None, gW


cdef bint _keeps_every_row(object mask, object x):
    # Whether x[mask] would be a copy of x in x's own layout: mask all
    # True, of x's length (else indexing raises) and x C-ordered (a copy
    # is C-ordered).
    if (type(mask) is not _ndarray or mask.dtype != _bool
            or cfp_nd(mask) != 1 or cfp_dims(mask)[0] != cfp_dims(x)[0]
            or not cfp_flags(mask) & CFP_NPY_C_CONTIGUOUS
            or not cfp_flags(x) & CFP_NPY_C_CONTIGUOUS):
        return False
    # A bool array holds only the bytes 0 and 1.
    return memchr(cfp_data(mask), 0, cfp_dims(mask)[0]) == NULL


@cython.final
cdef class _Drawn:
    """The node as stock's ``forward_cpu`` is given it to run again with
    the samples already drawn: every other read and store is the node's."""
    cdef object _node, _samples

    def __init__(self, node, samples):
        self._node = node
        self._samples = samples

    def _make_samples(self, t):
        return self._samples

    def __getattr__(self, name):
        return getattr(self._node, name)

    def __setattr__(self, name, value):
        setattr(self._node, name, value)


cdef object _sampling_forward(object node, tuple in_data,
                              ConfigView config):
    # NegativeSamplingFunction.forward -> forward_cpu, whose fp16 helper
    # changes nothing where x is float32 or float64 and W of its dtype.
    if len(in_data) != 3:
        return NOT_HANDLED
    x, t, W = in_data
    if (type(x) is not _ndarray or type(t) is not _ndarray
            or type(W) is not _ndarray):
        return NOT_HANDLED
    cdef int typenum = builtin_typenum(x)
    if ((typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE)
            or builtin_typenum(W) != typenum or cfp_nd(x) != 2):
        return NOT_HANDLED
    retain_inputs(node, (0, 1, 2))
    mask = t != node.ignore_label
    node.ignore_mask = mask
    samples = node._make_samples(t)
    w = W[samples]
    cdef int raised
    saved = quiet_begin()
    try:
        # w is a new C-ordered array, so where x[mask] is x's copy, so is
        # w[mask] w's: einsum sees the same operands and sums as for stock.
        if _keeps_every_row(mask, x) and type(w) is _ndarray and (
                cfp_flags(w) & CFP_NPY_C_CONTIGUOUS):
            wx = _einsum('ij,ikj->ik', x, w)
        else:
            wx = _einsum('ij,ikj->ik', x[mask], w[mask])
        wx[:, 0] *= -1
        loss = _zeros(len(x), x.dtype)
        loss[mask] = _sum(_logaddexp(wx, 0), axis=1)
        if node.reduce == 'sum':
            loss = _array(loss.sum(), x.dtype)
    finally:
        raised = quiet_end(saved)
        if acts(raised):
            # Stock's lines warn, raise or call back as errstate says, on
            # the samples drawn once.
            return _STOCK_FORWARD_CPU(_Drawn(node, samples), in_data)
    node.samples = samples
    return loss,


cdef object _sampling_backward(object func, tuple indexes,
                               tuple grad_outputs):
    # NegativeSamplingFunction.backward: NegativeSamplingFunctionGrad(
    # reduce, ignore_mask, sample_size, samples, wx).apply((x, W, gy)),
    # whose three outputs stand for the gradients of x, t and W.
    if len(grad_outputs) != 1:
        return NOT_HANDLED
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    arrays = retained_inputs(func, [])
    if arrays is None or len(arrays) != 3:
        return NOT_HANDLED
    x, _t, W = arrays
    inputs = func.inputs
    return apply_detached(
        _Grad(func.reduce, func.ignore_mask, func.sample_size, func.samples,
              func.wx),
        (x, W, gy),
        requires_grad_of(inputs[0]) or requires_grad_of(inputs[2])
        or grad_requires_grad(gy_var))


ENTRIES = (
    compiled(negative_sampling.NegativeSamplingFunction, _sampling_forward,
             ('forward', 'forward_cpu', 'retain_inputs'),
             _sampling_backward, backward_callees=(
                 (_Grad, '__init__'),
                 (_Grad, 'check_type_forward'),
                 (_Grad, 'forward'),
                 (_Grad, 'forward_cpu'),
                 (_Grad, 'retain_inputs')),
             type_check=()),
    compiled(negative_sampling.NegativeSamplingFunctionGrad,
             _forward, ('forward', 'forward_cpu', 'retain_inputs'),
             NULL, (), None),
)
