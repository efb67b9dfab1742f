"""F.softplus (``Softplus``) and its gradient node, stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.activation import softplus

from chainer_fastpath.testing import (
    applied, check_same, error_of, gradients, grad_vars,
    special_variable as _specials, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _softplus(beta):
    return lambda x: F.softplus(x, beta=beta)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'softplus': lambda: (F.softplus, [_v(3, 4, low=-5, high=5)]),
    'beta': lambda: (_softplus(2.5), [_v(3, 4)]),
    'numpy_beta': lambda: (_softplus(numpy.float64(1.7)), [_v(3, 2)]),
    'int_beta': lambda: (_softplus(3), [_v(3)]),
    # 1e5 is no float16: beta * x is float32, cast back at the end (x
    # negative: the gradient's exp(beta * x) does not overflow).
    'float16_large_beta': lambda: (_softplus(1e5), [
        _v(3, 4, dtype=numpy.float16, low=-1, high=-0.01)]),
    'float16_small_beta': lambda: (_softplus(0.05), [
        _v(3, 4, dtype=numpy.float16)]),
    'negative_beta': lambda: (_softplus(-0.5), [_v(5)]),
    'large': lambda: (F.softplus, [_v(6, low=-200, high=80)]),
    'specials': lambda: (F.softplus, [_specials((5, 7))]),
    'specials_float16': lambda: (F.softplus, [
        _specials((9,), numpy.float16)]),
    'specials_float64': lambda: (_softplus(0.3), [
        _specials((11,), numpy.float64, take=True)]),
    '0d': lambda: (F.softplus, [_v()]),
    '0d_float64': lambda: (_softplus(2.0), [_v(dtype=numpy.float64)]),
    'empty': lambda: (F.softplus, [_v(0, 3)]),
    'strided': lambda: (F.softplus, [strided_variable(2, 3)]),
    'transposed': lambda: (F.softplus, [chainer.Variable(_v(3, 4).array.T)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'softplus': lambda d: applied(F.softplus, _v(3, 4, dtype=d)),
    'beta': lambda d: applied(_softplus(1.5), _v(3, 4, dtype=d)),
    'large_beta': lambda d: applied(_softplus(1e5), _v(5, dtype=d, low=-1,
                                                       high=-0.01)),
    '0d': lambda d: applied(_softplus(0.5), _v(dtype=d)),
    'strided': lambda d: applied(F.softplus, strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(F.softplus, _v(0, 2, dtype=d)),
}

TYPE_CHECK_SEQUENCES = {
    'integer': (lambda: F.softplus(_v(3)),
                lambda: F.softplus(numpy.ones(3, numpy.int32))),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['softplus', 'beta', '0d'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(APPLY_CASES,
                                   softplus.Softplus.forward_cpu)))


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_gradient_of_another_float_dtype_same_as_stock(dtype, patched_stats):
    # SoftplusGrad asks only for float x and gy: the product is in their
    # common dtype, cast to x's.
    def fn():
        x = _v(2, 3, dtype=numpy.float16)
        y = F.softplus(x, beta=1.3)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.random.uniform(-1, 1, (2, 3)).astype(dtype)))
        return error_of(y.backward), grad_vars(x)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {}


def test_gradient_of_another_shape_is_left_to_stock(patched_stats):
    def fn():
        x = _v(2, 3)
        y = F.softplus(x)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((3,), numpy.float32)))
        return error_of(y.backward), grad_vars(x)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: Softplus': 1}


@pytest.mark.parametrize('attribute', ['beta', 'beta_inv'])
def test_beta_not_a_float_is_stocks(attribute, patched_stats):
    # Attributes set after __init__ (a NumPy scalar): stock's code.
    def fn():
        x = _v(2, 3)
        node = softplus.Softplus(2.0)
        setattr(node, attribute, numpy.float32(0.7))
        y, = node.apply((x,))
        y.grad = numpy.ones_like(y.array)
        y.backward()
        return y.array, x.grad
    check_same(fn)


def test_integer_input_is_stocks_error():
    def fn():
        with chainer.using_config('type_check', False):
            return F.softplus(numpy.arange(3)).array
    check_same(lambda: error_of(fn))


@pytest.mark.parametrize('owner,name', [
    (softplus.SoftplusGrad, 'forward_cpu'),
    (softplus.SoftplusGrad, '__init__'),
    (softplus.Softplus, 'retain_inputs')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['beta'], numpy.float32))


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 4)
    type_check_is_cached(softplus.Softplus, lambda: F.softplus(x))
