"""Compiled node backwards (``_backwards.pyx``), stock vs patched: the
gradient Variables (arrays, dtypes, ``requires_grad``) must be identical,
and every case the compiled code does not handle must reach stock."""
import numpy
import pytest

import chainer
from chainer import function_hooks
import chainer.functions as F
import chainer.links as L
from chainer.functions.connection import linear

import chainer_fastpath
from chainer_fastpath.testing import check_same


def _v(*shape, dtype=numpy.float32, requires_grad=True):
    return chainer.Variable(
        numpy.random.uniform(-1, 1, shape).astype(dtype),
        requires_grad=requires_grad)


def _grad_vars(*variables):
    """What backward leaves on the inputs: arrays and requires_grad."""
    out = []
    for v in variables:
        gv = v.grad_var
        out.append(None if gv is None
                   else (gv.array, gv.array.dtype, gv.requires_grad))
    return out


def _node_backward():
    return chainer_fastpath.stats()['FunctionNode.backward']


DTYPES = [numpy.float16, numpy.float32, numpy.float64]

# name -> f(dtype) building inputs and returning (inputs, output)
CASES = {
    'linear': lambda d: _apply(lambda x, W, b: F.linear(x, W, b),
                               _v(3, 4, dtype=d), _v(5, 4, dtype=d),
                               _v(5, dtype=d)),
    'linear_nobias': lambda d: _apply(lambda x, W: F.linear(x, W),
                                      _v(1, 4, dtype=d), _v(5, 4, dtype=d)),
    'linear_x_const': lambda d: _apply(
        lambda x, W, b: F.linear(x, W, b),
        _v(3, 4, dtype=d, requires_grad=False), _v(5, 4, dtype=d),
        _v(5, dtype=d)),
    'relu': lambda d: _apply(F.relu, _v(3, 4, dtype=d)),
    'tanh': lambda d: _apply(F.tanh, _v(3, 4, dtype=d)),
    'sigmoid': lambda d: _apply(F.sigmoid, _v(3, 4, dtype=d)),
    'add': lambda d: _apply(lambda a, b: a + b, _v(3, 4, dtype=d),
                            _v(3, 4, dtype=d)),
    'add_broadcast': lambda d: _apply(F.add, _v(3, 4, dtype=d),
                                      _v(1, 4, dtype=d)),
    'add_same_input': lambda d: _apply(lambda a: a + a, _v(2, 2, dtype=d)),
    'add_constant': lambda d: _apply(lambda a: a + 1, _v(2, 3, dtype=d)),
    'mul': lambda d: _apply(lambda a, b: a * b, _v(3, 4, dtype=d),
                            _v(3, 4, dtype=d)),
    'mul_square': lambda d: _apply(lambda a: a * a, _v(3, 4, dtype=d)),
    'mul_const_input': lambda d: _apply(
        lambda a, b: a * b, _v(3, 4, dtype=d),
        _v(3, 4, dtype=d, requires_grad=False)),
    'mul_broadcast': lambda d: _apply(lambda a, b: a * b, _v(3, 4, dtype=d),
                                      _v(1, 4, dtype=d)),
    # A mask: the product already has the Variable's shape, so sum_to is
    # the identity and the compiled case applies.
    'mul_broadcast_array': lambda d: _apply(
        lambda a: a * numpy.array([[1], [0], [1]], d), _v(3, 4, dtype=d)),
    'mul_broadcast_rhs_row': lambda d: _apply(
        lambda a, b: a * b, _v(3, 4, dtype=d),
        _v(4, dtype=d, requires_grad=False)),
    'squared_error': lambda d: _apply(F.squared_error, _v(3, 4, dtype=d),
                                      _v(3, 4, dtype=d)),
    'squared_error_const_target': lambda d: _apply(
        lambda a: F.squared_difference(a, numpy.ones((3, 4), d)),
        _v(3, 4, dtype=d)),
    'squared_error_masked_sum': lambda d: _apply(
        lambda a: F.sum(F.squared_error(a, numpy.zeros((2, 5), d))
                        * numpy.array([[1], [0]], d)), _v(2, 5, dtype=d)),
    'split_axis': lambda d: _apply(
        lambda a: F.concat(F.split_axis(a, 3, axis=1)[::-1], axis=1),
        _v(2, 6, dtype=d)),
    'split_axis_unused_part': lambda d: _apply(
        lambda a: F.split_axis(a, [1, 3], axis=0)[1], _v(4, 3, dtype=d)),
    'mul_constant': lambda d: _apply(lambda a: a * 0.5, _v(3, 4, dtype=d)),
    'mul_constant_int': lambda d: _apply(lambda a: 3 * a, _v(3, 4, dtype=d)),
    'neg': lambda d: _apply(lambda a: -a, _v(3, 4, dtype=d)),
    'sub_from_constant': lambda d: _apply(lambda a: 1 - a,
                                          _v(3, 4, dtype=d)),
    'sum': lambda d: _apply(F.sum, _v(3, 4, dtype=d)),
    'sum_axis': lambda d: _apply(lambda a: F.sum(a, axis=1),
                                 _v(3, 4, dtype=d)),
    'sum_keepdims': lambda d: _apply(
        lambda a: F.sum(a, axis=0, keepdims=True), _v(3, 4, dtype=d)),
    'softmax_cross_entropy': lambda d: _apply(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([0, 2, -1], numpy.int32)), _v(3, 5, dtype=d)),
    'softmax_cross_entropy_no_reduce': lambda d: _apply(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([1, 2, 0], numpy.int32), reduce='no'),
        _v(3, 5, dtype=d)),
    'softmax_cross_entropy_no_cache': lambda d: _apply(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([0, 2, 1], numpy.int32), cache_score=False,
            normalize=False), _v(3, 5, dtype=d)),
    'softmax_cross_entropy_class_weight': lambda d: _apply(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([0, 2, 1], numpy.int32),
            class_weight=numpy.arange(1, 6).astype(d)), _v(3, 5, dtype=d)),
    'softmax_cross_entropy_3d': lambda d: _apply(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([[0, 2], [1, -1]], numpy.int32)),
        _v(2, 5, 2, dtype=d)),
    'lstm': lambda d: _lstm_h(_v(2, 3, dtype=d), _v(2, 12, dtype=d)),
    'lstm_cell_dropped': lambda d: _apply(
        lambda c, x: F.lstm(c, x)[1], _v(2, 3, dtype=d), _v(2, 12, dtype=d)),
    'lstm_both_outputs': lambda d: _apply(
        lambda c, x: F.sum(F.lstm(c, x)[0]) + F.sum(F.lstm(c, x)[1]),
        _v(2, 3, dtype=d), _v(2, 12, dtype=d)),
    'lstm_shrinking_batch': lambda d: _apply(
        lambda c, x: F.sum(F.lstm(c, x)[0]) + F.sum(F.lstm(c, x)[1]),
        _v(3, 2, dtype=d), _v(2, 8, dtype=d)),
    'lstm_3d': lambda d: _apply(
        lambda c, x: F.lstm(c, x)[1], _v(2, 3, 2, dtype=d),
        _v(2, 12, 2, dtype=d)),
    'concat': lambda d: _apply(lambda a, b: F.concat((a, b), axis=1),
                               _v(2, 3, dtype=d), _v(2, 4, dtype=d)),
    'concat_axis0_three': lambda d: _apply(
        lambda a, b, c: F.concat((a, b, c), axis=0),
        _v(1, 3, dtype=d), _v(2, 3, dtype=d), _v(1, 3, dtype=d)),
    'concat_one': lambda d: _apply(lambda a: F.concat((a,)),
                                   _v(2, 3, dtype=d)),
    'concat_negative_axis': lambda d: _apply(
        lambda a, b: F.concat((a, b), axis=-1), _v(2, 3, 2, dtype=d),
        _v(2, 3, 1, dtype=d)),
    'concat_middle_axis_empty': lambda d: _apply(
        lambda a, b, c: F.concat((a, b, c), axis=1), _v(2, 0, 2, dtype=d),
        _v(2, 3, 2, dtype=d), _v(2, 1, 2, dtype=d)),
    'gru_encoder': lambda d: _bigru(d),
    'get_item_slice': lambda d: _apply(lambda a: a[1:, ::2],
                                       _v(3, 5, dtype=d)),
    'get_item_int': lambda d: _apply(lambda a: a[1], _v(3, 5, dtype=d)),
    'get_item_repeated_index': lambda d: _apply(
        lambda a: a[numpy.array([0, 2, 0])], _v(3, 5, dtype=d)),
    'embed_id_no_ignore': lambda d: _apply(
        lambda W: F.embed_id(numpy.array([[0, 3], [3, 4]], numpy.int32), W),
        _v(5, 3, dtype=d)),
    'embed_id_negative_index_2d': lambda d: _apply(
        lambda W: F.embed_id(numpy.array([[-1, 3, 0], [3, -5, -1]],
                                         numpy.int64), W), _v(5, 3, dtype=d)),
    'embed_id_ignore_negative': lambda d: _apply(
        lambda W: F.embed_id(numpy.array([-1, 2, -1, 4], numpy.int8), W,
                             ignore_label=-1), _v(5, 2, dtype=d)),
    'embed_id': lambda d: _apply(
        lambda W: F.embed_id(numpy.array([0, 3, 3, 1], numpy.int32), W,
                             ignore_label=1), _v(5, 3, dtype=d)),
}


def _apply(f, *inputs):
    return inputs, f(*inputs)


def _bigru(dtype):
    # NStepBiGRU over sequences of decreasing lengths, as the sequence
    # labeler runs it: split_axis, sigmoid, tanh, 1 - z, products, concat.
    with chainer.using_config('dtype', dtype):
        gru = L.NStepBiGRU(1, 3, 2, 0.0)
    xs = [_v(n, 3, dtype=dtype) for n in (4, 3, 1)]
    _, ys = gru(None, xs)
    return tuple(xs) + tuple(p for _, p in sorted(gru.namedparams())), \
        F.concat(ys, axis=0)


def _lstm_h(c, x):
    # The cell output stays alive, as in L.LSTM: only h gets a gradient.
    c_new, h = F.lstm(c, x)
    return (c, x, c_new), h


def _run(case, dtype, start_grad=True):
    inputs, y = CASES[case](dtype)
    if start_grad:
        y.grad = numpy.random.uniform(-1, 1, y.shape).astype(y.dtype)
    y.backward()
    return _grad_vars(*inputs)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('case', sorted(CASES))
@pytest.mark.parametrize('type_check', [True, False])
def test_gradients_same_as_stock(case, dtype, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return _run(case, dtype)
    check_same(fn)


@pytest.mark.parametrize('case', ['linear', 'relu', 'tanh', 'sigmoid',
                                  'add', 'add_constant', 'sum',
                                  'softmax_cross_entropy', 'lstm',
                                  'embed_id', 'concat', 'get_item_slice',
                                  'mul', 'split_axis', 'mul_constant',
                                  'neg', 'sub_from_constant',
                                  'mul_broadcast_array',
                                  'mul_broadcast_rhs_row', 'squared_error',
                                  'squared_error_const_target',
                                  'squared_error_masked_sum',
                                  'concat_negative_axis',
                                  'concat_middle_axis_empty'])
def test_compiled_backward_is_used(case):
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _run(case, numpy.float32)
        counts = _node_backward()
    assert counts['fast'] >= 1
    assert counts['fallback'] == {}


def test_uncompiled_cases_are_counted():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _run('sum_axis', numpy.float32)
        _run('add_broadcast', numpy.float32)
        # b's gradient needs sum_to over the broadcast axis.
        _run('mul_broadcast', numpy.float32)
        counts = _node_backward()['fallback']
    assert counts == {'case left to stock: Sum': 1,
                      'case left to stock: Add': 1,
                      'case left to stock: Mul': 1}


def test_squared_error_with_broadcast_gradient_left_to_stock():
    # A gradient of another shape than the inputs: stock's operators
    # broadcast it; the compiled case leaves it to stock.
    def fn():
        a, b = _v(1, 4), _v(1, 4)
        y = F.squared_error(a, b)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((3, 4), numpy.float32)))
        try:
            y.backward()
        except Exception as e:
            return type(e).__name__
        return _grad_vars(a, b)
    check_same(fn)
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        fn()
        reasons = _node_backward()['fallback']
    assert reasons == {'case left to stock: SquaredError': 1}


def test_gru_encoder_backward_is_all_compiled():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _run('gru_encoder', numpy.float32)
        reasons = _node_backward()['fallback']
    # Only the sequence bookkeeping nodes are left to stock.
    assert set(reasons) <= {'no compiled backward: TransposeSequence',
                            'no compiled backward: Separate'}


def test_mlp_training_steps_same_as_stock():
    def fn():
        m = chainer.Sequential(L.Linear(6, 8), F.relu, L.Linear(8, 8),
                               F.sigmoid, L.Linear(8, 3))
        opt = chainer.optimizers.Adam()
        opt.setup(m)
        out = []
        for _ in range(5):
            x = _v(4, 6)
            t = numpy.random.randint(0, 3, 4).astype(numpy.int32)
            loss = F.softmax_cross_entropy(m(x), t)
            m.cleargrads()
            loss.backward()
            opt.update()
            out.append([p.array.copy() for p in m.params()])
        return out
    check_same(fn)


def test_double_backprop_does_not_use_compiled_backward():
    def fn():
        x = _v(2, 3)
        W = _v(4, 3)
        y = F.sum(F.tanh(F.linear(x, W)))
        gx, = chainer.grad([y], [x], enable_double_backprop=True)
        F.sum(gx * gx).backward()
        return _grad_vars(x, W)
    check_same(fn)
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        x = _v(2, 3)
        y = F.sum(F.tanh(F.linear(x, _v(4, 3))))
        y.backward(enable_double_backprop=True)
        assert _node_backward()['fast'] == 0
        assert x.grad_var.creator is not None


def test_function_hook_sees_the_gradient_nodes():
    # A hook observes the nodes stock's backward applies: with one
    # registered, the compiled backwards stand aside.
    def fn():
        hook = function_hooks.TimerHook()
        with hook:
            _run('linear', numpy.float32)
        return sorted(name for name, _ in hook.call_history)
    _, patched = check_same(fn)
    assert 'LinearGradWeight' in patched


def test_mocked_gradient_node_is_called():
    calls = []
    original = linear.LinearGradWeight.forward

    def spy(self, inputs):
        calls.append(type(self).__name__)
        return original(self, inputs)

    linear.LinearGradWeight.forward = spy
    try:
        with chainer_fastpath.enabled():
            chainer_fastpath.reset_stats()
            _run('linear', numpy.float32)
            reasons = _node_backward()['fallback']
    finally:
        linear.LinearGradWeight.forward = original
    assert calls == ['LinearGradWeight']
    assert reasons == {'patched or mocked method': 1}


@pytest.mark.parametrize('case,cls,name', [
    ('concat', 'SplitAxis', 'forward'),
    ('concat', 'SplitAxis', 'check_type_forward'),
    ('squared_error', 'Sub', 'forward'),
    ('squared_error', 'Mul', 'forward'),
    ('squared_error', 'Neg', 'forward'),
    ('squared_error', 'MulConstant', 'forward'),
    ('relu', 'ReLUGrad2', 'forward_cpu'),
    ('tanh', 'TanhGrad', 'forward_cpu'),
    ('sigmoid', 'SigmoidGrad', 'check_type_forward'),
    ('sigmoid', 'SigmoidGrad', 'forward_cpu'),
])
def test_mocked_method_of_an_inner_node_is_called(case, cls, name, spy):
    # Concat's backward applies SplitAxis, SquaredError's the arithmetic
    # nodes, the activations their gradient nodes: a spy on one of them is
    # called, stock and patched.
    from chainer.functions.activation import relu, sigmoid, tanh
    from chainer.functions.array import split_axis
    from chainer.functions.math import basic_math
    owner = getattr({'SplitAxis': split_axis, 'ReLUGrad2': relu,
                     'TanhGrad': tanh, 'SigmoidGrad': sigmoid}.get(
                         cls, basic_math), cls)
    calls = spy(owner, name)
    _run(case, numpy.float32)
    stock_calls = len(calls)
    del calls[:]
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _run(case, numpy.float32)
        reasons = _node_backward()['fallback']
    assert stock_calls >= 1
    assert len(calls) == stock_calls
    assert reasons == {'patched or mocked method': 1}


def test_mocked_numpy_split_is_called_by_concat_backward(spy):
    calls = spy(numpy, 'split')
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _run('concat', numpy.float32)
        reasons = _node_backward()['fallback']
    assert len(calls) == 1
    assert reasons == {'patched or mocked method': 1}


def test_concat_backward_gives_stock_views():
    # The gradients are views of the concatenated gradient, as
    # numpy.split leaves them: same shapes, strides and base.
    def fn():
        a, b = _v(2, 3, 2), _v(2, 1, 2)
        y = F.concat((a, b), axis=1)
        gy = numpy.random.uniform(-1, 1, y.shape).astype(numpy.float32)
        y.grad = gy
        y.backward()
        return [(g.shape, g.strides, g.base is gy, g.flags.c_contiguous)
                for g in (a.grad, b.grad)]
    stock, patched = check_same(fn)
    assert stock == patched


@pytest.mark.parametrize('dtype,compiled', [
    (numpy.float32, True), (numpy.float64, True), (numpy.float16, False)])
def test_embed_id_gradient_node_forward(dtype, compiled, python_calls):
    # EmbedIDGrad's forward, a Python loop in stock, is compiled for
    # float32 and float64; float16 (rounded through float) stays stock's.
    from chainer.functions.connection import embed_id
    with chainer_fastpath.enabled():
        calls = python_calls(lambda: _run('embed_id', dtype),
                             embed_id.EmbedIDGrad.forward)
    assert calls == (0 if compiled else 1)


@pytest.mark.parametrize('function', ['forward', 'grad_forward'])
def test_lstm_forwards_are_compiled(function, python_calls):
    from chainer.functions.rnn import lstm
    target = (lstm.LSTM.forward if function == 'forward'
              else lstm.LSTMGrad.forward)
    assert python_calls(lambda: _run('lstm', numpy.float32), target) == 1
    with chainer_fastpath.enabled():
        assert python_calls(lambda: _run('lstm', numpy.float32),
                            target) == 0


@pytest.mark.parametrize('name', ['_sigmoid', '_grad_tanh', '_extract_gates'])
def test_lstm_mocked_module_function_is_called(name, spy):
    from chainer.functions.rnn import lstm
    calls = spy(lstm, name)
    _run('lstm', numpy.float32)
    stock_calls = len(calls)
    del calls[:]
    with chainer_fastpath.enabled():
        _run('lstm', numpy.float32)
    assert stock_calls >= 1
    assert len(calls) == stock_calls


def test_embed_id_index_out_of_range_same_error_as_stock():
    # Stock fails in the forward; the gradient node would fail the same
    # way: the compiled forward leaves it to stock.
    from chainer.functions.connection import embed_id

    def fn():
        node = embed_id.EmbedIDGrad((3, 2))
        try:
            node.apply((numpy.array([0, 3], numpy.int32),
                        numpy.ones((2, 2), numpy.float32)))
        except Exception as e:
            return type(e).__name__, str(e)
    stock, patched = check_same(fn)
    assert stock[0] == 'IndexError'


@pytest.mark.parametrize('errstate', [{}, {'over': 'raise'},
                                      {'over': 'ignore'}])
def test_embed_id_gradient_overflow_warns_as_stock(errstate):
    # Two rows of one index summed past float32's range: stock's add warns
    # (or raises); the compiled gradient leaves that case to it.
    import warnings

    def fn():
        W = chainer.Parameter(numpy.zeros((5, 3), numpy.float32))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            try:
                with numpy.errstate(**errstate):
                    y = F.embed_id(numpy.array([1, 1, 2], numpy.int32), W)
                    y.grad = numpy.full((3, 3), 3e38, numpy.float32)
                    y.backward()
            except FloatingPointError as e:
                return 'raised: ' + str(e), [str(w.message) for w in caught]
        return W.grad, [str(w.message) for w in caught]
    stock, patched = check_same(fn)
    assert 'overflow' in str(stock) or errstate == {'over': 'ignore'}


def test_bad_gradient_dtype_same_error_as_stock():
    # A float64 gradient given to a float32 linear output: stock casts
    # the data gradient back and then rejects the mismatch.
    def fn():
        x, W = _v(2, 3), _v(4, 3)
        y = F.linear(x, W)
        # Bypasses the setter's check, which would refuse it up front.
        y._set_grad_var_without_check(
            chainer.Variable(numpy.ones((2, 4), numpy.float64)))
        try:
            y.backward()
        except Exception as e:
            return type(e).__name__, str(e).splitlines()[0]
        return _grad_vars(x, W)
    check_same(fn)
