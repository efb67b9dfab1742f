"""Compiled ``LSTM`` (``F.lstm``): forward and backward on NumPy arrays,
the cell's arithmetic in one pass, bit for bit what stock computes.

Stock's ``LSTM.forward`` and ``LSTMGrad.forward`` chain some twenty NumPy
calls over strided gate views; on a small batch their cost is the calls, not
the arithmetic. Each element of their results depends only on that element's
operands, so the same operations can run element by element:

- ``+``, ``-`` and ``*`` are IEEE operations that C performs exactly as
  NumPy's loops do, in the same order (no fused multiply-add: see setup.py;
  constants are of the array's type, so nothing is computed wider);
- ``tanh``, the one transcendental, stays NumPy's: one ``numpy.tanh`` call on
  a contiguous buffer holding exactly the values stock passes to it.

A floating-point exception in a loop that ``numpy.errstate`` does not ignore
is one stock's NumPy calls would have warned about or raised (``_fpe``); the
kernels (``fused_forward``, ``fused_grad``) then return None and stock's
forward runs, which does just that, from its own lines. The one tanh call of
a kernel (which does not run while underflow is watched) can raise no other
exception on numbers.
"""
cimport cython

import numpy

import chainer
from chainer.functions.rnn import lstm

from chainer_fastpath._core._attrs cimport retain_inputs, retain_outputs
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, builtin_typenum, cfp_c_aligned, cfp_data,
    cfp_dims, cfp_nd, empty, empty1, numpy_struct_matches)

from libc.string cimport memcpy, memset

cdef extern from "_lstm.h" nogil:
    bint cfp_lstm_tanh_args_f(const float *x, float *t, Py_ssize_t blocks,
                              Py_ssize_t R)
    bint cfp_lstm_tanh_args_d(const double *x, double *t, Py_ssize_t blocks,
                              Py_ssize_t R)
    void cfp_lstm_cell_f(const float *u, const float *c_prev, float *c_next,
                         Py_ssize_t blocks, Py_ssize_t R)
    void cfp_lstm_cell_d(const double *u, const double *c_prev,
                         double *c_next, Py_ssize_t blocks, Py_ssize_t R)
    void cfp_lstm_output_f(const float *u, float *h, Py_ssize_t blocks,
                           Py_ssize_t R)
    void cfp_lstm_output_d(const double *u, double *h, Py_ssize_t blocks,
                           Py_ssize_t R)
    void cfp_lstm_grad_f(const float *u, const float *co,
                         const float *c_prev, const float *gc,
                         const float *gh, float *gc_prev, float *gx,
                         Py_ssize_t blocks, Py_ssize_t R)
    void cfp_lstm_grad_d(const double *u, const double *co,
                         const double *c_prev, const double *gc,
                         const double *gh, double *gc_prev, double *gx,
                         Py_ssize_t blocks, Py_ssize_t R)

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)
from chainer_fastpath._core._retained cimport (
    array_of, requires_grad_of, retained_inputs, retained_inputs_require_grad,
    retained_output)
from chainer_fastpath._core._rows cimport has_nan
from chainer_fastpath._core._fpe cimport (
    FE_UNDERFLOW, clear_flags, fetestexcept, watched)
from chainer_fastpath._core._ufunc_loop cimport FloatLoops


cdef type _ndarray = numpy.ndarray
cdef FloatLoops _tanh_loops = FloatLoops(numpy.tanh)
cdef object _empty_like = numpy.empty_like


cdef object _readable(object c_prev):
    """``c_prev`` as the kernels read it: itself where it is C-contiguous
    and aligned; a C-contiguous copy where it is not but stock's
    ``numpy.empty_like(c_prev)`` (the layout of stock's ``c_next`` and
    ``gc_prev``) is C-contiguous, as that of a row slice is (NStepLSTM's
    cells after a ``Permutate`` along axis 1); else None."""
    if type(c_prev) is not _ndarray or cfp_c_aligned(c_prev):
        return c_prev
    if not cfp_c_aligned(_empty_like(c_prev)):
        return None
    return c_prev.copy()


cdef object _empty_as_stock(object c_prev, object readable, object dtype):
    """Stock's ``numpy.empty_like(c_prev)``, for ``readable`` =
    ``_readable(c_prev)``: where that is a copy, the empty array's strides
    along axes of length one are NumPy's choice from ``c_prev``'s."""
    if readable is c_prev:
        return empty(dtype, cfp_nd(c_prev), cfp_dims(c_prev))
    return _empty_like(c_prev)


# -- the kernels ----------------------------------------------------------

ctypedef fused real:
    float
    double


cdef int _typenum(object a, int ndim):
    """``a``'s type number when it is a C-contiguous float32 or float64
    ndarray of ``ndim`` dimensions, else -1."""
    if (type(a) is not _ndarray or cfp_nd(a) != ndim
            or not cfp_c_aligned(a)):
        return -1
    cdef int num = builtin_typenum(a)
    return num if num == CFP_NPY_FLOAT or num == CFP_NPY_DOUBLE else -1


cdef bint _same_tail(object a, object b, int ndim):
    cdef Py_ssize_t *da = cfp_dims(a)
    cdef Py_ssize_t *db = cfp_dims(b)
    cdef int k
    for k in range(2, ndim):
        if da[k] != db[k]:
            return False
    return True


# Where the gates lie: x is (batch, 4 * units, *rest) and each of its
# batch * units blocks holds `rest` values of gate a, then i, f and o
# (lstm._extract_gates); the cell is (cell_batch, units, *rest).
ctypedef struct Geometry:
    Py_ssize_t blocks       # batch * units
    Py_ssize_t rest         # values per gate in a block
    Py_ssize_t n            # batch * units * rest: one gate's size
    Py_ssize_t cell_size    # the whole cell's size
    int typenum


cdef bint _geometry(object c, object x, Geometry *g):
    """Fills ``g`` when ``c`` and ``x`` are what the kernels handle:
    C-contiguous float32 or float64 arrays of one dtype and consistent
    shapes, none empty."""
    if not numpy_struct_matches() or type(c) is not _ndarray:
        return False
    cdef int ndim = cfp_nd(c)
    if ndim < 2:
        return False
    cdef int num = _typenum(c, ndim)
    if num < 0 or _typenum(x, ndim) != num:
        return False
    cdef Py_ssize_t *dc = cfp_dims(c)
    cdef Py_ssize_t *dx = cfp_dims(x)
    if (dx[1] != 4 * dc[1] or dx[0] > dc[0]
            or not _same_tail(c, x, ndim)):
        return False
    g.rest = 1
    cdef int k
    for k in range(2, ndim):
        g.rest *= dc[k]
    g.blocks = dx[0] * dc[1]
    g.n = g.blocks * g.rest
    g.cell_size = dc[0] * dc[1] * g.rest
    g.typenum = num
    return g.n > 0


cdef bint _copy_numbers(const real *src, real *dst,
                        Py_ssize_t n) noexcept nogil:
    # dst[:n] = src[:n]; False on a NaN (see _lstm.h's tanh arguments).
    cdef Py_ssize_t k
    cdef bint nan = False
    for k in range(n):
        nan |= src[k] != src[k]
        dst[k] = src[k]
    return not nan


cdef int _start(object c_prev, object x, Geometry *g) except? -2:
    """The flags a kernel watches, with ``g`` filled, or -1 when it must not
    run: inputs it does not handle, or underflow watched. NumPy warns once
    per ufunc call, and stock makes five tanh calls where a kernel makes one
    or two, so while underflow (the one exception tanh raises on numbers)
    is watched, the NumPy calls run."""
    if not _geometry(c_prev, x, g):
        return -1
    cdef int flags = watched()
    return -1 if flags & FE_UNDERFLOW else flags


cpdef object fused_forward(object c_prev, object x):
    """``(c_next, h)`` as stock ``LSTM.forward`` computes them on NumPy
    arrays, or None when the kernel does not apply or a floating-point
    exception occurred."""
    original = c_prev
    c_prev = _readable(c_prev)
    cdef Geometry g
    cdef int flags = _start(c_prev, x, &g)
    if flags < 0:
        return None
    dtype = x.dtype
    t = empty1(dtype, 4 * g.n)
    u = empty1(dtype, 4 * g.n)
    c_next = _empty_as_stock(original, c_prev, dtype)
    cdef Py_ssize_t h_dims[32]
    cdef int k
    h_dims[0] = cfp_dims(x)[0]
    for k in range(1, cfp_nd(c_prev)):
        h_dims[k] = cfp_dims(c_prev)[k]
    h = empty(dtype, cfp_nd(c_prev), h_dims)
    cdef char *pc = cfp_data(c_prev)
    cdef char *px = cfp_data(x)
    cdef char *pt = cfp_data(t)
    cdef char *pu = cfp_data(u)
    cdef char *pn = cfp_data(c_next)
    cdef char *ph = cfp_data(h)
    cdef bint single = g.typenum == CFP_NPY_FLOAT, numbers
    clear_flags(flags)
    if single:
        numbers = cfp_lstm_tanh_args_f(<float *>px, <float *>pt, g.blocks,
                                       g.rest)
    else:
        numbers = cfp_lstm_tanh_args_d(<double *>px, <double *>pt, g.blocks,
                                       g.rest)
    if not numbers or fetestexcept(flags):
        return None
    # The flags tanh raises do not matter: the kernels do not run while
    # underflow, the one tanh raises on numbers, is watched.
    cdef int ignored = 0
    _tanh_loops.quiet_unary(t, u, &ignored)
    clear_flags(flags)
    if single:
        cfp_lstm_cell_f(<float *>pu, <float *>pc, <float *>pn, g.blocks,
                        g.rest)
    else:
        cfp_lstm_cell_d(<double *>pu, <double *>pc, <double *>pn, g.blocks,
                        g.rest)
    if fetestexcept(flags):
        return None
    _tanh_loops.quiet_unary(c_next[:len(x)], h, &ignored)
    clear_flags(flags)
    if single:
        cfp_lstm_output_f(<float *>pu, <float *>ph, g.blocks, g.rest)
    else:
        cfp_lstm_output_d(<double *>pu, <double *>ph, g.blocks, g.rest)
    if fetestexcept(flags):
        return None
    cdef Py_ssize_t itemsize = 4 if single else 8
    memcpy(pn + g.n * itemsize, pc + g.n * itemsize,
           (g.cell_size - g.n) * itemsize)
    return c_next, h


cpdef object fused_grad(object c_prev, object x, object c_next, object gc,
                        object gh):
    """``(gc_prev, gx)`` as stock ``LSTMGrad.forward`` computes them on
    NumPy arrays (``gc``, ``gh`` may be None), or None when the kernel does
    not apply or a floating-point exception occurred."""
    original = c_prev
    c_prev = _readable(c_prev)
    cdef Geometry g
    cdef int flags = _start(c_prev, x, &g)
    if flags < 0:
        return None
    cdef int ndim = cfp_nd(c_prev)
    if (_typenum(c_next, ndim) != g.typenum
            or c_next.shape != c_prev.shape):
        return None
    if gc is not None and (_typenum(gc, ndim) != g.typenum
                           or gc.shape != c_prev.shape):
        return None
    if gh is not None and (_typenum(gh, ndim) != g.typenum
                           or cfp_dims(gh)[0] != cfp_dims(x)[0]
                           or cfp_dims(gh)[1] != cfp_dims(c_prev)[1]
                           or not _same_tail(gh, c_prev, ndim)):
        return None
    dtype = x.dtype
    cdef bint single = g.typenum == CFP_NPY_FLOAT
    cdef Py_ssize_t itemsize = 4 if single else 8
    # One tanh call: stock's gate arguments, then c_next[:batch].
    t = empty1(dtype, 5 * g.n)
    u = empty1(dtype, 5 * g.n)
    gc_prev = _empty_as_stock(original, c_prev, dtype)
    gx = empty(dtype, cfp_nd(x), cfp_dims(x))
    cdef char *pt = cfp_data(t)
    cdef char *pu = cfp_data(u)
    cdef const char *pgc = cfp_data(gc) if gc is not None else NULL
    cdef const char *pgh = cfp_data(gh) if gh is not None else NULL
    cdef char *pgp = cfp_data(gc_prev)
    cdef bint numbers
    clear_flags(flags)
    if single:
        numbers = (cfp_lstm_tanh_args_f(<float *>cfp_data(x), <float *>pt,
                                        g.blocks, g.rest)
                   and _copy_numbers(<float *>cfp_data(c_next),
                                     <float *>pt + 4 * g.n, g.n))
    else:
        numbers = (cfp_lstm_tanh_args_d(<double *>cfp_data(x), <double *>pt,
                                        g.blocks, g.rest)
                   and _copy_numbers(<double *>cfp_data(c_next),
                                     <double *>pt + 4 * g.n, g.n))
    if not numbers or fetestexcept(flags):
        return None
    cdef int ignored = 0    # see fused_forward
    _tanh_loops.quiet_unary(t, u, &ignored)
    clear_flags(flags)
    if single:
        cfp_lstm_grad_f(<float *>pu, <float *>pu + 4 * g.n,
                        <float *>cfp_data(c_prev), <float *>pgc,
                        <float *>pgh, <float *>pgp, <float *>cfp_data(gx),
                        g.blocks, g.rest)
    else:
        cfp_lstm_grad_d(<double *>pu, <double *>pu + 4 * g.n,
                        <double *>cfp_data(c_prev), <double *>pgc,
                        <double *>pgh, <double *>pgp, <double *>cfp_data(gx),
                        g.blocks, g.rest)
    if fetestexcept(flags):
        return None
    # Of two NaN operands an add or a product keeps one, which one
    # depending on the loop (a gradient NaN of either sign, say): where
    # the gradients hold a NaN, stock's NumPy calls compute them.
    if single:
        numbers = not (has_nan(<float *>pgp, g.n)
                       or has_nan(<float *>cfp_data(gx), 4 * g.n))
    else:
        numbers = not (has_nan(<double *>pgp, g.n)
                       or has_nan(<double *>cfp_data(gx), 4 * g.n))
    if not numbers:
        return None
    # gc_prev[batch:] = gc[batch:], or stock's 0 when gc is missing.
    if pgc != NULL:
        memcpy(pgp + g.n * itemsize, pgc + g.n * itemsize,
               (g.cell_size - g.n) * itemsize)
    else:
        memset(pgp + g.n * itemsize, 0, (g.cell_size - g.n) * itemsize)
    return gc_prev, gx


# -- the nodes ------------------------------------------------------------

# Module functions the stock LSTM forward and LSTMGrad.forward look up at
# call time.
cdef tuple _LSTM_FUNCTIONS = (
    (lstm, '_extract_gates'), (lstm, '_sigmoid'), (lstm, '_grad_tanh'),
    (lstm, '_grad_sigmoid'), (numpy, 'tanh'), (numpy, 'empty_like'),
    (chainer, 'get_cpu_array_types'))
cdef tuple _LSTM_ORIGINALS = tuple([getattr(m, n)
                                    for m, n in _LSTM_FUNCTIONS])


cdef bint _functions_stock():
    """Whether what the LSTM forwards call is still stock's."""
    cdef Py_ssize_t i
    for i in range(len(_LSTM_FUNCTIONS)):
        module, name = _LSTM_FUNCTIONS[i]
        if getattr(module, name) is not _LSTM_ORIGINALS[i]:
            return False
    return True


@cython.boundscheck(True)
@cython.wraparound(True)
cdef object _forward(object node, tuple inputs, ConfigView config):
    # LSTM.forward on NumPy arrays, iDeep unavailable: the one-pass kernel,
    # or where it declines, stock's forward.
    if len(inputs) != 2 or not _functions_stock():
        return NOT_HANDLED
    c_prev, x = inputs
    if type(c_prev) is not _ndarray or type(x) is not _ndarray:
        return NOT_HANDLED
    retain_inputs(node, (0, 1))
    outputs = fused_forward(c_prev, x)
    if outputs is not None:
        retain_outputs(node, (0,))
        return outputs
    # Stock's NumPy calls, from its own lines (where they warn).
    return NOT_HANDLED


@cython.boundscheck(True)
@cython.wraparound(True)
cdef object _grad_forward(tuple inputs):
    """``LSTMGrad().forward(inputs)`` on NumPy arrays (gc, gh may be None),
    iDeep unavailable, by the one-pass kernel; or NOT_HANDLED."""
    if len(inputs) != 5 or not _functions_stock():
        return NOT_HANDLED
    c_prev, x, c_next, gc, gh = inputs
    outputs = fused_grad(c_prev, x, c_next, gc, gh)
    if outputs is not None:
        return outputs
    # Stock's NumPy calls, from its own lines (where they warn).
    return NOT_HANDLED


@cython.boundscheck(True)
@cython.wraparound(True)
cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # LSTM.backward: LSTMGrad()(c_prev, x, c, gc, gh), an old-style Function
    # without a type check. A missing gradient is passed as None, as stock
    # passes it (its Variable, made by chainer.as_variable, requires no
    # grad).
    gc_var, gh_var = grad_outputs
    gc = grad_array(gc_var)
    gh = grad_array(gh_var)
    if (gc is None and gc_var is not None) or (
            gh is None and gh_var is not None):
        return NOT_HANDLED
    arrays = retained_inputs(func, [])
    if arrays is None or len(arrays) != 2:
        return NOT_HANDLED
    c_var = None
    c_node = retained_output(func)
    if (c_node is None and func._output_indexes_to_retain == (0,)
            and func._retained_output_data is not None):
        # The output c is dead (NStepLSTM drops the last cell of a layer
        # whose final state nobody reads): stock's own method makes the
        # fresh output Variable, and rewires the node to it, as stock's
        # backward does.
        c_var = func.get_retained_outputs()[0]
        c_node = c_var.node
        if type(array_of(c_node)) is not _ndarray:
            return NOT_HANDLED
    if c_node is None:
        return NOT_HANDLED
    arrays += [array_of(c_node), gc, gh]
    outputs = _grad_forward(tuple(arrays))
    if outputs is NOT_HANDLED:
        outputs = lstm.LSTMGrad().forward(tuple(arrays))
    if (type(outputs) is not tuple or len(<tuple>outputs) != 2
            or type(outputs[0]) is not _ndarray
            or type(outputs[1]) is not _ndarray):
        return NOT_HANDLED
    cdef bint rg = (retained_inputs_require_grad(func)
                    or requires_grad_of(c_node)
                    or (gc_var is not None and grad_requires_grad(gc_var))
                    or (gh_var is not None and grad_requires_grad(gh_var)))
    return (new_grad(outputs[0], rg),
            new_grad(outputs[1], rg))


ENTRIES = (
    forward_callees(compiled(
        lstm.LSTM, _forward, ('forward', 'retain_inputs', 'retain_outputs'),
        _backward, backward_callees=(
            (lstm.LSTMGrad, '__init__'), (lstm.LSTMGrad, 'forward'),
            (lstm.LSTMGrad, 'check_type_forward'),
            (lstm, '_extract_gates'), (lstm, '_sigmoid'),
            (lstm, '_grad_tanh'), (lstm, '_grad_sigmoid')),
        type_check=()), ((lstm, '_extract_gates'), (lstm, '_sigmoid'))),
)
