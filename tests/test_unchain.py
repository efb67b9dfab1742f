"""``Variable.unchain_backward`` (``_unchain.pyx``), stock vs patched: the
same graph left behind, the same gradients after it, and every node whose
methods are not stock's asked through them."""
import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import variable

import chainer_fastpath
from chainer_fastpath.testing import assert_same, check_same, run_both


def _graph():
    """A truncated-BPTT graph: an LSTM over three steps, summed, with a
    branch the loss does not reach. Returns the loss, every function node
    and every variable node, in a fixed order."""
    lstm = L.LSTM(3, 4)
    loss = 0
    side = None
    for _ in range(3):
        h = lstm(chainer.Variable(
            numpy.random.uniform(-1, 1, (2, 3)).astype(numpy.float32)))
        loss += F.sum(h)
        side = h * 2
    funcs, nodes, seen = [], [], set()
    stack = [loss.creator_node, side.creator_node]
    while stack:
        f = stack.pop()
        if f is None or f in seen:
            continue
        seen.add(f)
        funcs.append(f)
        for x in f.inputs:
            nodes.append(x)
            stack.append(x.creator_node)
    return lstm, loss, side, funcs, nodes


def _state(funcs, nodes):
    return ([(f.inputs is None, f.outputs is None) for f in funcs],
            [n.creator_node is None for n in nodes])


@pytest.mark.parametrize('on', ['loss', 'state', 'leaf'])
def test_graph_left_as_stock_leaves_it(on):
    def fn():
        lstm, loss, side, funcs, nodes = _graph()
        before = _state(funcs, nodes)
        target = {'loss': loss, 'state': lstm.h,
                  'leaf': chainer.Variable(numpy.zeros(1))}[on]
        target.unchain_backward()
        return before, _state(funcs, nodes), side.creator_node is None
    stock, patched = run_both(fn)
    assert_same(stock, patched)
    assert stock[0] != stock[1] or on == 'leaf'


def test_gradients_after_truncation_as_stock():
    def fn():
        lstm = L.LSTM(3, 4)
        grads = []
        for _ in range(3):
            loss = 0
            for _ in range(4):
                loss += F.sum(lstm(chainer.Variable(numpy.random.uniform(
                    -1, 1, (2, 3)).astype(numpy.float32))))
            lstm.cleargrads()
            loss.backward()
            loss.unchain_backward()
            grads.append([p.grad.copy() for _, p in
                          sorted(lstm.namedparams())])
        return grads
    check_same(fn)


def _counts():
    return chainer_fastpath.stats()['Variable.unchain_backward']


def test_fast_path_is_counted():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _graph()[1].unchain_backward()
        assert _counts() == {'fast': 1, 'fallback': {}}


def test_variable_subclass_runs_the_original():
    class MyVariable(chainer.Variable):
        pass

    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        v = MyVariable(numpy.ones(2, numpy.float32))
        F.sum(v * 2).unchain_backward()     # a Variable: fast
        (v * 1).unchain_backward()          # a plain Variable too
        v.unchain_backward()
        assert _counts() == {'fast': 2,
                             'fallback': {'Variable subclass': 1}}


def test_replaced_variable_node_unchain_is_called(monkeypatch):
    calls = []
    original = variable.VariableNode.unchain

    def spy(self):
        calls.append(self.name)
        original(self)

    monkeypatch.setattr(variable.VariableNode, 'unchain', spy)
    with chainer_fastpath.enabled():
        x = chainer.Variable(numpy.ones(2, numpy.float32), name='x')
        y = x * 2
        y.name = 'y'
        z = y + 1
        z.name = 'z'
        z.unchain_backward()
    assert sorted(calls) == ['y', 'z']
    assert y.creator_node is None and z.creator_node is None


def test_function_node_with_own_unchain_is_asked():
    calls = []

    class Twice(chainer.FunctionNode):
        def forward(self, inputs):
            return inputs[0] * 2,

        def unchain(self):
            calls.append(type(self).__name__)
            super().unchain()

    with chainer_fastpath.enabled():
        x = chainer.Variable(numpy.ones(2, numpy.float32))
        y, = Twice().apply((x,))
        z = y + 1
        z.unchain_backward()
    assert calls == ['Twice']
    assert y.creator_node is None and z.creator_node is None


def test_replaced_creator_node_property_runs_the_original(monkeypatch):
    original = variable.Variable.creator_node
    monkeypatch.setattr(variable.Variable, 'creator_node', property(
        original.fget, original.fset))
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        y = chainer.Variable(numpy.ones(2, numpy.float32)) * 2
        y.unchain_backward()
        assert _counts()['fallback'] == {
            'Variable.creator_node replaced': 1}
    assert y.creator_node is None
