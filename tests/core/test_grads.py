"""``_grads.pyx``: gradients inside the backward engine. Wherever a
gradient can be seen (a leaf's or a retained ``grad_var``, the arguments of
a backward left to stock, of ``backward_accumulate``, of a replaced
``F.add``), it is a Variable in stock's state, and gradients stock shares
are one Variable; stock vs patched."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F

from chainer_fastpath.testing import assert_same, check_same, run_both
from chainer_fastpath.testing import variable as _v


def _state(var):
    """What can be seen of gradient Variable ``var``: its class, its
    attributes and its node's (names in order; arrays by value), and
    whether the node's weak reference leads back to it."""
    if var is None:
        return None

    def described(obj):
        out = []
        for name, value in vars(obj).items():
            if isinstance(value, numpy.ndarray):
                value = ('array', value)
            elif isinstance(value, list):
                value = [('array', v) if isinstance(v, numpy.ndarray) else v
                         for v in value]
            elif name in ('_node', '_variable', 'dtype'):
                value = type(value).__name__
            out.append((name, value))
        return out
    node = var.node
    return (type(var).__name__, described(var), type(node).__name__,
            described(node), node._variable() is var)


def _sharing(variables):
    """For each of ``variables``, the index of the first one that is the
    same object: which gradients are one Variable."""
    return [next(j for j, w in enumerate(variables) if w is v)
            for v in variables]


def _leaf_grads(*leaves):
    gvs = [x.grad_var for x in leaves]
    return [_state(g) for g in gvs], _sharing(gvs)


# name -> (loss of leaves x and w, w's shape); x is (2, 3)
_GRAPHS = {
    # Add's backward hands its output gradient to both inputs.
    'add_shares': (lambda x, w: F.sum(F.tanh(x + w)), (2, 3)),
    'sum_of_two_paths': (
        lambda x, w: F.sum(F.relu(x * w) + F.sigmoid(x)), (2, 3)),
    'linear_chain': (
        lambda x, w: F.sum(F.linear(F.tanh(x), w) * 2.0), (4, 3)),
    'concat_split': (
        lambda x, w: F.sum(F.concat(F.split_axis(x * w, 3, 1)[::-1])),
        (2, 3)),
    # A leaf that needs no gradient among those that do.
    'constant_operand': (
        lambda x, w: F.sum(x * chainer.Variable(w.array,
                                                requires_grad=False)),
        (2, 3)),
}


def _backward(graph):
    loss, w_shape = _GRAPHS[graph]
    x, w = _v(2, 3), _v(*w_shape)
    loss(x, w).backward()
    return _leaf_grads(x, w)


@pytest.mark.parametrize('graph', sorted(_GRAPHS))
def test_leaf_gradients_are_stocks_variables(graph):
    stock, _ = check_same(lambda: _backward(graph))
    assert stock[0][0] is not None


def test_shared_gradient_is_one_variable():
    stock, _ = check_same(lambda: _backward('add_shares'))
    assert stock[1] == [0, 0]   # x.grad_var is w.grad_var


def test_retained_gradients_are_stocks_variables():
    def fn():
        x, w = _v(2, 3), _v(2, 3)
        h = x + w
        t = F.tanh(h)
        F.sum(t * t).backward(retain_grad=True)
        gvs = [v.grad_var for v in (t, h, x, w)]
        return [_state(g) for g in gvs], _sharing(gvs)
    stock, _ = check_same(fn)
    assert stock[1] == [0, 1, 1, 1]   # h, x and w share one Variable


class _Recording(chainer.FunctionNode):
    """An identity without a compiled backward: stock's engine calls its
    ``backward`` with the gradients the compiled backwards after it made;
    it records what it is handed."""

    def __init__(self, calls):
        self.calls = calls

    def forward(self, inputs):
        return inputs[0].copy(),

    def backward(self, indexes, grad_outputs):
        self.calls.append([_state(g) for g in grad_outputs])
        return grad_outputs


class _RecordingAccumulate(_Recording):
    def backward_accumulate(self, target_input_indexes, grad_outputs,
                            grad_inputs):
        self.calls.append(([_state(g) for g in grad_outputs],
                           [_state(g) for g in grad_inputs]))
        gx = grad_outputs[0]
        return (gx if grad_inputs[0] is None else gx + grad_inputs[0]),


@pytest.mark.parametrize('node', [_Recording, _RecordingAccumulate])
def test_backward_left_to_stock_is_handed_variables(node):
    def fn():
        calls = []
        x = _v(2, 3)
        h = x * 2.0
        # Two uses of the recording node's input: its backward_accumulate
        # gets the other use's gradient as well.
        y, = node(calls).apply((h,))
        F.sum(F.relu(y) * F.sigmoid(h)).backward()
        return calls, _leaf_grads(x)
    stock, _ = check_same(fn)
    assert stock[0]


def test_replaced_f_add_is_handed_variables():
    def fn():
        x = _v(2, 3)
        calls = []
        add = chainer.functions.add

        def spy(*xs):
            calls.append([_state(g) for g in xs])
            return add(*xs)

        with mock.patch('chainer.functions.add', spy):
            F.sum(F.tanh(x) * 2.0 + F.sigmoid(x)).backward()
        return calls, _leaf_grads(x)
    stock, patched = run_both(fn)
    assert len(stock[0]) == 1
    assert_same(stock, patched)


def test_lazy_grad_sum_gives_stocks_variables():
    def fn():
        x = _v(2, 3)
        with chainer.using_config('lazy_grad_sum', True):
            h = F.tanh(x)
            F.sum(h * 2.0 + h * 3.0 + F.relu(h)).backward(retain_grad=True)
        return _leaf_grads(x, h)
    check_same(fn)
