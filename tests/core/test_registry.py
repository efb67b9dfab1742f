"""``_registry.pyx``: what the compiled backwards stand for is checked once
per backward pass, the attributes by their owners' versions; a rebinding
made after a pass found them stock's is seen by the next pass, and its
undoing too."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.activation.relu import ReLU
from chainer.functions.math.exponential import Exp
from chainer.functions.math.sum import Sum

import chainer_fastpath
from chainer_fastpath._core import _registry


def _backward_calls(cls):
    return _registry.registered()[cls].backward_calls


def _backward(fn):
    x = chainer.Variable(numpy.arange(6, dtype=numpy.float32).reshape(2, 3))
    y = fn(x)
    y.grad = numpy.ones_like(y.array)
    y.backward()
    return x.grad


# (function, its node's class, an owner and name its stock backward calls)
CASES = [
    (F.sum, Sum, chainer.functions, 'broadcast_to'),     # a module's
    (F.exp, Exp, chainer.Variable, '__mul__'),           # a class's
]


@pytest.mark.parametrize('fn, cls, owner, name', CASES)
def test_callee_rebound_after_a_stock_pass_is_called(fn, cls, owner, name,
                                                     monkeypatch):
    chainer_fastpath.enable()
    expected = _backward(fn)
    compiled = _backward_calls(cls)
    _backward(fn)                   # the owners' versions are memoized
    assert _backward_calls(cls) == compiled + 1
    original = getattr(owner, name)
    calls = []

    def spy(*args):
        calls.append(args)
        return original(*args)

    with monkeypatch.context() as m:
        m.setattr(owner, name, spy)
        grad = _backward(fn)
    assert len(calls) == 1
    assert _backward_calls(cls) == compiled + 1
    numpy.testing.assert_array_equal(grad, expected)
    _backward(fn)                   # restored: compiled again
    assert _backward_calls(cls) == compiled + 2


def test_unrelated_rebinding_in_an_owner_keeps_the_compiled_backward():
    chainer_fastpath.enable()
    _backward(F.relu)
    compiled = _backward_calls(ReLU)
    with mock.patch.object(chainer.functions, '_unrelated_name', 1,
                           create=True):
        _backward(F.relu)
        _backward(F.relu)
    assert _backward_calls(ReLU) == compiled + 2
