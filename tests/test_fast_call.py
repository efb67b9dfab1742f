"""FunctionNode.apply, stock vs patched: outputs, gradients, graph state,
hooks and errors must be identical."""
import weakref

import numpy
import pytest

import chainer
from chainer import function_hook
import chainer.functions as F
import chainer.links as L
from chainer.utils import type_check

import chainer_fastpath
from chainer_fastpath.testing import check_same, run_both


def _v(*shape, dtype=numpy.float32, low=-1, high=1):
    return chainer.Variable(
        numpy.random.uniform(low, high, shape).astype(dtype))


def _ints(high, *shape):
    return numpy.random.randint(0, high, shape).astype(numpy.int32)


# name -> builds inputs (under the shared seed) and returns (fn, args).
CASES = {
    'add': lambda: (lambda a, b: a + b, [_v(3, 4), _v(3, 4)]),
    'add_broadcast': lambda: (F.add, [_v(3, 4), _v(3, 4)]),
    'add_array': lambda: (lambda a, b: a + b, [_v(3, 4), _v(3, 4).array]),
    'radd_const': lambda: (lambda a: 2.5 + a, [_v(3)]),
    'sub': lambda: (lambda a, b: a - b, [_v(2, 3), _v(2, 3)]),
    'mul': lambda: (lambda a, b: a * b, [_v(2, 3), _v(2, 3)]),
    'div': lambda: (lambda a, b: a / b, [_v(2, 3), _v(2, 3, low=1, high=2)]),
    'neg_pow': lambda: (lambda a: (-a) ** 2, [_v(5)]),
    'multi_add': lambda: (lambda a, b, c: F.add(a, b, c),
                          [_v(2), _v(2), _v(2)]),
    'matmul': lambda: (F.matmul, [_v(3, 4), _v(4, 5)]),
    'linear': lambda: (F.linear, [_v(2, 4), _v(3, 4), _v(3)]),
    'linear_nobias': lambda: (F.linear, [_v(2, 4), _v(3, 4)]),
    'relu': lambda: (F.relu, [_v(4, 3)]),
    'sigmoid': lambda: (F.sigmoid, [_v(4, 3)]),
    'tanh': lambda: (F.tanh, [_v(4, 3)]),
    'concat': lambda: (lambda a, b: F.concat((a, b), axis=1),
                       [_v(2, 3), _v(2, 2)]),
    'split_axis': lambda: (lambda a: F.split_axis(a, 3, axis=1),
                           [_v(2, 6)]),
    'split_axis_indices': lambda: (lambda a: F.split_axis(a, [1, 3], 0),
                                   [_v(4, 3)]),
    'split_axis_array_indices': lambda: (
        lambda a: F.split_axis(a, numpy.array([2, 2, 3]), -1), [_v(2, 4)]),
    # Stock's backward cannot handle unsorted indices: forward only.
    'split_axis_unsorted_indices': lambda: (
        lambda a: F.split_axis(a.array, [3, 1, -1], 1), [_v(2, 5)]),
    'split_axis_one_section': lambda: (
        lambda a: F.split_axis(a, 1, 0, force_tuple=False), [_v(3, 2)]),
    'split_axis_3d_middle': lambda: (lambda a: F.split_axis(a, 2, axis=1),
                                     [_v(2, 4, 3)]),
    'squared_error': lambda: (F.squared_error, [_v(3, 4), _v(3, 4)]),
    'squared_difference_array': lambda: (
        lambda a, b: F.squared_difference(a, b.array), [_v(3, 4), _v(3, 4)]),
    'mul_mask': lambda: (lambda a, b: a * (b.array > 0).astype(
        numpy.float32)[:, :1], [_v(3, 4), _v(3, 4)]),
    'mul_array_cast': lambda: (lambda a, b: a * b.array.astype(
        numpy.float64), [_v(3, 4), _v(3, 4)]),
    'rsub_int': lambda: (lambda a: 1 - a, [_v(3, 4)]),
    'rsub_float16': lambda: (lambda a: 0.5 - a,
                             [_v(3, dtype=numpy.float16)]),
    'reshape': lambda: (lambda a: F.reshape(a, (3, 4)), [_v(2, 6)]),
    'transpose': lambda: (lambda a: F.transpose(a), [_v(2, 3, 4)]),
    'getitem': lambda: (lambda a: a[1:, ::2], [_v(3, 4)]),
    'sum': lambda: (lambda a: F.sum(a, axis=1), [_v(3, 4)]),
    'mean': lambda: (F.mean, [_v(3, 4)]),
    'softmax_cross_entropy': lambda: (
        lambda x: F.softmax_cross_entropy(x, _ints(5, 4)), [_v(4, 5)]),
    'softmax_cross_entropy_ignore_no_reduce': lambda: (
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([1, -1, 3, 0], numpy.int32), reduce='no'),
        [_v(4, 5)]),
    'softmax_cross_entropy_not_normalized_no_cache': lambda: (
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([1, -1, 3, 0], numpy.int32), normalize=False,
            cache_score=False), [_v(4, 5)]),
    'softmax_cross_entropy_class_weight': lambda: (
        lambda x: F.softmax_cross_entropy(
            x, _ints(5, 4), class_weight=numpy.arange(
                1, 6, dtype=numpy.float32)), [_v(4, 5)]),
    'softmax_cross_entropy_soft_target': lambda: (
        lambda x: F.softmax_cross_entropy(
            x, numpy.full((4, 5), 0.2, numpy.float32)), [_v(4, 5)]),
    'softmax_cross_entropy_3d': lambda: (
        lambda x: F.softmax_cross_entropy(x, _ints(5, 2, 3)),
        [_v(2, 5, 3)]),
    'softmax_cross_entropy_float16': lambda: (
        lambda x: F.softmax_cross_entropy(x, _ints(5, 4)),
        [_v(4, 5, dtype=numpy.float16)]),
    'embed_id': lambda: (
        lambda w: F.embed_id(_ints(6, 3, 2), w), [_v(6, 4)]),
    'embed_id_ignore_label': lambda: (
        lambda w: F.embed_id(numpy.array([0, 5, -1, 2], numpy.int32), w,
                             ignore_label=-1), [_v(6, 4)]),
    'dropout': lambda: (lambda a: F.dropout(a, 0.5), [_v(10, 10)]),
    'float64': lambda: (lambda a, b: F.tanh(a * b),
                        [_v(3, dtype=numpy.float64),
                         _v(3, dtype=numpy.float64)]),
    'float16': lambda: (lambda a: F.relu(a) * a,
                        [_v(3, dtype=numpy.float16)]),
}


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


def _outputs(ys):
    if isinstance(ys, chainer.Variable):
        return [ys]
    return list(ys)


def _run_case(build, backprop):
    fn, xs = build()[:2]
    with chainer.using_config('enable_backprop', backprop):
        ys = _outputs(fn(*xs))
    result = {'y': [y.array for y in ys],
              'requires_grad': [y.requires_grad for y in ys],
              'has_creator': [y.creator is not None for y in ys]}
    if backprop:
        loss = sum(F.sum(y * y) for y in ys)
        loss.backward()
        result['gx'] = [x.grad if isinstance(x, chainer.Variable) else None
                        for x in xs]
    return result


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
    with chainer.using_config('type_check', type_check_on):
        check_same(lambda: _run_case(CASES[name], backprop))


@pytest.mark.parametrize('type_check_on', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
@pytest.mark.parametrize('name', sorted(LINK_CASES))
def test_link_same_stock_and_patched(name, backprop, type_check_on):
    with chainer.using_config('type_check', type_check_on):
        check_same(lambda: _run_link_case(LINK_CASES[name], backprop))


def test_patched_calls_take_the_fast_path():
    chainer_fastpath.enable()
    _run_case(CASES['linear'], True)
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


@pytest.mark.parametrize('name,cls', [
    ('split_axis', 'split_axis.SplitAxis'),
    ('split_axis_indices', 'split_axis.SplitAxis'),
    ('squared_error', 'squared_error.SquaredError'),
    ('mul', 'basic_math.Mul'),
    ('mul_mask', 'basic_math.Mul'),
    ('sub', 'basic_math.Sub'),
    ('rsub_int', 'basic_math.SubFromConstant'),
])
def test_compiled_forward_is_used(name, cls, python_calls):
    # The stock forward is Python: while the compiled one stands for it, it
    # never runs.
    import importlib
    module, cls_name = cls.split('.')
    module = importlib.import_module('chainer.functions.' + {
        'split_axis': 'array', 'squared_error': 'loss',
        'basic_math': 'math'}[module] + '.' + module)
    forward = getattr(module, cls_name).forward
    fn, xs = CASES[name]()
    assert python_calls(lambda: fn(*xs), forward) >= 1
    with chainer_fastpath.enabled():
        assert python_calls(lambda: fn(*xs), forward) == 0


def test_split_axis_unusual_arguments_go_to_stock(python_calls):
    # Sections that are not a Python int, indices that are not integers:
    # stock's forward runs (and raises where it raises).
    from chainer.functions.array import split_axis
    x = _v(2, 4)
    with chainer_fastpath.enabled():
        assert python_calls(lambda: F.split_axis(x, numpy.array(2), 1),
                            split_axis.SplitAxis.forward) == 1

    def bad():
        node = split_axis.SplitAxis([1], 1)
        node.indices = [1.5]
        try:
            node.apply((x,))
        except Exception as e:
            return type(e).__name__, str(e)
    stock, patched = run_both(bad)
    assert stock == patched
    assert stock[0] == 'TypeError'


def test_mocked_numpy_split_is_called_by_split_axis(spy):
    calls = spy(numpy, 'split')
    with chainer_fastpath.enabled():
        F.split_axis(_v(2, 4), 2, 1)
    assert len(calls) == 1


def test_mocked_retain_inputs_of_mul_is_called(spy):
    from chainer.functions.math import basic_math
    calls = spy(basic_math.Mul, 'retain_inputs')
    with chainer_fastpath.enabled():
        _v(2) * _v(2)
    assert [indexes for _, indexes in calls] == [(0, 1)]


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


# --- errors: the same exception types as stock ---

class _ReturnsArray(chainer.FunctionNode):
    def forward(self, inputs):
        return inputs[0]


class _ReturnsList(chainer.FunctionNode):
    def forward(self, inputs):
        return [inputs[0]],


class _MixedShapes(chainer.FunctionNode):
    is_elementwise = True

    def forward(self, inputs):
        return inputs[0], inputs[0][:1]


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
            return _run_case(CASES['linear'], True)

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


# --- compiled forwards step aside for overridden methods ---

def test_relu_forward_cpu_mocked_on_the_instance_is_called():
    chainer_fastpath.enable()
    node = chainer.functions.activation.relu.ReLU()
    calls = []

    def forward_cpu(inputs):
        calls.append(1)
        return inputs[0] * 3,

    node.forward_cpu = forward_cpu
    y, = node.apply((numpy.ones(2, numpy.float32),))
    assert calls == [1]
    numpy.testing.assert_array_equal(y.array, [3, 3])


def test_linear_static_method_patched_on_the_class_is_called(monkeypatch):
    from chainer.functions.connection import linear
    chainer_fastpath.enable()
    calls = []
    original = linear.LinearFunction.static_linear_no_bias

    def spy(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(linear.LinearFunction, 'static_linear_no_bias', spy)
    F.linear(_v(2, 4), _v(3, 4))
    assert calls == [1]


def test_retained_inputs_hold_their_arrays():
    def build():
        x, w = _v(2, 4), _v(3, 4)
        y = F.linear(x, w)
        node = y.creator_node
        return [n.data for n in node.inputs], node.get_retained_inputs()

    stock, patched = run_both(build)
    for s, p in zip(stock[0], patched[0]):
        numpy.testing.assert_array_equal(s, p)
    assert len(patched[1]) == 2


def test_base_method_replaced_after_fast_calls_is_called(monkeypatch):
    # The compiled linear forward calls retain_inputs as FunctionNode
    # defines it; replacing it on the base class after the class was
    # verified must still be seen, and undoing it restores the fast path.
    chainer_fastpath.enable()
    args = _v(2, 4), _v(3, 4)
    F.linear(*args)
    F.linear(*args)
    calls = []
    original = chainer.FunctionNode.retain_inputs

    def spy(self, indexes):
        calls.append(indexes)
        return original(self, indexes)

    monkeypatch.setattr(chainer.FunctionNode, 'retain_inputs', spy)
    F.linear(*args)
    assert calls == [(0, 1)]
    monkeypatch.undo()
    F.linear(*args)
    assert calls == [(0, 1)]
