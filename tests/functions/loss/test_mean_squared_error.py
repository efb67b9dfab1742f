"""F.mean_squared_error (``MeanSquaredError``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import broadcast
from chainer.functions.loss import mean_squared_error
from chainer.functions.math import basic_math

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of, gradients, grad_vars,
    special_variable as _specials, strided_variable, variable as _v,
    warned)
from chainer_fastpath.testing.cases import function_tests

mse = F.mean_squared_error

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'mse': lambda: (mse, [_v(3, 4), _v(3, 4)]),
    'float16': lambda: (mse, [_v(3, 4, dtype=numpy.float16),
                              _v(3, 4, dtype=numpy.float16)]),
    'float64_array': lambda: (lambda a, b: mse(a, b.array), [
        _v(5, dtype=numpy.float64), _v(5, dtype=numpy.float64)]),
    'strided': lambda: (mse, [strided_variable(2, 3), _v(2, 3)]),
    'transposed': lambda: (mse, [chainer.Variable(_v(3, 4).array.T),
                                 _v(4, 3)]),
    '0d': lambda: (mse, [_v(), _v()]),
    'specials': lambda: (mse, [_specials((5, 7)), _v(5, 7)]),
    'specials_float16': lambda: (mse, [
        _specials((9,), numpy.float16), _v(9, dtype=numpy.float16)]),
    'specials_strided': lambda: (mse, [
        _specials((11,), numpy.float64, take=True),
        _v(11, dtype=numpy.float64)]),
    # Squares overflow float16 in the dot's float accumulator's cast.
    'float16_large': lambda: (mse, [
        _v(3, 4, dtype=numpy.float16, low=200, high=300),
        _v(3, 4, dtype=numpy.float16, low=-300, high=-200)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'mse': lambda d: applied(mse, _v(3, 4, dtype=d), _v(3, 4, dtype=d)),
    'const_target': lambda d: applied(
        lambda a: mse(a, numpy.ones((3, 4), d)), _v(3, 4, dtype=d)),
    'const_input': lambda d: applied(
        lambda b: mse(numpy.ones((2, 3), d), b), _v(2, 3, dtype=d)),
    '0d': lambda d: applied(mse, _v(dtype=d), _v(dtype=d)),
    'strided': lambda d: applied(mse, strided_variable(2, 3, dtype=d),
                                 _v(2, 3, dtype=d)),
    'scaled': lambda d: applied(
        lambda a, b: mse(a, b) * 3.0, _v(7, dtype=d), _v(7, dtype=d)),
}


def _ones(dtype=numpy.float32, shape=(3,)):
    return chainer.Variable(numpy.ones(shape, dtype))


# name -> (a call whose type check passes, a call that stock rejects)
TYPE_CHECK_SEQUENCES = {
    'other_dtype': (lambda: mse(_ones(), _ones()),
                    lambda: mse(_ones(), _ones(numpy.float64))),
    'other_shape': (lambda: mse(_ones(), _ones()),
                    lambda: mse(_ones(), _ones(shape=(1,)))),
    'integer': (lambda: mse(_ones(), _ones()),
                lambda: mse(_ones(numpy.int32), _ones(numpy.int32))),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['mse', 'const_target', '0d'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(
        APPLY_CASES, mean_squared_error.MeanSquaredError.forward_cpu)))


@pytest.mark.parametrize('x0,x1', [
    (numpy.ones((3,), numpy.int32), numpy.zeros((3,), numpy.int32)),
    (numpy.ones((3,), numpy.float32), numpy.zeros((3,), numpy.float64)),
    (numpy.ones((2, 3), numpy.float32), numpy.zeros((3,), numpy.float32)),
    (numpy.ones((2, 3), numpy.float32), numpy.zeros((2,), numpy.float32)),
], ids=['int', 'mixed', 'broadcast', 'mismatch'])
def test_unchecked_input_is_stocks(x0, x1, patched_stats):
    # Without the type check, stock computes (or raises) in its own code.
    def fn():
        with chainer.using_config('type_check', False):
            return mse(x0, x1).array
    check_error_same(fn)
    if error_of(fn) is None:
        check_same(fn)


def test_empty_input_warns_and_fails_backward_as_stock():
    # 0 / 0 in the forward (NumPy's scalar division warns, from stock's
    # line), then 2. / 0 in the backward (Python's ZeroDivisionError).
    def fn():
        a, b = _v(0, 2), _v(0, 2)
        y = mse(a, b)
        return y.array, error_of(y.backward)
    assert check_same(lambda: warned(fn))[0][1]


@pytest.mark.parametrize('gy_shape,gy_dtype', [
    ((1,), numpy.float32), ((), numpy.float64)])
def test_unusual_gradient_is_left_to_stock(gy_shape, gy_dtype,
                                           patched_stats):
    def fn():
        a, b = _v(2, 3), _v(2, 3)
        y = mse(a, b)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.full(gy_shape, 2, gy_dtype)))
        return error_of(y.backward), grad_vars(a, b)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: MeanSquaredError': 1}


@pytest.mark.parametrize('owner,name', [
    (basic_math.Sub, 'forward'), (basic_math.Mul, 'forward'),
    (basic_math.MulConstant, 'forward'), (basic_math.Neg, 'forward'),
    (broadcast.BroadcastTo, 'forward'), (basic_math, '_preprocess_const')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    reasons = mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['mse'], numpy.float32))
    assert reasons == {'patched or mocked method': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x, y = _v(2, 3), _v(2, 3)
    type_check_is_cached(mean_squared_error.MeanSquaredError,
                         lambda: mse(x, y))
