"""F.sqrt (``Sqrt``), stock vs patched."""
import warnings

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import basic_math
from chainer.functions.math import sqrt

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of,
    gradients, variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'sqrt': lambda: (F.sqrt, [_v(3, 4, low=0.5, high=2)]),
    'float16': lambda: (F.sqrt, [_v(5, low=0.5, high=2,
                                    dtype=numpy.float16)]),
    'float64': lambda: (F.sqrt, [_v(5, low=0, high=9,
                                    dtype=numpy.float64)]),
    '0d': lambda: (F.sqrt, [_v(low=0.5, high=2)]),
    'empty': lambda: (F.sqrt, [_v(0, 3)]),
    'transposed': lambda: (F.sqrt, [chainer.Variable(
        _v(3, 4, low=0.5, high=2).array.T)]),
    'array': lambda: (F.sqrt, [_v(2, 3, low=0.5, high=2).array]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'sqrt': lambda d: applied(F.sqrt, _v(3, 4, low=0.5, high=2, dtype=d)),
    'strided': lambda d: applied(
        F.sqrt, chainer.Variable(_v(2, 6, low=0.5, high=2,
                                    dtype=d).array[:, ::2])),
    'empty': lambda d: applied(F.sqrt, _v(0, 3, dtype=d)),
    '0d': lambda d: applied(F.sqrt, _v(low=0.5, high=2, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['sqrt']))


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
def test_zero_negative_nan_and_inf_same_as_stock(dtype):
    # The root of a negative number is NaN with an invalid flag, and the
    # gradient at 0 a division by zero: both warn from stock's lines.
    def fn():
        x = chainer.Variable(numpy.array(
            [0.0, -0.0, -1.0, numpy.nan, numpy.inf, -numpy.inf, 1e-45, 2.0],
            dtype))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            y = F.sqrt(x)
            y.grad = numpy.ones_like(y.array)
            y.backward()
        return y.array, x.grad, [(str(w.message), w.filename, w.lineno)
                                 for w in caught]
    stock, _ = check_same(fn)
    assert len(stock[2]) == 2


@pytest.mark.parametrize('errstate', [{'invalid': 'raise'},
                                      {'divide': 'raise'},
                                      {'all': 'ignore'}])
def test_errstate_acts_as_stock(errstate):
    def fn():
        x = chainer.Variable(numpy.array([0.0, -1.0, 4.0], numpy.float32))
        with warnings.catch_warnings(record=True) as caught, \
                numpy.errstate(**errstate):
            warnings.simplefilter('always')
            try:
                y = F.sqrt(x)
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
            return F.sqrt(numpy.arange(3)).array
    check_error_same(fn)


def test_forward_is_compiled(compiled_instead):
    x = _v(3, 4, low=0.5, high=2)
    compiled_instead(lambda: F.sqrt(x), sqrt.Sqrt.forward)


def test_gradient_of_another_dtype_is_left_to_stock(patched_stats):
    def fn():
        x = _v(3, low=0.5, high=2)
        y = F.sqrt(x)
        y._set_grad_var_without_check(chainer.Variable(numpy.ones(3)))
        return error_of(y.backward), x.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {'case left to stock: Sqrt': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3, low=0.5, high=2)
    type_check_is_cached(sqrt.Sqrt, lambda: F.sqrt(x))


@pytest.mark.parametrize('owner,name', [
    (sqrt.Sqrt, 'forward'),
    (sqrt.Sqrt, 'retain_outputs'),
    (basic_math.MulConstant, 'forward'),
    (basic_math.Div, 'forward'),
    (basic_math.Div, 'check_type_forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['sqrt'], numpy.float32))
