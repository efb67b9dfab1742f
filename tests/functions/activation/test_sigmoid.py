"""F.sigmoid (``Sigmoid``) and its gradient node, stock vs patched."""
import numpy
import pytest

import chainer.functions as F
from chainer.functions.activation import sigmoid

from chainer_fastpath.testing import applied, gradients, variable as _v
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'sigmoid': lambda: (F.sigmoid, [_v(4, 3)]),
    'sigmoid_0d': lambda: (F.sigmoid, [_v()]),
    'sigmoid_one': lambda: (F.sigmoid, [_v(1)]),
    # More elements than the loop takes a 0-d operand for: NumPy's call.
    'sigmoid_large': lambda: (F.sigmoid, [_v(5000)]),
    'sigmoid_float64': lambda: (F.sigmoid, [_v(4, 3, dtype=numpy.float64)]),
    'sigmoid_float16': lambda: (F.sigmoid, [_v(4, 3, dtype=numpy.float16)]),
    'sigmoid_extremes': lambda: (F.sigmoid, [numpy.array(
        [numpy.nan, -numpy.inf, numpy.inf, 0.0, -0.0, 1e-45, 88.7, -104.0],
        numpy.float32)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'sigmoid': lambda d: applied(F.sigmoid, _v(3, 4, dtype=d)),
    'sigmoid_0d': lambda d: applied(F.sigmoid, _v(dtype=d)),
    # More elements than the loop takes a 0-d operand for: NumPy's call.
    'sigmoid_large': lambda d: applied(F.sigmoid, _v(5000, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['sigmoid', 'sigmoid_0d']))


@pytest.mark.parametrize('name', ['check_type_forward', 'forward_cpu'])
def test_mocked_method_of_the_gradient_node_is_called(name, mock_is_called):
    # The backward applies SigmoidGrad: a spy on it is called, stock and
    # patched.
    reasons = mock_is_called(sigmoid.SigmoidGrad, name, lambda: gradients(
        BACKWARD_CASES['sigmoid'], numpy.float32))
    assert reasons == {'patched or mocked method': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(sigmoid.Sigmoid, lambda: F.sigmoid(x))
