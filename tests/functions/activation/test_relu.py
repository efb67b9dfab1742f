"""F.relu (``ReLU``) and its gradient node, stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.activation import relu

import chainer_fastpath
from chainer_fastpath.testing import (
    applied, gradients, special_variable as _specials, variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'relu': lambda: (F.relu, [_v(4, 3)]),
    'specials': lambda: (F.relu, [_specials((5, 7))]),
    'specials_float64': lambda: (F.relu, [_specials((9,), numpy.float64)]),
    'specials_float16': lambda: (F.relu, [_specials((9,), numpy.float16)]),
    'specials_0d': lambda: (F.relu, [_specials(())]),
    'specials_strided': lambda: (F.relu, [_specials((11,), take=True)]),
    'transposed': lambda: (F.relu, [chainer.Variable(_v(3, 4).array.T)]),
    'empty': lambda: (F.relu, [_v(0, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'relu': lambda d: applied(F.relu, _v(3, 4, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['relu']))


@pytest.mark.parametrize('name', ['forward_cpu'])
def test_mocked_method_of_the_gradient_node_is_called(name, mock_is_called):
    # The backward applies ReLUGrad2: a spy on it is called, stock and
    # patched.
    reasons = mock_is_called(relu.ReLUGrad2, name, lambda: gradients(
        BACKWARD_CASES['relu'], numpy.float32))
    assert reasons == {'patched or mocked method': 1}


def test_relu_forward_cpu_mocked_on_the_instance_is_called():
    chainer_fastpath.enable()
    node = relu.ReLU()
    calls = []

    def forward_cpu(inputs):
        calls.append(1)
        return inputs[0] * 3,

    node.forward_cpu = forward_cpu
    y, = node.apply((numpy.ones(2, numpy.float32),))
    assert calls == [1]
    numpy.testing.assert_array_equal(y.array, [3, 3])


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(relu.ReLU, lambda: F.relu(x))
