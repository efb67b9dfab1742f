"""F.tanh (``Tanh``) and its gradient node, stock vs patched."""
import numpy
import pytest

import chainer.functions as F
from chainer.functions.activation import tanh

from chainer_fastpath.testing import applied, gradients, variable as _v
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'tanh': lambda: (F.tanh, [_v(4, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'tanh': lambda d: applied(F.tanh, _v(3, 4, dtype=d)),
    'tanh_0d': lambda d: applied(F.tanh, _v(dtype=d)),
    # More elements than the loop takes a 0-d operand for: NumPy's call.
    'tanh_large': lambda d: applied(F.tanh, _v(5000, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['tanh', 'tanh_0d']))


@pytest.mark.parametrize('name', ['forward_cpu'])
def test_mocked_method_of_the_gradient_node_is_called(name, mock_is_called):
    # The backward applies TanhGrad: a spy on it is called, stock and
    # patched.
    reasons = mock_is_called(tanh.TanhGrad, name, lambda: gradients(
        BACKWARD_CASES['tanh'], numpy.float32))
    assert reasons == {'patched or mocked method': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(tanh.Tanh, lambda: F.tanh(x))
