"""F.square (``Square``), stock vs patched."""
import warnings

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import basic_math
from chainer.functions.math import square

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of,
    gradients, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'square': lambda: (F.square, [_v(3, 4, low=0.5, high=2)]),
    'float16': lambda: (F.square, [_v(5, low=0.5, high=2,
                                    dtype=numpy.float16)]),
    'float64': lambda: (F.square, [_v(5, low=0, high=9,
                                    dtype=numpy.float64)]),
    '0d': lambda: (F.square, [_v(low=0.5, high=2)]),
    'empty': lambda: (F.square, [_v(0, 3)]),
    'transposed': lambda: (F.square, [chainer.Variable(
        _v(3, 4, low=0.5, high=2).array.T)]),
    'array': lambda: (F.square, [_v(2, 3, low=0.5, high=2).array]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'square': lambda d: applied(F.square, _v(3, 4, low=0.5, high=2, dtype=d)),
    'strided': lambda d: applied(
        F.square, chainer.Variable(_v(2, 6, low=0.5, high=2,
                                    dtype=d).array[:, ::2])),
    'strided_view': lambda d: applied(F.square, strided_variable(2, 3,
                                                               dtype=d)),
    'empty': lambda d: applied(F.square, _v(0, 3, dtype=d)),
    '0d': lambda d: applied(F.square, _v(low=0.5, high=2, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['square']))


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
def test_overflow_nan_inf_and_zeros_same_as_stock(dtype):
    # A square past the dtype's range overflows, and so does its gradient
    # 2 * gy * x: both warn from stock's lines.
    big = float(numpy.finfo(dtype).max) / 2
    def fn():
        x = chainer.Variable(numpy.array(
            [0.0, -0.0, -1.0, numpy.nan, numpy.inf, -numpy.inf, 1e-45, big],
            dtype))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            y = F.square(x)
            y.grad = numpy.full_like(y.array, 4)
            y.backward()
        return y.array, x.grad, [(str(w.message), w.filename, w.lineno)
                                 for w in caught]
    stock, _ = check_same(fn)
    assert len(stock[2]) == 2


@pytest.mark.parametrize('errstate', [{'over': 'raise'},
                                      {'under': 'raise'},
                                      {'all': 'ignore'}])
def test_errstate_acts_as_stock(errstate):
    def fn():
        x = chainer.Variable(numpy.array([1e-30, 3e38, 4.0], numpy.float32))
        with warnings.catch_warnings(record=True) as caught, \
                numpy.errstate(**errstate):
            warnings.simplefilter('always')
            try:
                y = F.square(x)
                y.grad = numpy.ones_like(y.array)
                y.backward()
            except FloatingPointError as e:
                return 'raised: ' + str(e), [str(w.message) for w in caught]
        return y.array, x.grad, [str(w.message) for w in caught]
    check_same(fn)


@pytest.mark.parametrize('type_check', [True, False])
def test_int_input_same_error_as_stock(type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.square(numpy.arange(3)).array
    check_error_same(fn)


def test_forward_is_compiled(compiled_instead):
    x = _v(3, 4, low=0.5, high=2)
    compiled_instead(lambda: F.square(x), square.Square.forward)


def test_gradient_of_another_dtype_is_left_to_stock(patched_stats):
    def fn():
        x = _v(3, low=0.5, high=2)
        y = F.square(x)
        y._set_grad_var_without_check(chainer.Variable(numpy.ones(3)))
        return error_of(y.backward), x.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {'case left to stock: Square': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3, low=0.5, high=2)
    type_check_is_cached(square.Square, lambda: F.square(x))


@pytest.mark.parametrize('owner,name', [
    (square.Square, 'forward'),
    (square.Square, 'retain_inputs'),
    (basic_math.MulConstant, 'forward'),
    (basic_math.Mul, 'forward'),
    (basic_math.Mul, 'check_type_forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['square'], numpy.float32))
