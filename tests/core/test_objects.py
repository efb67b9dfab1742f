"""``_objects.pyx``: the Variables, nodes and weak references the fast path
builds, against what stock's constructors leave."""
import gc
import os
import subprocess
import sys
import weakref

import numpy
import pytest

import chainer
import chainer.functions as F

import chainer_fastpath
from chainer_fastpath._core import _attrs
from chainer_fastpath._core import _objects


def _graph():
    x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
    return x, F.tanh(x * 2)


def test_weak_references_are_left_to_reference_counting():
    # A weakref without a callback can be in no cycle: the fast path keeps
    # it off the collector's lists, and the function node's tuple of them
    # too; each still dies with its referent.
    with chainer_fastpath.enabled():
        _, y = _graph()
    refs = [y.node._variable] + list(y.creator_node.outputs)
    assert all(type(r) is weakref.ref and r.__callback__ is None
               for r in refs)
    assert not any(gc.is_tracked(r) for r in refs)
    assert type(y.creator_node.outputs) is tuple
    assert not gc.is_tracked(y.creator_node.outputs)
    assert refs[0]() is y and refs[1]() is y.node
    del y
    assert refs[0]() is None and refs[1]() is None


def _cycle():
    _, y = _graph()
    y.creator_node.kept = y     # node -> Variable -> node -> creator
    return weakref.ref(y)


def test_cycles_through_the_graph_are_still_collected():
    # No automatic collection before the explicit one: it might take the
    # first cycle while the second is built.
    gc.disable()
    try:
        stock = _cycle()            # each test starts unpatched (conftest)
        with chainer_fastpath.enabled():
            patched = _cycle()
        assert stock() is not None and patched() is not None
    finally:
        gc.enable()
    gc.collect()
    assert stock() is None and patched() is None


def test_nodes_of_equal_shapes_share_one_tuple():
    # A node's shape tuple is a recent equal one when there is one, so the
    # collector counts fewer new objects; each still equals its array's.
    shapes = [(8, 64), (64, 8), (2,), (2, 1), (), (8, 64), (2, 1), (3, 0)]
    with chainer_fastpath.enabled():
        ys = [F.identity(chainer.Variable(numpy.zeros(s, numpy.float32)))
              for s in shapes]
    for s, y in zip(shapes, ys):
        assert type(y.node.shape) is tuple and y.node.shape == s
        assert all(type(d) is int for d in y.node.shape)
    assert ys[5].node.shape is ys[0].node.shape
    assert ys[6].node.shape is ys[3].node.shape


def _state(var):
    """A Variable's and its node's attributes, in order, with the node and
    weak references named by what they point at."""
    def describe(value):
        if isinstance(value, weakref.ref):
            return ('weakref', type(value()).__name__)
        if isinstance(value, (chainer.variable.VariableNode,
                              chainer.FunctionNode)):
            return type(value).__name__
        if isinstance(value, numpy.ndarray):
            return ('array', value.dtype, value.shape, value.tobytes())
        if isinstance(value, list):
            return [describe(v) for v in value]
        return value
    return ([(k, describe(v)) for k, v in vars(var).items()],
            [(k, describe(v)) for k, v in vars(var.node).items()])


@pytest.mark.parametrize('bytecode', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
def test_new_variables_have_stocks_state(bytecode, backprop):
    # From 3.11 _stores' bytecode writes the attributes; both ways must
    # leave what stock's constructor and apply leave.
    def build():
        x = chainer.Variable(numpy.arange(6, dtype=numpy.float32))
        with chainer.using_config('enable_backprop', backprop):
            y = F.tanh(x * 2)
        return y, chainer.as_variable(y.array)
    stock = build()
    previous = _objects._use_bytecode_stores(bytecode)
    try:
        with chainer_fastpath.enabled():
            patched = build()
    finally:
        _objects._use_bytecode_stores(previous)
    for s, p in zip(stock, patched):
        assert _state(p) == _state(s)


_NODES_SCRIPT = '''
import chainer_fastpath     # first: on 3.12 it lets Chainer import
import numpy, chainer, chainer.functions as F
from chainer_fastpath._core import _attrs
made_before = [chainer.Parameter(numpy.zeros(1, 'f')) for _ in range({})]
chainer_fastpath.enable()
model = [chainer.Parameter(numpy.zeros(1, 'f')) for _ in range(40)]
x = chainer.Variable(numpy.ones(3, 'f'))
ys = [F.tanh(x * i) for i in range(50)]
print(sorted({{_attrs.keeps_values(y.node) for y in ys}}))
# Parameters of a link of unknown input size, initialized at its first call.
late = [chainer.Parameter(chainer.initializers.One()) for _ in range(3)]
for p in late:
    p.initialize((1,))
print(sorted({{_attrs.keeps_values(p) for p in late}}))
'''


@pytest.mark.skipif(not _attrs.FAST, reason='no shared key tables here')
@pytest.mark.parametrize('made_before, values, told', [
    (0, True, False), (5, True, False), (40, False, True)])
def test_graph_nodes_keep_their_attributes_in_values(made_before, values,
                                                     told):
    # A model's Parameters have nodes, made before any node gets a creator
    # and before the Parameters get their arrays; enable() reserves the
    # slots of the names nodes and Parameters get late (``_rank``,
    # ``_has_chainerx_array``), which it can while the tables have room, and
    # says in the verbose log when it cannot.
    out = subprocess.run(
        [sys.executable, '-c', _NODES_SCRIPT.format(made_before)],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, CHAINER_FASTPATH_VERBOSE='1'))
    assert out.stdout.split('\n')[:2] == [str([values])] * 2
    assert ('call enable() before building the model' in out.stderr) == told


_FAILED_RESERVE_SCRIPT = '''
import chainer_fastpath
from chainer_fastpath._core import _attrs


def refuse(cls, names):
    raise RuntimeError('no room today')


_attrs.reserve = refuse
print(chainer_fastpath.enable(), chainer_fastpath.is_enabled())
'''


@pytest.mark.skipif(not _attrs.FAST, reason='no shared key tables here')
def test_enable_goes_on_where_the_reservation_fails():
    # The reservation is a matter of speed only: where it raises, enable()
    # installs the fast path all the same and says why in the verbose log.
    out = subprocess.run(
        [sys.executable, '-c', _FAILED_RESERVE_SCRIPT],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, CHAINER_FASTPATH_VERBOSE='1'))
    assert out.stdout.split('\n')[0] == 'True True'
    assert 'RuntimeError: no room today' in out.stderr
