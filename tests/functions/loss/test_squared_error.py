"""F.squared_error / F.squared_difference (``SquaredError``), stock vs
patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.loss import squared_error
from chainer.functions.math import basic_math

from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, check_error_after_passing, check_gradients_same,
    check_outputs_same, check_same, grad_vars, gradients, variable as _v)

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'squared_error': lambda: (F.squared_error, [_v(3, 4), _v(3, 4)]),
    'squared_difference_array': lambda: (
        lambda a, b: F.squared_difference(a, b.array), [_v(3, 4), _v(3, 4)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'squared_error': lambda d: applied(F.squared_error, _v(3, 4, dtype=d),
                                       _v(3, 4, dtype=d)),
    'squared_error_const_target': lambda d: applied(
        lambda a: F.squared_difference(a, numpy.ones((3, 4), d)),
        _v(3, 4, dtype=d)),
    'squared_error_masked_sum': lambda d: applied(
        lambda a: F.sum(F.squared_error(a, numpy.zeros((2, 5), d))
                        * numpy.array([[1], [0]], d)), _v(2, 5, dtype=d)),
}


def _ones(dtype=numpy.float32):
    return chainer.Variable(numpy.ones((3,), dtype))


# name -> (a call whose type check passes, a call that stock rejects)
TYPE_CHECK_SEQUENCES = {
    'squared_error_other_dtype': (
        lambda: F.squared_error(_ones(), _ones()),
        lambda: F.squared_error(_ones(), _ones(numpy.float64))),
    'squared_error_integer': (
        lambda: F.squared_error(_ones(), _ones()),
        lambda: F.squared_error(_ones(numpy.int32), _ones(numpy.int32))),
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


@pytest.mark.parametrize('case', [
    'squared_error', 'squared_error_const_target',
    'squared_error_masked_sum'])
def test_compiled_backward_is_used(case, compiled_backward_is_used):
    compiled_backward_is_used(BACKWARD_CASES[case])


def test_squared_error_with_broadcast_gradient_left_to_stock(patched_stats):
    # A gradient of another shape than the inputs: stock's operators
    # broadcast it; the compiled case leaves it to stock.
    def fn():
        a, b = _v(1, 4), _v(1, 4)
        y = F.squared_error(a, b)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((3, 4), numpy.float32)))
        try:
            y.backward()
        except Exception as e:
            return type(e).__name__
        return grad_vars(a, b)
    check_same(fn)
    reasons = patched_stats(fn)['fallback']
    assert reasons == {'case left to stock: SquaredError': 1}


def test_compiled_forward_is_used(compiled_instead):
    # The stock forward is Python: while the compiled one stands for it, it
    # never runs.
    fn, xs = APPLY_CASES['squared_error']()
    compiled_instead(lambda: fn(*xs), squared_error.SquaredError.forward)


@pytest.mark.parametrize('cls', ['Sub', 'Mul', 'Neg', 'MulConstant'])
def test_mocked_method_of_an_inner_node_is_called(cls, mock_is_called):
    # The backward applies the arithmetic nodes: a spy on one of them is
    # called, stock and patched.
    reasons = mock_is_called(getattr(basic_math, cls), 'forward',
                             lambda: gradients(BACKWARD_CASES['squared_error'],
                                               numpy.float32))
    assert reasons == {'patched or mocked method': 1}


@pytest.mark.parametrize('name', sorted(TYPE_CHECK_SEQUENCES))
def test_error_after_a_cached_pass_is_stocks(name):
    assert check_error_after_passing(*TYPE_CHECK_SEQUENCES[name]) is not None


def test_passed_type_check_is_cached(type_check_is_cached):
    x, y = _v(2, 3), _v(2, 3)
    type_check_is_cached(squared_error.SquaredError,
                         lambda: F.squared_error(x, y))
