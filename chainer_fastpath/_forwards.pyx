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
import numpy

from chainer_fastpath._audit cimport StockMethods
from chainer_fastpath._config cimport ConfigView

import chainer
from chainer import function_node
from chainer.backends import intel64
from chainer.functions.activation import relu
from chainer.functions.activation import sigmoid
from chainer.functions.activation import tanh
from chainer.functions.array import concat
from chainer.functions.connection import embed_id
from chainer.functions.connection import linear
from chainer.functions.loss import softmax_cross_entropy
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


cdef bint methods_unchanged(object node, type cls, tuple methods):
    """Whether each ``(name, original)`` is still what ``node`` finds,
    neither replaced on its class nor set on the instance."""
    cdef dict own = node.__dict__
    for name, original in methods:
        if name in own or getattr(cls, name) is not original:
            return False
    return True


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
    if kind == ADD_CONSTANT or kind == MUL_CONSTANT:
        if basic_math._preprocess_const is not _preprocess_const:
            return NOT_COMPILED
        # _preprocess_const(x, value): the value in the input's dtype.
        x = in_data[0]
        value = x.dtype.type(node.value)
        if kind == ADD_CONSTANT:
            return _utils.force_array(x + value),
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
    # weights (soft targets and weights go to stock).
    assert len(inputs) > 0
    x, t = inputs
    if node.class_weight is not None or (
            x.ndim == t.ndim and x.shape == t.shape):
        return NOT_COMPILED
    node._input_indexes_to_retain = (0, 1)
    # _log_softmax asks this first; on NumPy only its config check counts.
    _should_use_cudnn('>=auto')
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
