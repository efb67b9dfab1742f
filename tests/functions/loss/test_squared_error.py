"""F.squared_error / F.squared_difference (``SquaredError``), stock vs
patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.loss import squared_error
from chainer.functions.math import basic_math

from chainer_fastpath.testing import (
    applied, check_same, grad_vars, gradients, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'squared_error': lambda: (F.squared_error, [_v(3, 4), _v(3, 4)]),
    'squared_difference_array': lambda: (
        lambda a, b: F.squared_difference(a, b.array), [_v(3, 4), _v(3, 4)]),
    'squared_error_strided_float16': lambda: (F.squared_error, [
        strided_variable(2, 3, dtype=numpy.float16),
        _v(2, 3, dtype=numpy.float16)]),
    'squared_error_0d': lambda: (F.squared_error, [_v(), _v()]),
    'squared_error_empty': lambda: (F.squared_error, [_v(0, 2), _v(0, 2)]),
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


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['squared_error', 'squared_error_masked_sum'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(APPLY_CASES,
                                   squared_error.SquaredError.forward)))


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


@pytest.mark.parametrize('cls', ['Sub', 'Mul', 'Neg', 'MulConstant'])
def test_mocked_method_of_an_inner_node_is_called(cls, mock_is_called):
    # The backward applies the arithmetic nodes: a spy on one of them is
    # called, stock and patched.
    reasons = mock_is_called(getattr(basic_math, cls), 'forward',
                             lambda: gradients(BACKWARD_CASES['squared_error'],
                                               numpy.float32))
    assert reasons == {'patched or mocked method': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x, y = _v(2, 3), _v(2, 3)
    type_check_is_cached(squared_error.SquaredError,
                         lambda: F.squared_error(x, y))
