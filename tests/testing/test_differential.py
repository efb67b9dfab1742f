"""The differential helper itself: it must see a difference when there is
one, and the patched run must really be patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L

import chainer_fastpath
from chainer_fastpath.testing import (
    applied, assert_same, check_same, gradients, outputs, run_both, variable)


def test_run_both_runs_stock_then_patched():
    seen = []
    run_both(lambda: seen.append(chainer_fastpath.is_enabled()))
    assert seen == [False, True]
    assert not chainer_fastpath.is_enabled()


def test_run_both_seeds_numpy_alike():
    a, b = run_both(lambda: numpy.random.randn(3))
    assert_same(a, b)


@pytest.mark.parametrize('a,b', [
    (numpy.zeros(3, numpy.float32), numpy.zeros(3, numpy.float64)),
    (numpy.zeros(3), numpy.zeros((3, 1))),
    (numpy.array([0.0]), numpy.array([-0.0])),
    (numpy.array([1.0]), numpy.array([numpy.nextafter(1.0, 2.0)])),
    ([1, 2], [1, 3]),
    ({'a': 1}, {'b': 1}),
    (1.0, 1),
])
def test_assert_same_sees_differences(a, b):
    with pytest.raises(AssertionError):
        assert_same(a, b)


def test_assert_same_compares_variable_grads():
    a = chainer.Variable(numpy.ones(2, numpy.float32))
    b = chainer.Variable(numpy.ones(2, numpy.float32))
    a.grad = numpy.ones(2, numpy.float32)
    with pytest.raises(AssertionError):
        assert_same(a, b)


def test_mlp_step_same_stock_and_patched():
    def step():
        model = chainer.Sequential(L.Linear(4, 8), F.relu, L.Linear(8, 3))
        opt = chainer.optimizers.Adam()
        opt.setup(model)
        x = numpy.random.randn(5, 4).astype(numpy.float32)
        t = numpy.random.randint(0, 3, size=5).astype(numpy.int32)
        losses = []
        for _ in range(3):
            model.cleargrads()
            loss = F.softmax_cross_entropy(model(x), t)
            loss.backward()
            opt.update()
            losses.append(loss.array)
        return losses, {n: p.array for n, p in model.namedparams()}

    check_same(step)


def test_gradients_are_what_backward_leaves_on_the_inputs():
    # The second input needs no gradient: backward leaves it none.
    def build(dtype):
        return applied(lambda a, b: a * b, variable(2, dtype=dtype),
                       variable(2, dtype=dtype, requires_grad=False))
    (ga, dtype, _), gb = gradients(build, numpy.float64)
    assert ga.dtype == dtype == numpy.float64
    assert gb is None


@pytest.mark.parametrize('backprop', [True, False])
def test_outputs_record_the_graph_and_the_gradients(backprop):
    result = outputs(lambda: (F.relu, [variable(3)]), backprop)
    assert result['has_creator'] == [backprop]
    assert ('gx' in result) == backprop
