"""Floating-point exceptions in every compiled forward and backward: the
same warnings as stock (category, message, file, line, so filters by module
and the once-per-location registries agree), the same errors raised from the
same line, the same ``numpy.seterrcall`` calls from the same line, and the
same values and partial states, under every NumPy error state."""
import operator

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.noise import dropout
from chainer.functions.pooling import average_pooling_2d
from chainer.functions.pooling import max_pooling_nd

from chainer_fastpath._core import _registry
from chainer_fastpath.functions import register_all
from chainer_fastpath.testing import assert_same, run_both

f16, f32 = numpy.float16, numpy.float32
BIG = 3e38          # float32: BIG + BIG and 2 * BIG overflow
TINY = 1e-40        # float32: a subnormal; halving it underflows
INF = numpy.inf
# A signaling NaN: adding it to anything is invalid.
SNAN = numpy.array([0x7fa00000], numpy.uint32).view(f32)[0]


def _v(values, dtype=f32, keep=None):
    v = chainer.Variable(numpy.array(values, dtype))
    if keep is not None:
        keep.append(v)
    return v


def _backward(keep, y, gy):
    keep.append(y)
    y.grad = numpy.array(gy, y.dtype)
    y.backward()


def _double_backward(keep, y, gy):
    keep.append(y)
    y.grad = numpy.array(gy, y.dtype)
    y.backward(enable_double_backprop=True)


def _mul_backward(keep):
    x = _v([2.0, 1.0], keep=keep)
    w = _v([3.0, 0.0], keep=keep)
    _backward(keep, x * w, [BIG, INF])


def _linear(keep, x, b):
    return F.linear(_v(x, keep=keep), _v([[1.0]], keep=keep),
                    _v(b, keep=keep))


def _softmax_cross_entropy(keep, x, dtype=f32, **kwargs):
    return F.softmax_cross_entropy(_v(x, dtype, keep),
                                   numpy.array([0, 1], numpy.int32), **kwargs)


_PEAK = [[[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]]


def _max_pooling_grad(keep):
    pool = max_pooling_nd.MaxPoolingND(2, 3, 1, 1)
    pool.apply((numpy.array(_PEAK, f32),))
    gy = _v([[[[BIG] * 3] * 3]], keep=keep)
    return max_pooling_nd.MaxPoolingNDGrad(pool).apply((gy,))[0]


def _average_pooling_grad(keep, gy):
    pool = average_pooling_2d.AveragePooling2D((1, 2), 1)
    pool.apply((numpy.array([[[[1.0, 1.0, 1.0]]]], f32),))
    gy = _v([[[[gy, gy]]]], keep=keep)
    return average_pooling_2d.AveragePooling2DGrad(pool).apply((gy,))[0]


def _dropout_grad(keep, gy):
    mask = numpy.array([2.0], f32)
    return dropout.DropoutGrad(mask).apply((_v(gy, keep=keep),))[0]


def _bernoulli_log_prob(keep, logit, x):
    from chainer.distributions import bernoulli
    return bernoulli._bernoulli_log_prob(_v(logit, keep=keep),
                                         numpy.array(x, f32))


def _lstm(keep, c, x):
    return F.lstm(_v(c, keep=keep), _v(x, keep=keep))


def _lstm_backward(keep):
    c, h = _lstm(keep, [[0.0]], [[0.0, 0.0, 0.0, 0.0]])
    keep.append(c)   # a retained output the backward reads
    _backward(keep, h, [[INF]])


def _embed_id_backward_into_a_sum(keep):
    # Its gradient rows overflow; W's third gradient goes into the sum of
    # the first two in place.
    w = _v([[1.0], [2.0]], keep=keep)
    x = numpy.array([0, 1], numpy.int32)
    y = F.embed_id(x, w) + F.embed_id(x, w) + F.embed_id(x, w) * 2.0
    _backward(keep, y, [[BIG], [1.0]])


def _output_layer_backward(keep, make_link):
    # w.x = 100 for every path: exp(100) overflows float32 in the
    # backward, and the forward's log-sum meets it too.
    link = make_link()
    link.W.array[...] = 1
    keep.append(link.W)
    x = _v([[100.0]], keep=keep)
    loss = link(x, numpy.array([0], numpy.int32))
    keep.append(loss)
    loss.backward()


def _hierarchical_softmax(keep):
    import chainer.links as L
    _output_layer_backward(keep, lambda: L.BinaryHierarchicalSoftmax(
        1, ((0, 1), 2)))


def _negative_sampling(keep):
    import chainer.links as L
    _output_layer_backward(keep, lambda: L.NegativeSampling(1, [1, 1, 1], 2))


def _negative_sampling_forward(keep):
    # Each of two negative samples adds 3e38 to the row's loss: the sum
    # overflows float32, after the samples were drawn.
    import chainer.links as L
    link = L.NegativeSampling(1, [1, 1, 1], 2)
    link.W.array[...] = 1
    keep.append(link.W)
    x = _v([[3e38]], keep=keep)
    keep.append(link(x, numpy.array([0], numpy.int32)))


def _bn(keep, x, fixed=False, **kwargs):
    args = [_v(x, keep=keep), _v([1.0, 0.0], keep=keep),
            _v([0.0, 1.0], keep=keep)]
    if fixed:
        return F.fixed_batch_normalization(
            *args, _v([0.0, 0.0], keep=keep), _v([1.0, 1.0], keep=keep),
            **kwargs)
    return F.batch_normalization(*args, **kwargs)


def _bn_running(keep):
    # The running variance, float16, overflows in its update (after the
    # running mean's): stock's partial update.
    mean = numpy.zeros(2, f16)
    var = numpy.ones(2, f16)
    keep += [chainer.Variable(mean), chainer.Variable(var)]
    _bn(keep, [[1e3, 1.0], [-1e3, 2.0]], running_mean=mean, running_var=var)


def _bn_grad(keep, fixed):
    # Double backprop applies the gradient node: inf * 0 (gamma's 0) in its
    # forward.
    n = len(keep)
    y = _bn(keep, [[1.0, 2.0], [3.0, 5.0]], fixed=fixed)
    gy = _v([[1.0, INF], [1.0, 1.0]])
    keep += chainer.grad([y], keep[n:n + 1], [gy],
                         enable_double_backprop=True)


# FunctionNode class name -> cases, each ``fn(keep)`` meeting an exception
# in the compiled forward or backward of that class.
CASES = {
    'Add': [lambda keep: F.add(_v([BIG, 1], keep=keep), _v([BIG, 2]))],
    'AddConstant': [lambda keep: _v([BIG, -INF], keep=keep) + 3e38,
                    lambda keep: _v([BIG], keep=keep) - (-3e38),
                    # The constant's conversion overflows, then the sum
                    # is invalid: stock acts on each once.
                    lambda keep: 1e39 + _v([-INF, 1.0], keep=keep)],
    'Sub': [lambda keep: _v([BIG, INF], keep=keep) - _v([-BIG, INF])],
    'Sum': [lambda keep: F.sum(_v([BIG, BIG], keep=keep)),
            lambda keep: F.sum(_v([[INF, -INF], [1.0, 2.0]], keep=keep),
                               axis=1)],
    'SubFromConstant': [lambda keep: 3e38 - _v([-BIG], keep=keep)],
    'Mul': [lambda keep: _v([BIG, INF], keep=keep) * _v([2.0, 0.0]),
            _mul_backward],
    'MulConstant': [
        lambda keep: _v([BIG, INF], keep=keep) * 2.0,
        lambda keep: _backward(keep, _v([1.0, 0.0]) * 2.0, [BIG, 1.0]),
        # The constant's conversion to the input's dtype warns.
        lambda keep: _v([1.0], keep=keep) * 1e300,
        lambda keep: _v([1.0], f16, keep=keep) * 1e5],
    'ReLU': [lambda keep: _backward(keep, F.relu(_v([-1.0, 2.0])),
                                    [INF, 1.0])],
    'LeakyReLU': [
        lambda keep: F.leaky_relu(_v([-INF, 1.0], keep=keep), 0.0),
        lambda keep: _backward(keep, F.leaky_relu(_v([-1.0, 1.0]), 0.0),
                               [INF, 1.0]),
        lambda keep: _backward(keep, F.leaky_relu(_v([-1.0, 1.0]), 4.0),
                               [BIG, 1.0])],
    'Sigmoid': [
        lambda keep: F.sigmoid(_v([TINY, 1.0], keep=keep)),
        lambda keep: _backward(keep, F.sigmoid(_v([100.0, 1.0])),
                               [INF, 1.0])],
    'Softplus': [
        lambda keep: F.softplus(_v([BIG, -1.0], keep=keep), beta=2.0),
        # exp(-|beta * x|) underflows.
        lambda keep: F.softplus(_v([-200.0, 1.0], keep=keep)),
        # beta_inv 1e9 is no float16: the product is float32, its cast
        # back overflows.
        lambda keep: F.softplus(_v([1.0], f16, keep), beta=1e-9),
        lambda keep: _backward(keep, F.softplus(_v([100.0, 1.0])),
                               [1.0, 1.0])],
    'LogSoftmax': [
        lambda keep: F.log_softmax(_v([[INF, 1.0]], keep=keep)),
        lambda keep: _backward(keep, F.log_softmax(_v([[0.0, 0.0]])),
                               [[INF, -INF]])],
    # NumPy's tanh raises nothing, not even on a signaling NaN.
    'Tanh': [
        lambda keep: _backward(keep, F.tanh(_v([100.0, 1.0])), [INF, 1.0])],
    'SquaredError': [
        lambda keep: F.squared_error(_v([BIG], keep=keep), _v([-BIG])),
        lambda keep: _backward(keep, F.squared_error(_v([1.0]), _v([0.0])),
                               [BIG])],
    'MeanSquaredError': [
        lambda keep: F.mean_squared_error(_v([BIG], keep=keep), _v([-BIG])),
        # 0 / 0: NumPy's scalar division.
        lambda keep: F.mean_squared_error(_v([], keep=keep), _v([])),
        lambda keep: _backward(keep, F.mean_squared_error(_v([1.0]),
                                                          _v([0.0])), BIG)],
    'LinearFunction': [
        lambda keep: _linear(keep, [[BIG]], [BIG]),
        lambda keep: _backward(keep, _linear(keep, [[1.0], [1.0]], [1.0]),
                               [[BIG], [BIG]]),
        # x.dot(W.T) cast to x's dtype overflows.
        lambda keep: F.linear(_v([[1e4]], f16, keep),
                              _v([[1e4]], keep=keep))],
    'Convolution2DFunction': [
        lambda keep: F.convolution_2d(_v([[[[BIG]]]], keep=keep),
                                      _v([[[[1.0]]]], keep=keep),
                                      _v([BIG], keep=keep)),
        # The backward's bias gradient: the sum of gy overflows.
        lambda keep: _backward(
            keep, F.convolution_2d(_v([[[[1.0, 1.0]]]]), _v([[[[1.0]]]]),
                                   _v([0.0])), [[[[BIG, BIG]]]])],
    # Overlapping patches summed into the image overflow (in the forward,
    # and in the convolution's input gradient), or the bias's add.
    'Deconvolution2DFunction': [
        lambda keep: F.deconvolution_2d(_v([[[[BIG, BIG]]]], keep=keep),
                                        _v([[[[1.0, 1.0]]]], keep=keep)),
        lambda keep: F.deconvolution_2d(_v([[[[BIG]]]], keep=keep),
                                        _v([[[[1.0]]]], keep=keep),
                                        _v([BIG], keep=keep)),
        lambda keep: _backward(
            keep, F.convolution_2d(_v([[[[1.0, 1.0, 1.0]]]]),
                                   _v([[[[1.0, 1.0]]]])), [[[[BIG, BIG]]]]),
        lambda keep: _backward(
            keep, F.deconvolution_2d(_v([[[[1.0, 1.0]]]]), _v([[[[1.0]]]]),
                                     _v([0.0])), [[[[BIG, BIG]]]])],
    'SoftmaxCrossEntropy': [
        lambda keep: _softmax_cross_entropy(keep, [[INF, 1.0], [0.0, 1.0]]),
        lambda keep: _softmax_cross_entropy(keep,
                                            [[0.0, -200.0], [0.0, 1.0]]),
        lambda keep: _softmax_cross_entropy(keep,
                                            [[INF, 1.0], [0.0, 1.0]], f16),
        lambda keep: _backward(
            keep, _softmax_cross_entropy(keep, [[0.0, -90.0], [0.0, 1.0]],
                                         reduce='no'), [INF, 1.0]),
        lambda keep: _backward(
            keep, _softmax_cross_entropy(keep, [[0.0, -200.0], [0.0, 1.0]]),
            INF),
        # reduce='no' under F.sum: the loss's gradient a broadcast.
        lambda keep: _backward(
            keep, F.sum(_softmax_cross_entropy(
                keep, [[0.0, -90.0], [0.0, 1.0]], reduce='no')), INF)],
    # Applied by stock's backward where the backward records a graph.
    '_SoftmaxCrossEntropyGrad_NoDoubleBackprop': [
        lambda keep: _double_backward(
            keep, _softmax_cross_entropy(keep, [[0.0, -90.0], [0.0, 1.0]],
                                         reduce='no'), [INF, 1.0])],
    # Gates a, i, f, o of one unit: 0 * inf in the cell, then in the
    # output's gradient.
    'LSTM': [
        lambda keep: _lstm(keep, [[INF]], [[1.0, 1.0, -INF, 1.0]]),
        _lstm_backward],
    'EmbedIDFunction': [_embed_id_backward_into_a_sum],
    'EmbedIDGrad': [_embed_id_backward_into_a_sum],
    'BinaryHierarchicalSoftmaxFunction': [_hierarchical_softmax],
    'NegativeSamplingFunction': [_negative_sampling_forward],
    'NegativeSamplingFunctionGrad': [_negative_sampling],
    # Gradients summed back to a broadcast operand's shape overflow.
    'BroadcastTo': [lambda keep: _backward(
        keep, F.broadcast_to(_v([1.0]), (2,)), [BIG, BIG])],
    'Broadcast': [lambda keep: _backward(
        keep, F.broadcast(_v([1.0]), _v([1.0, 2.0]))[0], [BIG, BIG])],
    'Div': [lambda keep: _backward(keep, _v([1.0]) / _v([0.5]), [BIG]),
            lambda keep: _backward(keep, _v([1.0]) / _v([1.0, 1.0]),
                                   [BIG, BIG])],
    # Its backward's GetItemGrad adds the gradient into zeros.
    'GetItemGrad': [lambda keep: _backward(
        keep, _v([1.0, 2.0])[None, ...],
        numpy.array([[SNAN, 1.0]], f32))],
    'PowVarConst': [lambda keep: _backward(keep, _v([2.0]) ** 3.0, [BIG])],
    'MatMul': [
        lambda keep: F.matmul(_v([[BIG]], keep=keep), _v([[2.0]])),
        lambda keep: _backward(keep, F.matmul(_v([[1.0]]), _v([[2.0]])),
                               [[BIG]]),
        # The batched operand's gradient summed to its shape overflows.
        lambda keep: _backward(
            keep, F.matmul(_v([[[1.0]], [[1.0]]]), _v([[1.0]])),
            [[[BIG]], [[BIG]]]),
        lambda keep: F.matmul(_v([[1e4]], f16, keep), _v([[1e4]], f16))],
    'Dropout': [
        # Kept elements overflow when scaled: stock's forward, no draw lost.
        lambda keep: F.dropout(_v([BIG] * 8, keep=keep), 0.5),
        lambda keep: F.dropout(_v([BIG], keep=keep), 0.5,
                               mask=numpy.array([2.0], f32)),
        lambda keep: _backward(
            keep, F.dropout(_v([1.0]), 0.5, mask=numpy.array([2.0], f32)),
            [BIG])],
    'DropoutGrad': [
        lambda keep: _dropout_grad(keep, [BIG]),
        lambda keep: _backward(keep, _dropout_grad(keep, [1.0]), [BIG])],
    # A window's maximum, the gradient of several overlapping windows,
    # overflows where they add up; the averages' sums overflow.
    'MaxPoolingND': [lambda keep: _backward(
        keep, F.max_pooling_2d(_v(_PEAK), 3, 1, 1), [[[[BIG] * 3] * 3]])],
    'MaxPoolingNDGrad': [_max_pooling_grad],
    'AveragePooling2D': [
        lambda keep: F.average_pooling_2d(_v([[[[BIG, BIG]]]], keep=keep),
                                          (1, 2)),
        lambda keep: _backward(keep, F.average_pooling_2d(_v(_PEAK), 2, 1),
                               [[[[BIG] * 2] * 2]])],
    'AveragePooling2DGrad': [
        lambda keep: _average_pooling_grad(keep, BIG),
        lambda keep: _backward(keep, _average_pooling_grad(keep, 1.0),
                               [[[[BIG, BIG, BIG]]]])],
    # The gradient where the mask is 0: inf * 0.
    'Max': [lambda keep: _backward(keep, F.max(_v([1.0, 2.0]), axis=0),
                                   INF)],
    'Min': [lambda keep: _backward(keep, F.min(_v([[1.0, 2.0]]), axis=1),
                                   [INF])],
    'Clip': [
        # -1e5 is no float16: clipped in float32, the cast back overflows.
        lambda keep: F.clip(_v([-INF, 1.0], f16, keep), -1e5, 0.5),
        # inf times the false condition.
        lambda keep: _backward(keep, F.clip(_v([2.0, 0.0]), -1.0, 1.0),
                               [INF, 1.0])],
    # The broadcast operand's gradient summed to its shape overflows.
    'Maximum': [lambda keep: _backward(
        keep, F.maximum(_v([1.0]), _v([0.0, 0.0])), [BIG, BIG])],
    'Minimum': [
        lambda keep: _backward(keep, F.minimum(_v([1.0]), _v([2.0])),
                               [INF]),
        lambda keep: _backward(
            keep, F.minimum(_v([0.0]), _v([1.0, 1.0])), [BIG, BIG])],
    'LinearInterpolate': [
        lambda keep: F.linear_interpolate(_v([2.0], keep=keep), _v([BIG]),
                                          _v([0.0])),
        lambda keep: _backward(keep, F.linear_interpolate(
            _v([2.0]), _v([1.0]), _v([0.0])), [BIG])],
    'Exp': [lambda keep: F.exp(_v([100.0, 1.0], keep=keep)),
            lambda keep: _backward(keep, F.exp(_v([1.0])), [BIG])],
    'LogSumExp': [
        lambda keep: F.logsumexp(_v([[-INF, -INF]], keep=keep), axis=1),
        lambda keep: _backward(keep, F.logsumexp(_v([[0.0, -200.0]])),
                               1.0)],
    'Mean': [lambda keep: F.mean(_v([BIG, BIG], keep=keep)),
             lambda keep: _backward(keep, F.mean(_v([1.0, 1.0, 1.0])),
                                    TINY)],
    'Softmax': [
        lambda keep: F.softmax(_v([[-INF, -INF]], keep=keep)),
        lambda keep: _backward(keep, F.softmax(_v([[0.0, 0.0]])),
                               [[INF, 1.0]])],
    'HuberLoss': [
        lambda keep: F.huber_loss(_v([[BIG]], keep=keep), _v([[-BIG]]),
                                  1.0),
        lambda keep: _backward(keep, F.huber_loss(
            _v([[1.0]]), _v([[1.0]]), 1.0, reduce='no'), [[INF]]),
        # delta cast to float16 overflows.
        lambda keep: F.huber_loss(_v([[1.0]], f16, keep), _v([[1.0]], f16),
                                  1e30),
        # Overflow, then no second axis to sum: stock meets the overflow
        # first.
        lambda keep: F.huber_loss(_v([BIG], keep=keep), _v([-BIG]), 1.0)],
    'BatchNormalization': [
        lambda keep: _bn(keep, [[INF, 1.0], [1.0, 2.0]]),
        # The squared deviations overflow.
        lambda keep: _bn(keep, [[BIG, 1.0], [-BIG, 2.0]]),
        _bn_running,
        lambda keep: _backward(keep, _bn(keep, [[1.0, 2.0], [3.0, 5.0]]),
                               [[INF, 1.0], [1.0, 1.0]])],
    'BatchNormalizationGrad': [lambda keep: _bn_grad(keep, False)],
    'FixedBatchNormalization': [
        lambda keep: _bn(keep, [[1.0, INF], [1.0, 2.0]], fixed=True),
        # var + eps is 0: its reciprocal divides by zero.
        lambda keep: _bn(keep, [[1.0, 2.0]], fixed=True, eps=-1.0),
        lambda keep: _backward(
            keep, _bn(keep, [[1.0, 2.0], [3.0, 5.0]], fixed=True),
            [[1.0, INF], [1.0, 1.0]])],
    'FixedBatchNormalizationGrad': [lambda keep: _bn_grad(keep, True)],
}
# Gradients of operands broadcast in the forward, summed to their shapes.
for _name, _op in (('Add', operator.add), ('Sub', operator.sub),
                   ('Mul', operator.mul)):
    CASES[_name].append(lambda keep, op=_op: _backward(
        keep, op(_v([1.0]), _v([1.0, 1.0])), [BIG, BIG]))
# The forwards of Div and PowVarConst (0 / 0, overflow, sqrt of a negative,
# 1 / 0), the nodes of constants divided and raised to a power, Log, and
# Bernoulli's log-probability (exp(-logit) overflows; log(x) of a negative
# under its errstate(invalid='raise')).
CASES['Div'].append(lambda keep: _v([1.0, 0.0], keep=keep) / _v([0.0, 0.0]))
CASES['PowVarConst'] += [lambda keep: _v([BIG], keep=keep) ** 2.0,
                         lambda keep: _v([-1.0], keep=keep) ** 0.5,
                         lambda keep: _v([0.0], keep=keep) ** -1,
                         lambda keep: _v([2.0], f16, keep) ** 1e5]
CASES['DivFromConstant'] = [
    lambda keep: 1.0 / _v([0.0, 1.0], keep=keep),
    lambda keep: _backward(keep, 2.0 / _v([1e-30]), [1.0])]
CASES['PowConstVar'] = [lambda keep: 2.0 ** _v([200.0], keep=keep)]
CASES['Log'] = [lambda keep: F.log(_v([-1.0, 0.0], keep=keep)),
                lambda keep: _backward(keep, F.log(_v([1e-30])), [BIG])]
# abs raises nothing; its gradient sign(x) * gy is inf * 0 at x = 0.
CASES['Absolute'] = [lambda keep: _backward(keep, F.absolute(_v([0.0, 1.0])),
                                            [INF, 1.0])]
CASES['Sqrt'] = [lambda keep: F.sqrt(_v([-1.0, 4.0], keep=keep)),
                 lambda keep: _backward(keep, F.sqrt(_v([0.0, 1.0])),
                                        [1.0, 1.0]),
                 lambda keep: _backward(keep, F.sqrt(_v([1e-30])), [BIG])]
CASES['Square'] = [lambda keep: F.square(_v([BIG, 1.0], keep=keep)),
                   lambda keep: _backward(keep, F.square(_v([1.0])), [BIG]),
                   lambda keep: _backward(keep, F.square(_v([1e19])),
                                          [1e20])]
CASES['BernoulliLogProb'] = [
    lambda keep: _bernoulli_log_prob(keep, [-100.0, 1.0], [1.0, 0.0]),
    lambda keep: _bernoulli_log_prob(keep, [INF, -100.0], [-1.0, 0.0]),
    lambda keep: _bernoulli_log_prob(keep, [-INF, 1.0], [0.0, 1.0]),
    # The backward alone: gy * (x - sigmoid(logit)) is inf * 0 in its Mul.
    lambda keep: _backward(
        keep, _bernoulli_log_prob(keep, [0.0, 1.0], [0.5, 0.0]),
        [INF, 1.0])]
# Compiled code of these makes no floating-point operation: copies, views,
# negation, or the gradients passed on as they are.
NO_ARITHMETIC = {'AddConstant': 'backward',
                 'Concat': None, 'GetItem': None, 'Neg': None,
                 'SplitAxis': None, 'Sum': 'backward',
                 'EmbedIDFunction': 'forward',
                 'SubFromConstant': 'backward', 'ReLU': 'forward',
                 'ExpandDims': None, 'Squeeze': None, 'Swapaxes': None,
                 'Transpose': None, 'Where': None,
                 'SelectItem': None, 'Reshape': None, 'Stack': None,
                 'Separate': None, 'Permutate': None,
                 'TransposeSequence': None,
                 # Comparisons, which raise nothing (not even on a
                 # signaling NaN); the backwards of Max and Min multiply.
                 'Max': 'forward', 'Min': 'forward', 'ArgMax': None,
                 'ArgMin': None,
                 'Maximum': 'forward', 'Minimum': 'forward',
                 'Identity': None, 'Copy': None,
                 # Patches, then BLAS's product (NumPy acts on no
                 # exception of dot).
                 'Convolution2DGradW': 'forward',
                 # Copies of the windows' items at the indexes.
                 'MaxPoolingNDWithIndexes': 'forward',
                 # Comparisons and counts; the count's division by at least
                 # one label raises nothing.
                 'Accuracy': 'forward'}

ERRSTATES = [{}, {'all': 'warn'}, {'all': 'raise'}, {'all': 'call'}]
WARNING_MODES = ['always', 'default', 'once', 'module', 'error']
_CASE_IDS = [(name, i) for name in sorted(CASES)
             for i in range(len(CASES[name]))]


def test_every_compiled_function_has_a_case():
    register_all()
    compiled = {cls.__name__ for cls, entry in _registry.registered().items()
                if {'forward', 'backward'} & set(entry.parts)}
    assert compiled - set(NO_ARITHMETIC) - set(CASES) == set()


@pytest.mark.parametrize('name,index', _CASE_IDS)
def test_every_case_meets_an_exception(fpe_outcome, name, index):
    # Stock (the test starts stock) warns about each case.
    assert fpe_outcome(CASES[name][index], 'always', {'all': 'warn'})[
        'warnings']


@pytest.mark.parametrize('errstate', ERRSTATES, ids=str)
@pytest.mark.parametrize('name,index', _CASE_IDS)
def test_error_state_same_as_stock(fpe_outcome, name, index, errstate):
    case = CASES[name][index]
    stock, patched = run_both(lambda: fpe_outcome(case, 'always', errstate))
    _assert_same(stock, patched)


@pytest.mark.parametrize('warning_mode', WARNING_MODES)
@pytest.mark.parametrize('name,index', _CASE_IDS)
def test_warning_filters_same_as_stock(fpe_outcome, name, index,
                                       warning_mode):
    case = CASES[name][index]
    stock, patched = run_both(
        lambda: fpe_outcome(case, warning_mode, {'all': 'warn'}))
    _assert_same(stock, patched)


def _assert_same(stock, patched):
    assert patched['warnings'] == stock['warnings']
    assert patched['error'] == stock['error']
    assert patched['calls'] == stock['calls']
    assert_same(stock['state'], patched['state'])
