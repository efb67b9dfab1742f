"""F.exp (``Exp``) and F.log (``Log``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import basic_math
from chainer.functions.math import exponential

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of,
    gradients, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'exp': lambda: (F.exp, [_v(3, 4)]),
    'log': lambda: (F.log, [_v(3, 4, low=0.5, high=2)]),
    'log_float16': lambda: (F.log, [_v(5, low=0.5, high=2,
                                       dtype=numpy.float16)]),
    'log_0d': lambda: (F.log, [_v(low=0.5, high=2)]),
    'log_transposed': lambda: (F.log, [chainer.Variable(
        _v(3, 4, low=0.5, high=2).array.T)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'exp': lambda d: applied(F.exp, _v(3, 4, dtype=d)),
    'strided': lambda d: applied(F.exp, strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(F.exp, _v(0, 3, dtype=d)),
    '0d': lambda d: applied(F.exp, _v(dtype=d)),
    'log': lambda d: applied(F.log, _v(3, 4, low=0.5, high=2, dtype=d)),
    'log_strided': lambda d: applied(
        F.log, chainer.Variable(_v(2, 6, low=0.5, high=2,
                                   dtype=d).array[:, ::2])),
    'log_empty': lambda d: applied(F.log, _v(0, 3, dtype=d)),
    'log_0d': lambda d: applied(F.log, _v(low=0.5, high=2, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['exp', 'log']))


def test_overflow_same_as_stock():
    def fn():
        with numpy.errstate(over='ignore'):
            return F.exp(_v(3, low=80, high=90)).array
    check_same(fn)


def test_forward_is_compiled(compiled_instead):
    x = _v(3, 4)
    compiled_instead(lambda: F.exp(x), exponential.Exp.forward_cpu)
    x = _v(3, 4, low=0.5, high=2)
    compiled_instead(lambda: F.log(x), exponential.Log.forward_cpu)


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32])
def test_log_of_zero_negative_nan_and_inf_same_as_stock(dtype):
    def fn():
        x = chainer.Variable(numpy.array(
            [0.0, -0.0, -1.0, numpy.nan, numpy.inf, -numpy.inf, 1e-45, 2.0],
            dtype))
        with numpy.errstate(all='ignore'):
            y = F.log(x)
            y.grad = numpy.ones_like(y.array)
            y.backward()
        return y.array, x.grad
    check_same(fn)


@pytest.mark.parametrize('type_check', [True, False])
def test_int_input_same_error_as_stock(type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.exp(numpy.arange(3)).array
    check_error_same(fn)


def test_gradient_of_another_dtype_is_left_to_stock(patched_stats):
    def fn():
        x = _v(3)
        y = F.exp(x)
        y._set_grad_var_without_check(chainer.Variable(numpy.ones(3)))
        return error_of(y.backward), x.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {'case left to stock: Exp': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(exponential.Exp, lambda: F.exp(x))


def test_passed_type_check_of_log_is_cached(type_check_is_cached):
    x = _v(2, 3, low=0.5, high=2)
    type_check_is_cached(exponential.Log, lambda: F.log(x))


@pytest.mark.parametrize('owner,name', [
    (exponential.Exp, 'forward_cpu'),
    (exponential.Exp, 'retain_outputs'),
    (basic_math.Mul, 'forward'),
    (basic_math.Mul, 'check_type_forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['exp'], numpy.float32))


@pytest.mark.parametrize('owner,name', [
    (exponential.Log, 'forward_cpu'),
    (exponential.Log, 'retain_inputs'),
    (basic_math.Div, 'forward'),
    (basic_math.Div, 'check_type_forward'),
])
def test_mocked_callee_of_log_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['log'], numpy.float32))
