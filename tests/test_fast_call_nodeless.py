"""Applies without backprop that make no node
(``_runtime._apply_node.apply_new``), stock vs patched: the outputs as
stock leaves them, and stock's code wherever the node could be seen or the
class is not as registered."""
import subprocess
import sys
from unittest import mock

import numpy
import pytest

import chainer
from chainer import function_hook
from chainer import function_node
import chainer.functions as F
from chainer.functions.activation import relu
from chainer.functions.activation import sigmoid
from chainer.functions.connection import linear
from chainer.functions.math import basic_math

from chainer_fastpath.testing import (
    assert_same, check_error_after_passing, check_error_same, run_both,
    variable as _v)

from tests.test_fast_call import _describe


# name -> (f, input shapes): every public caller that applies a new node
# of a nodeless class.
OPS = {
    'relu': (F.relu, [(2, 3)]),
    'sigmoid': (F.sigmoid, [(2, 3)]),
    'tanh': (F.tanh, [(2, 3)]),
    'add': (F.add, [(2, 3), (2, 3)]),
    'operator_add': (lambda a, b: a + b, [(2, 3), (2, 3)]),
    'operator_sub': (lambda a, b: a - b, [(2, 3), (2, 3)]),
    'operator_mul': (lambda a, b: a * b, [(2, 3), (2, 3)]),
    'add_array': (lambda a, b: a + b.array, [(2, 3), (2, 3)]),
    'rsub_array': (lambda a, b: b.array - a, [(2, 3), (2, 3)]),
    'mul_broadcast_array': (lambda a, b: a * b.array[0], [(2, 3), (2, 3)]),
    'linear': (F.linear, [(2, 3), (4, 3), (4,)]),
    'linear_nobias': (F.linear, [(2, 3), (4, 3)]),
    'linear_3d': (F.linear, [(2, 3, 2), (4, 6)]),
    'linear_batch_axes': (lambda x, W: F.linear(x, W, n_batch_axes=2),
                          [(2, 3, 2), (4, 2)]),
    'linear_link_input': (lambda x, W, b: F.linear(x.array, W, b),
                          [(2, 3), (4, 3), (4,)]),
}


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('requires_grad', [True, False])
@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
@pytest.mark.parametrize('name', sorted(OPS))
def test_outputs_as_stock_leaves_them(name, dtype, requires_grad,
                                      type_check):
    f, shapes = OPS[name]

    def build():
        xs = [_v(*shape, dtype=dtype, requires_grad=requires_grad)
              for shape in shapes]
        with chainer.no_backprop_mode(), \
                chainer.using_config('type_check', type_check):
            # The first call passes the type check, the next ones know it.
            return [_describe(f(*xs), {}) for _ in range(3)]

    stock, patched = run_both(build)
    assert stock == patched


def test_raw_array_input():
    def build():
        x = numpy.random.randn(3, 2).astype(numpy.float32)
        with chainer.no_backprop_mode():
            return [_describe(F.relu(x), {}) for _ in range(2)]

    stock, patched = run_both(build)
    assert stock == patched


# In a fresh process: a class that was once given a ``__new__`` of its own
# (another test's mock) may keep a constructor slot that is not object's,
# and its nodes are then made by calling it.
_COUNT_NODELESS = """
import chainer_fastpath
chainer_fastpath.enable()
import numpy, chainer, chainer.functions as F
x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
def count():
    return chainer_fastpath.stats()['FunctionNode.apply, no node']['fast']
with chainer.no_backprop_mode():
    for _ in range(3):
        F.relu(x)
        x * x
unrecorded = count()
F.relu(x)
x * x
print(unrecorded, count())
"""


def test_no_node_is_made_only_without_backprop():
    out = subprocess.run([sys.executable, '-c', _COUNT_NODELESS],
                         check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    # The first relu and mul check their types with a node; the next two
    # each know that the check passed. With backprop, nodes are made.
    assert out.split() == ['4', '4']


def test_type_error_after_passing():
    ok = _v(2, 3)
    bad = chainer.Variable(numpy.arange(6, dtype=numpy.int32).reshape(2, 3))
    with chainer.no_backprop_mode():
        assert check_error_after_passing(
            lambda: F.relu(ok), lambda: F.relu(bad)) == 'InvalidType'
        assert check_error_after_passing(
            lambda: ok * ok, lambda: ok * _v(3, 2)) == 'InvalidType'


def test_floating_point_error_as_stock():
    def run():
        x = chainer.Variable(numpy.full(3, 3e38, numpy.float32))
        with chainer.no_backprop_mode(), numpy.errstate(over='raise'):
            x * x   # passes the type check with a node first
            return x * x

    check_error_same(run)


class _Log(function_hook.FunctionHook):
    def __init__(self):
        self.calls = []

    def forward_preprocess(self, function, in_data):
        self.calls.append(('pre', function.label, type(function).__name__))

    def forward_postprocess(self, function, in_data):
        self.calls.append(('post', function.label))


def test_hooks_see_the_nodes():
    def run():
        x = _v(2, 3)
        with chainer.no_backprop_mode():
            F.relu(x)
            hook = _Log()
            with hook:
                y = F.relu(x) + x
        return hook.calls, _describe(y, {})

    stock, patched = run_both(run)
    assert stock == patched
    assert len(stock[0]) == 4


@pytest.mark.parametrize('owner, name', [
    (relu.ReLU, 'forward'),
    (relu.ReLU, 'forward_cpu'),
    (relu.ReLU, 'check_type_forward'),
    (relu.ReLU, 'check_layout_forward'),
    (relu.ReLU, 'retain_outputs'),
    (sigmoid.Sigmoid, 'forward_cpu'),
    (basic_math.Mul, 'forward'),
    (basic_math.Mul, 'retain_inputs'),
    (linear.LinearFunction, 'forward'),
    (linear.LinearFunction, 'check_type_forward'),
    (linear.LinearFunction, 'retain_inputs'),
])
def test_methods_replaced_on_the_class_are_called(monkeypatch, owner, name):
    call = {relu.ReLU: F.relu, sigmoid.Sigmoid: F.sigmoid,
            basic_math.Mul: lambda a: a * a,
            linear.LinearFunction: lambda a: F.linear(a, a)}[owner]
    original = getattr(owner, name)
    calls = []

    def replacement(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    def run():
        x = _v(2, 3)
        with chainer.no_backprop_mode():
            call(x)
            del calls[:]
            y = call(x)
        return list(calls), _describe(y, {})

    monkeypatch.setattr(owner, name, replacement)
    stock, patched = run_both(run)
    assert stock == patched
    assert stock[0] == [name]


@pytest.mark.parametrize('method', ['__init__', '__del__'])
def test_init_or_del_given_to_the_class_runs(monkeypatch, method):
    called = []

    def stand_in(self):
        called.append(type(self).__name__)

    monkeypatch.setattr(relu.ReLU, method, stand_in, raising=False)

    def run():
        del called[:]
        with chainer.no_backprop_mode():
            for _ in range(3):
                F.relu(_v(2))
        return list(called)

    assert run_both(run) == (['ReLU'] * 3,) * 2


@pytest.mark.parametrize('name, value', [
    ('_output_layouts', (None,)),
    ('is_elementwise', False),
    ('_local_function_hooks', {}),
])
def test_class_state_changed_is_read_as_stock(name, value):
    own = name in relu.ReLU.__dict__
    original = getattr(relu.ReLU, name)

    def run():
        x = _v(2, 3)
        with chainer.no_backprop_mode():
            F.relu(x)
            setattr(relu.ReLU, name, value)
            try:
                return _describe(F.relu(x), {})
            except Exception as e:
                return type(e).__name__
            finally:
                if own:
                    setattr(relu.ReLU, name, original)
                else:
                    delattr(relu.ReLU, name)

    stock, patched = run_both(run)
    assert stock == patched


def test_a_subclass_put_in_the_module_is_applied(monkeypatch):
    class Counted(relu.ReLU):
        applied = 0

        def forward(self, inputs):
            Counted.applied += 1
            return super().forward(inputs)

    monkeypatch.setattr(relu, 'ReLU', Counted)

    def run():
        Counted.applied = 0
        with chainer.no_backprop_mode():
            for _ in range(3):
                y = F.relu(_v(2))
        return Counted.applied, _describe(y, {})

    stock, patched = run_both(run)
    assert stock == patched
    assert stock[0] == 3


def test_debug_mode_applies_nodes():
    def run():
        x = chainer.Variable(numpy.array([numpy.nan], numpy.float32))
        with chainer.no_backprop_mode(), chainer.using_config('debug', True):
            F.relu(_v(2))
            try:
                F.relu(x)
            except RuntimeError as e:
                return str(e)

    stock, patched = run_both(run)
    assert stock == patched
    assert 'NaN' in stock


@pytest.mark.parametrize('owner', [function_node.FunctionNode, relu.ReLU,
                                   basic_math.Add])
@pytest.mark.parametrize('changes_output', [False, True])
def test_apply_replaced_after_enable_is_called(owner, changes_output):
    # A user's apply (here through mock.patch.object) installed while the
    # patch is on: stock calls it for every node it applies.
    def run():
        applied = owner.apply   # the patch's while it is on
        calls = []

        def replacement(self, inputs):
            calls.append(type(self).__name__)
            outputs = applied(self, inputs)
            if changes_output:
                outputs = tuple(chainer.Variable(y.array * 2)
                                for y in outputs)
            return outputs

        x = _v(2, 3)
        with mock.patch.object(owner, 'apply', replacement), \
                chainer.no_backprop_mode():
            ys = [F.relu(x), F.add(x, x), x + x, F.relu(x)]
        return calls, [y.array for y in ys]

    stock, patched = run_both(run)
    assert_same(stock, patched)
    assert len(stock[0]) == {relu.ReLU: 2, basic_math.Add: 2}.get(owner, 4)


def test_linear_makes_no_node_once_its_check_passed():
    import chainer_fastpath
    import chainer.links as L
    with chainer_fastpath.enabled():
        link = L.Linear(4, 3)
        x = numpy.ones((2, 4), numpy.float32)
        with chainer.no_backprop_mode():
            # The first call of each checks its types with a node, unless
            # an earlier test checked the same ones.
            link(x)
            F.linear(x, link.W, n_batch_axes=1)
            chainer_fastpath.reset_stats()
            for _ in range(2):
                link(x)
                F.linear(x, link.W, n_batch_axes=1)
        assert chainer_fastpath.stats()['FunctionNode.apply, no node'] == {
            'fast': 4, 'fallback': {}}
