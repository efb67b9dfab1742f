"""F.tanh (``Tanh``) and its gradient node, stock vs patched."""
import numpy
import pytest

import chainer.functions as F
from chainer.functions.activation import tanh

from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, check_gradients_same, check_outputs_same,
    gradients, variable as _v)

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


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
@pytest.mark.parametrize('case', sorted(APPLY_CASES))
def test_outputs_same_as_stock(case, backprop, type_check):
    check_outputs_same(APPLY_CASES[case], backprop, type_check)


@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
@pytest.mark.parametrize('case', sorted(BACKWARD_CASES))
@pytest.mark.parametrize('type_check', [True, False])
def test_gradients_same_as_stock(case, dtype, type_check):
    check_gradients_same(BACKWARD_CASES[case], dtype, type_check)


@pytest.mark.parametrize('case', ['tanh'])
def test_compiled_backward_is_used(case, compiled_backward_is_used):
    compiled_backward_is_used(BACKWARD_CASES[case])


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
