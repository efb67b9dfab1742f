"""FunctionNode.apply, stock vs patched: outputs, gradients, graph state,
hooks and errors must be identical."""
import weakref
from unittest import mock

import numpy
import pytest

import chainer
from chainer import function_hook
from chainer.functions.math import basic_math
import chainer.functions as F
import chainer.links as L
from chainer.utils import type_check

import chainer_fastpath
from chainer_fastpath.testing import (
    check_outputs_same, check_same, outputs, run_both, variable as _v)


# name -> builds inputs (under the shared seed) and returns (fn, args):
# functions with no compiled code, and dtypes across compiled ones. Each
# compiled function's own cases are in tests/functions/<family>/test_<name>.py.
CASES = {
    'mean': lambda: (F.mean, [_v(3, 4)]),
    'float64': lambda: (lambda a, b: F.tanh(a * b),
                        [_v(3, dtype=numpy.float64),
                         _v(3, dtype=numpy.float64)]),
    'float16': lambda: (lambda a: F.relu(a) * a,
                        [_v(3, dtype=numpy.float16)]),
}


def _linear():
    return F.linear, [_v(2, 4), _v(3, 4), _v(3)]


def _link_case(make_link, *shapes, steps=1):
    def build():
        link = make_link()
        xs = [_v(*s) for s in shapes]

        def fn(*xs):
            ys = [link(x) for x in xs for _ in range(steps)]
            return ys

        return fn, xs, link
    return build


LINK_CASES = {
    'lstm': _link_case(lambda: L.LSTM(3, 4), (2, 3), steps=3),
    'gru': _link_case(lambda: L.GRU(3, 4), (2, 3), steps=3),
    'batch_normalization': _link_case(
        lambda: L.BatchNormalization(3), (5, 3)),
    'convolution_2d': _link_case(
        lambda: L.Convolution2D(2, 3, ksize=3, pad=1), (2, 2, 5, 5)),
    'linear_link': _link_case(lambda: L.Linear(4, 3), (2, 4)),
}


def _run_link_case(build, backprop):
    fn, xs, link = build()
    with chainer.using_config('enable_backprop', backprop):
        ys = fn(*xs)
    result = {'y': [y.array for y in ys]}
    if backprop:
        loss = sum(F.sum(y * y) for y in ys)
        loss.backward()
        result['gx'] = [x.grad for x in xs]
        result['gparams'] = {n: p.grad for n, p in link.namedparams()}
    return result


@pytest.mark.parametrize('type_check_on', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
@pytest.mark.parametrize('name', sorted(CASES))
def test_function_same_stock_and_patched(name, backprop, type_check_on):
    check_outputs_same(CASES[name], backprop, type_check_on)


@pytest.mark.parametrize('type_check_on', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
@pytest.mark.parametrize('name', sorted(LINK_CASES))
def test_link_same_stock_and_patched(name, backprop, type_check_on):
    with chainer.using_config('type_check', type_check_on):
        check_same(lambda: _run_link_case(LINK_CASES[name], backprop))


def test_patched_calls_take_the_fast_path():
    chainer_fastpath.enable()
    outputs(_linear, True)
    s = chainer_fastpath.stats()['FunctionNode.apply']
    assert s['fast'] > 0
    assert s['fallback'] == {}


# --- graph state: the objects apply builds are the objects stock builds ---

def _describe(obj, seen):
    """A structural description of a graph, comparable across runs."""
    if isinstance(obj, numpy.ndarray):
        return ('ndarray', obj.dtype.str, obj.shape, obj.tobytes())
    if isinstance(obj, (chainer.Variable, chainer.variable.VariableNode,
                        chainer.FunctionNode)):
        if id(obj) in seen:
            return ('seen', seen[id(obj)])
        seen[id(obj)] = len(seen)
        return (type(obj).__name__, [
            (k, _describe(v, seen)) for k, v in obj.__dict__.items()])
    if isinstance(obj, weakref.ref):
        return ('weakref', _describe(obj(), seen))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_describe(v, seen) for v in obj])
    if isinstance(obj, dict):
        return ('dict', [(k, _describe(v, seen)) for k, v in obj.items()])
    if isinstance(obj, numpy.dtype):
        return ('dtype', obj.str)
    return ('value', repr(obj))


@pytest.mark.parametrize('backprop', [True, False])
def test_graph_objects_have_stock_state(backprop):
    def build():
        x = _v(2, 4)
        w = _v(3, 4)
        b = numpy.random.randn(3).astype(numpy.float32)
        with chainer.using_config('enable_backprop', backprop):
            h = F.relu(F.linear(x, w, b))
            y = F.sum(h * x[:, :3])
        return _describe(y, {})

    stock, patched = run_both(build)
    assert stock == patched


@pytest.mark.parametrize('backprop', [True, False])
def test_compiled_forwards_leave_stock_node_state(backprop):
    # SplitAxis (_xp, _shapes), Mul and SquaredError (retained inputs),
    # Sub and SubFromConstant: the graph is the one stock builds.
    def build():
        x = _v(2, 6)
        m = numpy.array([[1], [0]], numpy.float32)
        with chainer.using_config('enable_backprop', backprop):
            a, b, c = F.split_axis(x, [1, 4], axis=1)
            d, e = F.split_axis(b, 3, axis=1)[:2]
            y = F.squared_error(d, e) * m + (1 - (a - c))
        return _describe(y, {})

    stock, patched = run_both(build)
    assert stock == patched


def test_lazy_grad_sum_is_recorded():
    def build():
        with chainer.using_config('lazy_grad_sum', True):
            y = F.relu(_v(3))
        return y.creator_node.lazy_grad_sum

    assert run_both(build) == (True, True)


# --- hooks ---

class _Recorder(function_hook.FunctionHook):
    name = 'Recorder'

    def __init__(self, log):
        self.log = log

    def forward_preprocess(self, function, in_data):
        self.log.append(('pre', function.label,
                         [a.shape for a in in_data]))

    def forward_postprocess(self, function, in_data):
        self.log.append(('post', function.label,
                         [a.shape for a in in_data]))

    def backward_preprocess(self, function, in_data, out_grad):
        self.log.append(('bpre', function.label))

    def backward_postprocess(self, function, in_data, out_grad):
        self.log.append(('bpost', function.label))


def test_global_and_local_hooks_see_the_same_calls():
    def build():
        log = []
        x = _v(2, 3)
        with _Recorder(log):
            y = F.sum(F.tanh(x) * 2)
            y.backward()
        node2 = chainer.functions.math.basic_math.Add()
        node2.add_hook(_Recorder(log), name='local')
        node2.apply((x, x))
        return log

    stock, patched = run_both(build)
    assert stock == patched
    assert any(e[0] == 'pre' for e in stock)


@pytest.mark.parametrize('module, name', [
    (chainer, 'using_config'), (chainer, 'using_device'),
    (chainer, 'get_function_hooks'), (chainer, 'get_array_types'),
    (chainer.backend, 'get_device_from_array'),
])
def test_functions_stock_calls_by_name_see_every_call(module, name):
    # Stock's apply and backward call these by their module's name for
    # each node; a mock of one sees as many calls, with the same arguments.
    def fn():
        link = L.Linear(3, 2)
        x = chainer.Variable(numpy.ones((4, 3), numpy.float32))
        with mock.patch.object(module, name,
                               wraps=getattr(module, name)) as m:
            loss = F.sum(F.relu(link(x)) * 2)
            loss.backward()
        return ([(len(c.args), sorted(c.kwargs)) for c in m.call_args_list],
                link.W.grad, x.grad)
    stock, _ = check_same(fn)
    assert stock[0]


# --- methods looked up on the instance, per call ---

def test_forward_mocked_on_the_instance_is_called():
    chainer_fastpath.enable()
    node = chainer.functions.math.basic_math.Add()
    calls = []

    def forward(inputs):
        calls.append(len(inputs))
        return inputs[0] * 10,

    node.forward = forward
    x = numpy.ones(2, numpy.float32)
    y, = node.apply((x, x))
    assert calls == [2]
    numpy.testing.assert_array_equal(y.array, x * 10)


def test_check_type_forward_on_the_instance_is_called():
    chainer_fastpath.enable()
    node = chainer.functions.math.basic_math.Add()
    seen = []
    node.check_type_forward = lambda in_types: seen.append(len(in_types))
    node.apply((numpy.ones(2, numpy.float32), numpy.ones(2, numpy.float32)))
    assert seen == [2]


@pytest.mark.parametrize('cls, call', [
    (chainer.functions.activation.relu.ReLU, lambda x: F.relu(x)),
    (basic_math.Mul, lambda x: x * x),
])
def test_apply_replaced_on_the_class_is_called_by_compiled_callers(cls, call):
    chainer_fastpath.enable()
    x = _v(3)
    call(x)     # the compiled caller has seen the class once
    calls = []
    original = cls.apply

    def apply(self, inputs):
        calls.append(type(self))
        return original(self, inputs)

    with mock.patch.object(cls, 'apply', apply):
        y = call(x)
    assert calls == [cls]
    numpy.testing.assert_array_equal(y.array, call(x).array)


# --- errors: the same exception types as stock ---

class _ReturnsArray(chainer.FunctionNode):
    def forward(self, inputs):
        return inputs[0]


class _ReturnsList(chainer.FunctionNode):
    def forward(self, inputs):
        return [inputs[0]],


class _MixedShapes(chainer.FunctionNode):
    is_elementwise = True

    def __init__(self, second=lambda x: x[:1]):
        self.second = second

    def forward(self, inputs):
        return inputs[0], self.second(inputs[0]), inputs[0]


# Second outputs of an elementwise node: what its shape check must tell
# apart from the first's (2, 3).
ELEMENTWISE_SECOND = {
    'same': lambda x: x * 2,
    'transposed_view': lambda x: x.T.copy().T,
    'shorter': lambda x: x[:1],
    'more_dims': lambda x: x[None],
    'fewer_dims': lambda x: x[0],
    'same_size': lambda x: x.reshape(3, 2),
    'zero_size': lambda x: x[:0],
}


@pytest.mark.parametrize('name', sorted(ELEMENTWISE_SECOND))
def test_elementwise_output_shapes_checked_as_stock(name):
    def run():
        try:
            ys = _MixedShapes(ELEMENTWISE_SECOND[name]).apply((_v(2, 3),))
        except RuntimeError as e:
            return str(e)
        return [y.shape for y in ys]

    stock, patched = run_both(run)
    assert stock == patched
    assert isinstance(stock, str) == (name not in ('same', 'transposed_view'))


def _error_of(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e).split('\n')[0]
    return None


BAD_INPUTS = {
    'wrong_dtype': lambda: F.add(_v(3), _v(3, dtype=numpy.float64)),
    'wrong_shape': lambda: F.linear(_v(2, 4), _v(3, 5)),
    'wrong_ndim': lambda: F.linear(_v(4), _v(3, 4)),
    'wrong_array_type': lambda: F.relu([1.0, 2.0]),
    'mixed_array_types': lambda: F.add(_v(3), 'abc'),
    'int_input': lambda: F.sigmoid(_v(3, dtype=numpy.int32)),
    'non_tuple_forward': lambda: _ReturnsArray().apply((_v(2),)),
    'non_array_outputs': lambda: _ReturnsList().apply((_v(2),)),
    'elementwise_shapes': lambda: _MixedShapes().apply((_v(2),)),
    'uninitialized_param': lambda: F.relu(chainer.Parameter()),
}


@pytest.mark.parametrize('name', sorted(BAD_INPUTS))
def test_bad_input_same_error(name):
    stock, patched = run_both(lambda: _error_of(BAD_INPUTS[name]))
    assert stock is not None
    assert stock == patched


def test_invalid_type_message_is_stock_message():
    def build():
        try:
            F.add(_v(3), _v(3, dtype=numpy.float64))
        except type_check.InvalidType as e:
            return str(e)

    stock, patched = run_both(build)
    assert stock == patched and 'Expect' in stock


# --- fallbacks are counted, and results do not change ---

def test_debug_mode_falls_back_and_is_counted():
    def build():
        with chainer.using_config('debug', True):
            return outputs(_linear, True)

    check_same(build)
    chainer_fastpath.reset_stats()
    with chainer_fastpath.enabled():
        build()
    s = chainer_fastpath.stats()['FunctionNode.apply']
    assert s['fast'] == 0
    assert s['fallback']['debug mode'] > 0


def test_uninitialized_input_falls_back_with_reason():
    chainer_fastpath.enable()
    _error_of(BAD_INPUTS['uninitialized_param'])
    reasons = chainer_fastpath.stats()['FunctionNode.apply']['fallback']
    assert reasons == {'uninitialized input variable': 1}


# --- every compiled node applied to too few or too many inputs ---

def _node_factories():
    from chainer.functions.activation import (
        leaky_relu, log_softmax, relu, sigmoid, softmax, softplus, tanh)
    from chainer.functions.array import (
        broadcast, concat, copy, expand_dims, get_item, permutate, reshape,
        select_item, separate, split_axis, squeeze, stack, swapaxes,
        transpose, transpose_sequence, where)
    from chainer.functions.connection import (
        convolution_2d, deconvolution_2d, embed_id, linear)
    from chainer.functions.loss import (
        huber_loss, mean_squared_error, negative_sampling,
        softmax_cross_entropy, squared_error)
    from chainer.functions.math import (
        average, basic_math, clip, exponential, identity, linear_interpolate,
        logsumexp, matmul, maximum, minimum, minmax, sqrt, square)
    from chainer.functions.math import sum as sum_
    from chainer.functions.evaluation import accuracy
    from chainer.functions.noise import dropout
    from chainer.functions.pooling import average_pooling_2d as avg
    from chainer.functions.pooling import max_pooling_nd as mp
    from chainer.functions.normalization import batch_normalization as bn
    from chainer.functions.rnn import lstm
    from chainer.links.loss import hierarchical_softmax
    from chainer.distributions import bernoulli
    hsm = hierarchical_softmax.BinaryHierarchicalSoftmaxFunction
    ns_grad = negative_sampling.NegativeSamplingFunctionGrad
    ns = negative_sampling.NegativeSamplingFunction
    m = basic_math

    def pooled(pool):
        # A pooling node after its forward: what its gradient nodes read.
        pool.apply((numpy.ones((1, 1, 4, 6), numpy.float32),))
        return pool

    return {
        leaky_relu.LeakyReLU: lambda: leaky_relu.LeakyReLU(0.2),
        relu.ReLU: relu.ReLU,
        sigmoid.Sigmoid: sigmoid.Sigmoid,
        tanh.Tanh: tanh.Tanh,
        softmax.Softmax: softmax.Softmax,
        broadcast.Broadcast: broadcast.Broadcast,
        broadcast.BroadcastTo: lambda: broadcast.BroadcastTo((2, 3)),
        expand_dims.ExpandDims: lambda: expand_dims.ExpandDims(0),
        select_item.SelectItem: select_item.SelectItem,
        squeeze.Squeeze: squeeze.Squeeze,
        swapaxes.Swapaxes: lambda: swapaxes.Swapaxes(0, 1),
        huber_loss.HuberLoss: lambda: huber_loss.HuberLoss(1.0, 'no'),
        average.Mean: lambda: average.Mean(None, False),
        logsumexp.LogSumExp: logsumexp.LogSumExp,
        concat.Concat: lambda: concat.Concat(1),
        get_item.GetItem: lambda: get_item.GetItem(slice(0, 1)),
        get_item.GetItemGrad: lambda: get_item.GetItemGrad(
            (slice(0, 1),), (2, 3)),
        reshape.Reshape: lambda: reshape.Reshape((3, 2)),
        split_axis.SplitAxis: lambda: split_axis.SplitAxis(3, 1),
        stack.Stack: lambda: stack.Stack(1),
        separate.Separate: lambda: separate.Separate(1),
        transpose.Transpose: transpose.Transpose,
        permutate.Permutate: lambda: permutate.Permutate(
            numpy.array([1, 0], numpy.int32), 0, True),
        transpose_sequence.TransposeSequence: lambda: (
            transpose_sequence.TransposeSequence(2)),
        embed_id.EmbedIDFunction: embed_id.EmbedIDFunction,
        embed_id.EmbedIDGrad: lambda: embed_id.EmbedIDGrad((2, 3)),
        linear.LinearFunction: linear.LinearFunction,
        convolution_2d.Convolution2DFunction:
            convolution_2d.Convolution2DFunction,
        convolution_2d.Convolution2DGradW: lambda: (
            convolution_2d.Convolution2DGradW(
                convolution_2d.Convolution2DFunction(), (2, 3, 1, 1),
                numpy.float32, None)),
        deconvolution_2d.Deconvolution2DFunction:
            deconvolution_2d.Deconvolution2DFunction,
        softmax_cross_entropy.SoftmaxCrossEntropy:
            softmax_cross_entropy.SoftmaxCrossEntropy,
        softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop:
            lambda: softmax_cross_entropy
            ._SoftmaxCrossEntropyGrad_NoDoubleBackprop(
                -1, None, numpy.full((2, 3), 0.25, numpy.float32), None,
                False),
        squared_error.SquaredError: squared_error.SquaredError,
        m.Add: m.Add, m.AddConstant: lambda: m.AddConstant(1.5),
        m.Sub: m.Sub, m.SubFromConstant: lambda: m.SubFromConstant(1.5),
        m.Mul: m.Mul, m.MulConstant: lambda: m.MulConstant(1.5),
        m.Neg: m.Neg, m.Absolute: m.Absolute, m.Div: m.Div,
        m.PowVarConst: lambda: m.PowVarConst(2.0),
        m.PowConstVar: lambda: m.PowConstVar(2.0),
        m.DivFromConstant: lambda: m.DivFromConstant(1.5),
        exponential.Exp: exponential.Exp, exponential.Log: exponential.Log,
        sqrt.Sqrt: sqrt.Sqrt, square.Square: square.Square,
        where.Where: lambda: where.Where(
            numpy.array([[True, False, True]] * 2)),
        bernoulli.BernoulliLogProb: bernoulli.BernoulliLogProb,
        softplus.Softplus: softplus.Softplus,
        log_softmax.LogSoftmax: log_softmax.LogSoftmax,
        clip.Clip: lambda: clip.Clip(-0.5, 0.5),
        maximum.Maximum: maximum.Maximum, minimum.Minimum: minimum.Minimum,
        identity.Identity: identity.Identity,
        copy.Copy: lambda: copy.Copy(
            chainer.get_device('@numpy'), chainer.get_device('@numpy')),
        linear_interpolate.LinearInterpolate:
            linear_interpolate.LinearInterpolate,
        mean_squared_error.MeanSquaredError:
            mean_squared_error.MeanSquaredError,
        matmul.MatMul: matmul.MatMul,
        sum_.Sum: sum_.Sum,
        minmax.Max: lambda: minmax.Max(1), minmax.Min: minmax.Min,
        minmax.ArgMax: lambda: minmax.ArgMax(1), minmax.ArgMin: minmax.ArgMin,
        dropout.Dropout: lambda: dropout.Dropout(0.5),
        dropout.DropoutGrad: lambda: dropout.DropoutGrad(
            numpy.full((2, 3), 2.0, numpy.float32)),
        lstm.LSTM: lstm.LSTM,
        accuracy.Accuracy: accuracy.Accuracy,
        mp.MaxPoolingND: lambda: mp.MaxPoolingND(2, 2),
        mp.MaxPoolingNDGrad: lambda: mp.MaxPoolingNDGrad(
            pooled(mp.MaxPoolingND(2, 2))),
        mp.MaxPoolingNDWithIndexes: lambda: mp.MaxPoolingNDWithIndexes(
            pooled(mp.MaxPoolingND(2, 2))),
        avg.AveragePooling2D: lambda: avg.AveragePooling2D(2),
        avg.AveragePooling2DGrad: lambda: avg.AveragePooling2DGrad(
            pooled(avg.AveragePooling2D(2))),
        # No axis: every input of the same shape is a channel shape.
        bn.BatchNormalization: lambda: bn.BatchNormalization(axis=()),
        bn.BatchNormalizationGrad: lambda: bn.BatchNormalizationGrad(
            2e-5, (slice(None),) * 2, (), numpy.zeros((2, 3), numpy.float32),
            None, numpy.ones((2, 3), numpy.float32), (0, 1),
            bn.GeneralBatchNormalizationImpl(), None),
        bn.FixedBatchNormalization: lambda: bn.FixedBatchNormalization(
            axis=()),
        bn.FixedBatchNormalizationGrad: lambda: (
            bn.FixedBatchNormalizationGrad(2e-5, (slice(None),) * 2, (),
                                           None, None)),
        # An old-style Function is applied through its FunctionAdapter.
        hsm: lambda: hsm(((0, 1), 2), numpy.float32).node,
        ns: lambda: ns(lambda shape: numpy.zeros(shape, numpy.int32), 1),
        ns_grad: lambda: ns_grad('sum', numpy.ones(2, bool), 1,
                                 numpy.zeros((2, 2), numpy.int32), None),
    }


def _registered_classes():
    from chainer_fastpath import functions
    from chainer_fastpath._core import _registry

    functions.register_all()
    return sorted(_registry.registered(), key=lambda c: c.__name__)


def _arity_outcome(make, n, type_check_on):
    xs = tuple(numpy.random.uniform(-1, 1, (2, 3)).astype(numpy.float32)
               for _ in range(n))
    with chainer.using_config('type_check', type_check_on):
        try:
            ys = make().apply(xs)
        except Exception as e:
            return type(e).__name__, str(e)
    return [y.array for y in ys]


def test_every_registered_class_has_a_factory():
    missing = set(_registered_classes()) - set(_node_factories())
    assert not missing, 'add a factory for {}'.format(missing)


@pytest.mark.parametrize('type_check_on', [True, False])
@pytest.mark.parametrize('n', [0, 1, 2, 3, 4])
@pytest.mark.parametrize('cls', _registered_classes(),
                         ids=lambda c: c.__name__)
def test_registered_node_on_any_number_of_inputs(cls, n, type_check_on):
    make = _node_factories()[cls]
    check_same(lambda: _arity_outcome(make, n, type_check_on))


class _ElementwiseConstant(chainer.FunctionNode):
    is_elementwise = True

    def forward(self, inputs):
        return numpy.ones(2, numpy.float32),


@pytest.mark.parametrize('n_out', [0, 1])
def test_elementwise_node_on_no_inputs_same_error(n_out):
    class Node(_ElementwiseConstant):
        def forward(self, inputs):
            return (numpy.ones(2, numpy.float32),) * n_out

    stock, patched = run_both(lambda: _error_of(lambda: Node().apply(())))
    assert stock == (IndexError, 'tuple index out of range')
    assert stock == patched


# --- the label stock evaluates on every call -------------------------------

class _LabelRaises(chainer.FunctionNode):
    @property
    def label(self):
        raise RuntimeError('label of _LabelRaises')

    def forward(self, inputs):
        return inputs[0] * 2,


@pytest.mark.parametrize('make', [
    # A label property of the user's own, raising.
    lambda: _LabelRaises(),
    # Stock's label of a constant operand, on a value it cannot format:
    # 'a' < 0 raises from the label.
    lambda: basic_math.AddConstant('a'),
    lambda: basic_math.MulConstant(None),
])
def test_label_is_evaluated_as_stock(make):
    x = numpy.ones(2, numpy.float32)
    check_same(lambda: _error_of(lambda: make().apply((x,))))


@pytest.mark.parametrize('value', [1, 2.5, -1.0, numpy.float32(2)])
def test_constant_operand_label_helper_mocked_is_called(value, spy):
    # A constant operand's label calls it: replaced, it is called as often
    # as stock calls it.
    def fn():
        h = chainer.Variable(numpy.ones(2, numpy.float32))
        for _ in range(3):
            h = h + value
            h = value - h
            h = h * value
    calls = spy(basic_math, '_convert_value_to_string')
    fn()
    stock_calls = len(calls)
    del calls[:]
    with chainer_fastpath.enabled():
        fn()
    assert stock_calls >= 9 and len(calls) == stock_calls
