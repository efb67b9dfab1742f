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
    'concat': lambda d: _apply(lambda a, b: F.concat((a, b), axis=1),
                               _v(2, 3, dtype=d), _v(2, 4, dtype=d)),
    'concat_axis0_three': lambda d: _apply(
        lambda a, b, c: F.concat((a, b, c), axis=0),
        _v(1, 3, dtype=d), _v(2, 3, dtype=d), _v(1, 3, dtype=d)),
    'concat_one': lambda d: _apply(lambda a: F.concat((a,)),
                                   _v(2, 3, dtype=d)),
    'get_item_slice': lambda d: _apply(lambda a: a[1:, ::2],
                                       _v(3, 5, dtype=d)),
    'get_item_int': lambda d: _apply(lambda a: a[1], _v(3, 5, dtype=d)),
    'get_item_repeated_index': lambda d: _apply(
        lambda a: a[numpy.array([0, 2, 0])], _v(3, 5, dtype=d)),
    'embed_id_no_ignore': lambda d: _apply(
        lambda W: F.embed_id(numpy.array([[0, 3], [3, 4]], numpy.int32), W),
        _v(5, 3, dtype=d)),
    'embed_id': lambda d: _apply(
        lambda W: F.embed_id(numpy.array([0, 3, 3, 1], numpy.int32), W,
                             ignore_label=1), _v(5, 3, dtype=d)),
}


def _apply(f, *inputs):
    return inputs, f(*inputs)


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
                                  'neg', 'sub_from_constant'])
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
        counts = _node_backward()['fallback']
    assert counts == {'case left to stock: Sum': 1,
                      'case left to stock: Add': 1}


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
