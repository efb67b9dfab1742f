# cython: boundscheck=True, wraparound=True
"""Compiled ``forward`` of the most common FunctionNodes, for NumPy inputs.

Each one performs the NumPy calls of the stock ``forward`` it stands for, in
the same order with the same arguments, and sets the same node attributes,
so outputs are identical; what it skips is the Python around them (iDeep and
static-graph dispatch, which cannot apply on this path). It is used only while
the node's class is exactly the audited one and every method the stock
``forward`` would call, on the class and on the instance, is still stock's;
otherwise ``apply`` calls ``node.forward`` as usual.
"""
cimport cython
from libc.stdint cimport uint32_t, uint64_t
import numpy

from chainer_fastpath._audit cimport StockMethods
from chainer_fastpath._config cimport ConfigView
from chainer_fastpath cimport _lstm_cell
from chainer_fastpath cimport _softmax_cross_entropy as _sce
from chainer_fastpath._fpe cimport feclearexcept, fetestexcept, watched

import chainer
from chainer import function_node
from chainer.backends import intel64
from chainer.functions.activation import relu
from chainer.functions.activation import sigmoid
from chainer.functions.activation import tanh
from chainer.functions.array import concat
from chainer.functions.array import split_axis
from chainer.functions.connection import embed_id
from chainer.functions.connection import linear
from chainer.functions.loss import softmax_cross_entropy
from chainer.functions.loss import squared_error
from chainer.functions.rnn import lstm
from chainer.functions.math import basic_math

cdef type _ndarray = numpy.ndarray
cdef object _empty = numpy.empty
cdef object _dot = numpy.dot
cdef object _maximum = numpy.maximum
cdef object _tanh_ufunc = numpy.tanh
cdef object _concatenate = numpy.concatenate
cdef object _where = numpy.where
cdef object _exp = numpy.exp
cdef object _log = numpy.log
cdef object _rollaxis = numpy.rollaxis
cdef object _arange = numpy.arange
cdef object _float16 = numpy.float16
cdef object _float32 = numpy.float32
cdef object _should_use_cudnn = chainer.should_use_cudnn
cdef object _preprocess_const = basic_math._preprocess_const
cdef object _ascontiguousarray = numpy.ascontiguousarray
cdef object _utils = chainer.utils
cdef object _split = numpy.split
cdef object _zeros = numpy.zeros
cdef object _int64 = numpy.int64
cdef object _float64 = numpy.float64
cdef object _integer = numpy.integer

NOT_COMPILED = object()

cdef enum Kind:
    LINEAR = 1
    RELU = 2
    ADD = 3
    TANH = 4
    SIGMOID = 5
    CONCAT = 6
    EMBED_ID = 7
    SOFTMAX_CROSS_ENTROPY = 8
    ADD_CONSTANT = 9
    MUL_CONSTANT = 10
    SPLIT_AXIS = 11
    MUL = 12
    SUB = 13
    SUB_FROM_CONSTANT = 14
    SQUARED_ERROR = 15
    EMBED_ID_GRAD = 16
    LSTM = 17

cdef type _FunctionNode = function_node.FunctionNode


# class -> (kind, the methods its stock forward calls)
cdef dict _audited = {}


def _audit(cls, kind, names):
    _audited[cls] = (kind, StockMethods(cls, names))


if not intel64.is_ideep_available():
    # With iDeep installed the stock forwards may take its branch: leave
    # them to stock.
    _audit(linear.LinearFunction, LINEAR,
           ('forward', 'static_linear_no_bias', 'static_add_bias',
            'retain_inputs'))
    _audit(relu.ReLU, RELU, ('forward', 'forward_cpu', 'retain_outputs'))
    _audit(basic_math.Add, ADD, ('forward',))
    _audit(tanh.Tanh, TANH, ('forward', 'forward_cpu', 'retain_outputs'))
    _audit(sigmoid.Sigmoid, SIGMOID,
           ('forward', 'forward_cpu', 'retain_outputs'))
    _audit(concat.Concat, CONCAT, ('forward',))
    _audit(embed_id.EmbedIDFunction, EMBED_ID, ('forward', 'retain_inputs'))
    _audit(basic_math.AddConstant, ADD_CONSTANT, ('forward',))
    _audit(basic_math.MulConstant, MUL_CONSTANT, ('forward',))
    _audit(softmax_cross_entropy.SoftmaxCrossEntropy, SOFTMAX_CROSS_ENTROPY,
           ('forward', 'forward_cpu', 'retain_inputs'))
    _audit(split_axis.SplitAxis, SPLIT_AXIS,
           ('forward', 'indices_or_sections'))
    _audit(basic_math.Mul, MUL, ('forward', 'retain_inputs'))
    _audit(basic_math.Sub, SUB, ('forward',))
    _audit(basic_math.SubFromConstant, SUB_FROM_CONSTANT, ('forward',))
    _audit(squared_error.SquaredError, SQUARED_ERROR,
           ('forward', 'retain_inputs'))
    _audit(embed_id.EmbedIDGrad, EMBED_ID_GRAD, ('forward', 'retain_inputs'))
    _audit(lstm.LSTM, LSTM, ('forward', 'retain_inputs', 'retain_outputs'))


cdef object run_forward(object node, tuple in_data, ConfigView config):
    """``node.forward(in_data)`` compiled, or NOT_COMPILED."""
    entry = _audited.get(type(node))
    if (entry is None
            or not (<StockMethods>(<tuple>entry)[1]).found_by(node)):
        return NOT_COMPILED
    cdef int kind = (<tuple>entry)[0]
    if kind == LINEAR:
        return _linear(node, in_data, config)
    if kind == RELU:
        return _relu(node, in_data)
    if kind == ADD:
        return _add(node, in_data)
    if kind == TANH:
        return _tanh(node, in_data)
    if kind == SIGMOID:
        return _sigmoid(node, in_data)
    if kind == CONCAT:
        return _concat(node, in_data)
    if kind == EMBED_ID:
        return _embed_id(node, in_data)
    if kind == SOFTMAX_CROSS_ENTROPY:
        return _softmax_cross_entropy(node, in_data)
    if kind == SPLIT_AXIS:
        return _split_axis(node, in_data)
    if kind == EMBED_ID_GRAD:
        return _embed_id_grad(node, in_data)
    if kind == LSTM:
        return _lstm(node, in_data)
    if kind == MUL:
        # Mul.forward: may broadcast.
        node._input_indexes_to_retain = (0, 1)
        return _utils.force_array(in_data[0] * in_data[1]),
    if kind == SUB:
        return _utils.force_array(in_data[0] - in_data[1]),
    if kind == SQUARED_ERROR:
        x0, x1 = in_data
        diff = x0 - x1
        node._input_indexes_to_retain = (0, 1)
        return _utils.force_array(diff * diff, dtype=x0.dtype),
    if (kind == ADD_CONSTANT or kind == MUL_CONSTANT
            or kind == SUB_FROM_CONSTANT):
        if basic_math._preprocess_const is not _preprocess_const:
            return NOT_COMPILED
        # _preprocess_const(x, value): the value in the input's dtype.
        x = in_data[0]
        value = x.dtype.type(node.value)
        if kind == ADD_CONSTANT:
            return _utils.force_array(x + value),
        if kind == SUB_FROM_CONSTANT:
            return _utils.force_array(value - x),
        return _utils.force_array(value * x),
    return NOT_COMPILED


cdef tuple _linear(object node, tuple inputs, ConfigView config):
    # LinearFunction.forward, iDeep unavailable, no static schedule.
    node._config_use_ideep = config.get('use_ideep')
    cdef object x, W, b = None
    if len(inputs) == 3:
        x, W, b = inputs
    else:
        x, W = inputs
    if (isinstance(x, _ndarray)
            and not (x.flags.c_contiguous or x.flags.f_contiguous)
            and 1 in x.shape):
        x = _ascontiguousarray(x)
    y = _empty((x.shape[0], W.shape[0]), dtype=x.dtype)
    if x.dtype == W.dtype:
        _dot(x, W.T, out=y)
    else:
        y[:] = x.dot(W.T).astype(x.dtype, copy=False)
    if len(inputs) == 3:
        y += b
    node._input_indexes_to_retain = (0, 1)
    return y,


cdef tuple _relu(object node, tuple inputs):
    # FunctionNode.forward -> ReLU.forward_cpu, iDeep unavailable.
    assert len(inputs) > 0
    x, = inputs
    y = _maximum(x, 0, dtype=x.dtype)
    node._output_indexes_to_retain = (0,)
    return _utils.force_array(y),


cdef tuple _add(object node, tuple x):
    return _utils.force_array(x[0] + x[1]),


cdef tuple _tanh(object node, tuple x):
    # FunctionNode.forward -> Tanh.forward_cpu.
    assert len(x) > 0
    y = _utils.force_array(_tanh_ufunc(x[0]))
    node._output_indexes_to_retain = (0,)
    node._use_cudnn = False
    return y,


cdef tuple _sigmoid(object node, tuple inputs):
    # FunctionNode.forward -> Sigmoid.forward_cpu.
    assert len(inputs) > 0
    x = inputs[0]
    half = x.dtype.type(0.5)
    y = _utils.force_array(_tanh_ufunc(x * half) * half + half)
    node._output_indexes_to_retain = (0,)
    node._use_cudnn = False
    return y,


cdef tuple _concat(object node, tuple xs):
    # Concat.forward, iDeep unavailable.
    return _concatenate(xs, node.axis),


cdef tuple _embed_id(object node, tuple inputs):
    # EmbedIDFunction.forward, not in debug mode (apply falls back there).
    node._input_indexes_to_retain = (0,)
    x, W = inputs
    node._w_shape = W.shape
    ignore_label = node.ignore_label
    if ignore_label is not None:
        mask = (x == ignore_label)
        return _where(mask[..., None], 0, W[_where(mask, 0, x)]),
    return W[x],


cdef object _softmax_cross_entropy(object node, tuple inputs):
    # FunctionNode.forward -> SoftmaxCrossEntropy.forward_cpu with
    # log_softmax._log_softmax inlined, for hard labels without class
    # weights (soft targets and weights go to stock): the one-pass kernel
    # on a matrix, or where it declines, the same NumPy calls.
    assert len(inputs) > 0
    x, t = inputs
    if node.class_weight is not None or (
            x.ndim == t.ndim and x.shape == t.shape):
        return NOT_COMPILED
    node._input_indexes_to_retain = (0, 1)
    # _log_softmax asks this first; on NumPy only its config check counts.
    _should_use_cudnn('>=auto')
    result = _sce.forward(x, t, node.ignore_label, node.normalize,
                          node.reduce, node.cache_score)
    if result is not None:
        loss, y, coeff = result
        if node.cache_score:
            node.y = y
        if node.reduce == 'mean':
            node._coeff = coeff
        return loss,
    m = x.max(axis=1, keepdims=True)
    e = x - m
    _exp(e, out=e)
    s = e.sum(axis=1, keepdims=True)
    _log(s, out=s)
    m += s
    log_y = x - m
    if node.cache_score:
        node.y = _exp(log_y)
    log_yd = _rollaxis(log_y, 1)
    log_yd = log_yd.reshape(len(log_yd), -1)
    t_valid = t != node.ignore_label
    t = t * t_valid
    log_p = log_yd[t.ravel(), _arange(t.size)]
    log_p *= t_valid.ravel()
    if node.reduce == 'mean':
        if node.normalize:
            count = t_valid.sum()
        else:
            count = len(x)
        node._coeff = 1.0 / max(count, 1)
        reduc_dtype = _float32 if x.dtype == _float16 else x.dtype
        y = log_p.sum(keepdims=True, dtype=reduc_dtype)
        y = y * (-node._coeff)
        y = y.astype(x.dtype, copy=False)
        return y.reshape(()),
    return -log_p.reshape(t.shape),


cdef object _split_axis(object node, tuple inputs):
    # SplitAxis.forward, iDeep unavailable: numpy.split(x, indices or
    # sections, axis), whose array_split takes the views
    # swapaxes(swapaxes(x, axis, 0)[start:stop], axis, 0), the same views
    # as x[..., start:stop, ...]. Integer offsets and sections only; what
    # numpy.split would reject goes to stock, to raise there.
    if len(inputs) != 1 or numpy.split is not _split:
        return NOT_COMPILED
    x = inputs[0]
    axis = node.axis
    if type(axis) is not int:
        return NOT_COMPILED
    cdef Py_ssize_t ndim = x.ndim
    cdef Py_ssize_t ax = axis
    if ax < 0:
        ax += ndim
    if ax < 0 or ax >= ndim:
        return NOT_COMPILED
    n = x.shape[ax]
    cdef list points
    cdef Py_ssize_t i, each, sections
    indices = node.indices
    if indices is not None:
        # array_split: [0] + list(indices) + [n].
        points = [0]
        for p in indices:
            if type(p) is not int and not isinstance(p, _integer):
                return NOT_COMPILED
            points.append(p)
        points.append(n)
    else:
        if type(node.sections) is not int:
            return NOT_COMPILED
        sections = node.sections
        if sections <= 0 or n % sections:
            return NOT_COMPILED
        each = n // sections
        points = [i * each for i in range(sections + 1)]
    node._xp = numpy
    cdef tuple lead = (slice(None),) * ax
    cdef list ret = []
    for i in range(len(points) - 1):
        ret.append(x[lead + (slice(points[i], points[i + 1]),)])
    node._shapes = [r.shape for r in ret]
    return tuple(ret)


ctypedef fused _float_t:
    float
    double


cdef class _EmbedGrad:
    """EmbedIDGrad's operands as its NumPy loop reads them: the indices as
    contiguous int64, the gradient as one contiguous row per index."""
    cdef object xs, rows_gy, dtype
    cdef bint has_ignore
    cdef long long ignore


cdef _EmbedGrad _embed_grad_operands(object w_shape, object ignore, object x,
                                     object gy):
    """None unless stock's ``EmbedIDGrad.forward`` on ``(x, gy)`` is what
    the loops below compute: float32 or float64 gradient rows of the
    weight's width, signed integer indices, every one stock would use in
    range (stock raises IndexError otherwise)."""
    if (type(x) is not _ndarray or type(gy) is not _ndarray
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
    n = x.size
    if n == 0 or gy.size != n * cols:
        return None
    cdef _EmbedGrad g = _EmbedGrad.__new__(_EmbedGrad)
    g.xs = _ascontiguousarray(x.ravel().astype(_int64, copy=False))
    g.has_ignore = ignore is not None
    g.ignore = ignore if g.has_ignore else 0
    if not _indices_in_range(g.xs, g.has_ignore, g.ignore, rows):
        return None
    g.rows_gy = _ascontiguousarray(gy.reshape(n, -1))
    g.dtype = gy.dtype
    return g


@cython.boundscheck(False)
@cython.wraparound(False)
cdef bint _indices_in_range(const long long[::1] x, bint has_ignore,
                            long long ignore, long long rows) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        if has_ignore and x[i] == ignore:
            continue
        if x[i] < -rows or x[i] >= rows:
            return False
    return True


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _scatter_rows(_float_t[:, ::1] gW, const long long[::1] x,
                        _float_t[:, ::1] gy, bint has_ignore,
                        long long ignore) noexcept nogil:
    # for ix, igy in zip(x, gy): gW[ix] += igy, skipping the ignore label;
    # one IEEE add per element, in stock's order.
    cdef Py_ssize_t i, j, r, rows = gW.shape[0], cols = gW.shape[1]
    for i in range(x.shape[0]):
        if has_ignore and x[i] == ignore:
            continue
        r = x[i]
        if r < 0:
            r += rows
        for j in range(cols):
            gW[r, j] = gW[r, j] + gy[i, j]


cdef object _embed_id_grad(object node, tuple inputs):
    # EmbedIDGrad.forward on NumPy: gW = zeros(w_shape, gy.dtype), then
    # gW[ix] += igy for each index and gradient row, in order, skipping
    # the ignore label. What _embed_grad_operands declines (float16, whose
    # add rounds through float, rows that would broadcast, indices out of
    # range) and a floating-point exception that numpy.errstate does not
    # ignore are left to stock, which computes, warns or raises as it does.
    if len(inputs) != 2 or numpy.zeros is not _zeros:
        return NOT_COMPILED
    x, gy = inputs
    cdef _EmbedGrad g = _embed_grad_operands(node.w_shape, node.ignore_label,
                                             x, gy)
    if g is None:
        return NOT_COMPILED
    node._input_indexes_to_retain = (0,)
    node._gy_shape = gy.shape
    gW = _zeros(node.w_shape, dtype=g.dtype)
    cdef int flags = watched()
    feclearexcept(flags)
    if g.dtype == _float32:
        _scatter_rows[float](gW, g.xs, g.rows_gy, g.has_ignore, g.ignore)
    else:
        _scatter_rows[double](gW, g.xs, g.rows_gy, g.has_ignore, g.ignore)
    if fetestexcept(flags):
        return NOT_COMPILED
    return gW,


cdef bint embed_id_grad_into(object acc, object w_shape, object ignore,
                             object x, object gy) except -1:
    """``numpy.add(acc, gW, out=acc)``, ``gW`` what stock's
    ``EmbedIDGrad(w_shape, ignore).forward((x, gy))`` returns, without
    building ``gW``: its rows of zeros leave ``acc`` as it is, given that
    ``acc`` holds no -0.0 and no signaling NaN (``adds_zeros_exactly``).
    False, with ``acc`` untouched, where ``_embed_id_grad`` would leave the
    work to stock, a row's sum is a NaN (whose payload NumPy's add
    chooses), or the batch is too large for the duplicate search."""
    if numpy.zeros is not _zeros:
        return False
    cdef _EmbedGrad g = _embed_grad_operands(w_shape, ignore, x, gy)
    if (g is None or type(acc) is not _ndarray or acc.dtype != g.dtype
            or acc.shape != w_shape or not acc.flags.c_contiguous):
        return False
    cdef Py_ssize_t n = len(g.xs)
    if n > 256:    # duplicates are found by comparing each index with
        return False    # those before it
    tmp = _empty((n, (<tuple>w_shape)[1]), dtype=g.dtype)
    order = _empty(n, numpy.intp)
    cdef Py_ssize_t k
    cdef int flags = watched()
    feclearexcept(flags)
    if g.dtype == _float32:
        k = _rows_added[float](acc, g.xs, g.rows_gy, g.has_ignore, g.ignore,
                               tmp, order)
    else:
        k = _rows_added[double](acc, g.xs, g.rows_gy, g.has_ignore,
                                g.ignore, tmp, order)
    if k < 0 or fetestexcept(flags):
        return False
    if g.dtype == _float32:
        _put_rows[float](acc, tmp, order, k)
    else:
        _put_rows[double](acc, tmp, order, k)
    return True


cdef inline Py_ssize_t _row_of(long long index, Py_ssize_t rows) noexcept nogil:
    # The row a negative index wraps to, as NumPy indexing wraps it.
    return <Py_ssize_t>(index + rows if index < 0 else index)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _rows_added(const _float_t[:, ::1] acc,
                            const long long[::1] x,
                            const _float_t[:, ::1] gy, bint has_ignore,
                            long long ignore, _float_t[:, ::1] tmp,
                            Py_ssize_t[::1] order) noexcept nogil:
    # For each row r that x names, in order of first appearance:
    # tmp[k] = acc[r] + ((0 + gy[i1]) + gy[i2] ...), the row's gradients in
    # stock's order (_scatter_rows), and order[k] = r. Returns the number
    # of rows, or -1 on a NaN.
    cdef Py_ssize_t i, j, c, k = 0, r, rows = acc.shape[0]
    cdef Py_ssize_t cols = acc.shape[1], n = x.shape[0]
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
            tmp[k, c] = zero + gy[i, c]
        for j in range(i + 1, n):
            if (not (has_ignore and x[j] == ignore)
                    and _row_of(x[j], rows) == r):
                for c in range(cols):
                    tmp[k, c] = tmp[k, c] + gy[j, c]
        for c in range(cols):
            v = acc[r, c] + tmp[k, c]
            nan |= v != v
            tmp[k, c] = v
        order[k] = r
        k += 1
    return -1 if nan else k


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _put_rows(_float_t[:, ::1] acc, const _float_t[:, ::1] tmp,
                    const Py_ssize_t[::1] order, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t i, c
    for i in range(k):
        for c in range(acc.shape[1]):
            acc[order[i], c] = tmp[i, c]


cdef bint adds_zeros_exactly(object acc) except -1:
    """Whether ``acc + 0`` is ``acc``, bit for bit and raising no
    floating-point exception: a C-contiguous float32 or float64 array with
    no -0.0 (which + 0.0 makes +0.0) and no signaling NaN (which it makes
    quiet, raising invalid)."""
    if (type(acc) is not _ndarray or not acc.flags.c_contiguous
            or (acc.dtype != _float32 and acc.dtype != _float64)):
        return False
    if acc.dtype == _float32:
        return not _has_bits[uint32_t](
            acc.reshape(-1).view(numpy.uint32), 0x80000000u, 0x7f800000u,
            0x00400000u)
    return not _has_bits[uint64_t](
        acc.reshape(-1).view(numpy.uint64), 0x8000000000000000u,
        0x7ff0000000000000u, 0x0008000000000000u)


ctypedef fused _bits_t:
    uint32_t
    uint64_t


@cython.boundscheck(False)
@cython.wraparound(False)
cdef bint _has_bits(const _bits_t[::1] a, _bits_t neg_zero, _bits_t exponent,
                    _bits_t quiet) noexcept nogil:
    # Any -0.0, or any NaN (all exponent bits, some mantissa bit) whose
    # quiet bit is clear.
    cdef Py_ssize_t i
    cdef _bits_t v, mantissa = exponent ^ (neg_zero - 1)
    cdef bint found = False
    for i in range(a.shape[0]):
        v = a[i]
        found |= (v == neg_zero) | (((v & exponent) == exponent)
                                    & ((v & mantissa) != 0)
                                    & ((v & quiet) == 0))
    return found


# Module functions the stock LSTM forward and LSTMGrad.forward look up at
# call time.
cdef tuple _LSTM_FUNCTIONS = (
    (lstm, '_extract_gates'), (lstm, '_sigmoid'), (lstm, '_grad_tanh'),
    (lstm, '_grad_sigmoid'), (numpy, 'tanh'), (numpy, 'empty_like'),
    (chainer, 'get_cpu_array_types'))
cdef tuple _LSTM_ORIGINALS = tuple([getattr(m, n) for m, n in _LSTM_FUNCTIONS])
cdef object _empty_like = numpy.empty_like


cdef bint lstm_functions_stock():
    """Whether what the LSTM forwards call is still stock's."""
    cdef Py_ssize_t i
    for i in range(len(_LSTM_FUNCTIONS)):
        module, name = _LSTM_FUNCTIONS[i]
        if getattr(module, name) is not _LSTM_ORIGINALS[i]:
            return False
    return True


cdef inline list _gates(object x):
    # lstm._extract_gates: four strided views of x.
    r = x.reshape((len(x), x.shape[1] // 4, 4) + x.shape[2:])
    return [r[:, :, 0], r[:, :, 1], r[:, :, 2], r[:, :, 3]]


cdef inline object _sigmoid_of(object x):
    # lstm._sigmoid on NumPy.
    half = x.dtype.type(0.5)
    return _tanh_ufunc(x * half) * half + half


cdef object _lstm(object node, tuple inputs):
    # LSTM.forward on NumPy arrays, iDeep unavailable: the one-pass kernel,
    # or where it declines, the same NumPy calls in the same order.
    if len(inputs) != 2 or not lstm_functions_stock():
        return NOT_COMPILED
    c_prev, x = inputs
    if type(c_prev) is not _ndarray or type(x) is not _ndarray:
        return NOT_COMPILED
    node._input_indexes_to_retain = (0, 1)
    outputs = _lstm_cell.lstm_forward(c_prev, x)
    if outputs is not None:
        node._output_indexes_to_retain = (0,)
        return outputs
    a, i, f, o = _gates(x)
    batch = len(x)
    a = _tanh_ufunc(a)
    i = _sigmoid_of(i)
    f = _sigmoid_of(f)
    o = _sigmoid_of(o)
    c_next = _empty_like(c_prev)
    c_next[:batch] = a * i + f * c_prev[:batch]
    h = o * _tanh_ufunc(c_next[:batch])
    c_next[batch:] = c_prev[batch:]
    node._output_indexes_to_retain = (0,)
    return c_next, h


cdef object lstm_grad(tuple inputs):
    """``LSTMGrad().forward(inputs)`` on NumPy arrays (gc, gh may be None),
    iDeep unavailable, or NOT_COMPILED: the one-pass kernel, or where it
    declines, stock's NumPy calls."""
    if len(inputs) != 5 or not lstm_functions_stock():
        return NOT_COMPILED
    c_prev, x, c_next, gc, gh = inputs
    outputs = _lstm_cell.lstm_grad(c_prev, x, c_next, gc, gh)
    if outputs is not None:
        return outputs
    batch = len(x)
    gx = _empty_like(x)
    ga, gi, gf, go = _gates(gx)
    if gc is None:
        gc_update = 0
        gc_rest = 0
    else:
        gc_update = gc[:batch]
        gc_rest = gc[batch:]
    if gh is None:
        gh = 0
    a, i, f, o = _gates(x)
    tanh_a = _tanh_ufunc(a)
    sig_i = _sigmoid_of(i)
    sig_f = _sigmoid_of(f)
    sig_o = _sigmoid_of(o)
    co = _tanh_ufunc(c_next[:batch])
    gc_prev = _empty_like(c_prev)
    # _grad_tanh(y) = 1 - y * y; _grad_sigmoid(y) = y * (1 - y).
    gc_prev[:batch] = gh * sig_o * (1 - co * co) + gc_update
    gc = gc_prev[:batch]
    ga[:] = gc * sig_i * (1 - tanh_a * tanh_a)
    gi[:] = gc * tanh_a * (sig_i * (1 - sig_i))
    gf[:] = gc * c_prev[:batch] * (sig_f * (1 - sig_f))
    go[:] = gh * co * (sig_o * (1 - sig_o))
    gc_prev[:batch] *= sig_f
    gc_prev[batch:] = gc_rest
    return gc_prev, gx
