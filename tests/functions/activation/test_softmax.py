"""F.softmax (``Softmax``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.activation import softmax

from chainer_fastpath.testing import (
    applied, gradients, check_error_same, check_same, error_of,
    strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'softmax': lambda: (F.softmax, [_v(3, 4)]),
    'axis': lambda: (lambda a: F.softmax(a, axis=-1), [_v(2, 3, 4)]),
    'large': lambda: (F.softmax, [_v(3, 4, low=50, high=90)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'softmax': lambda d: applied(F.softmax, _v(3, 4, dtype=d)),
    'axis': lambda d: applied(lambda a: F.softmax(a, axis=0),
                              _v(2, 3, 4, dtype=d)),
    'strided': lambda d: applied(F.softmax, strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(F.softmax, _v(0, 3, dtype=d)),
    '1d': lambda d: applied(lambda a: F.softmax(a, axis=0), _v(4, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['softmax', 'axis']))


def test_forward_is_compiled(compiled_instead):
    x = _v(3, 4)
    compiled_instead(lambda: F.softmax(x), softmax.Softmax.forward)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('x,axis', [
    (numpy.arange(6).reshape(2, 3), 1),
    (numpy.zeros((2, 3), numpy.float32), 2),
    (numpy.zeros((), numpy.float32), 0),
], ids=['int', 'axis', '0d'])
def test_bad_input_same_error_as_stock(x, axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.softmax(x, axis=axis).array
    check_error_same(fn)


def test_float64_gradient_same_as_stock():
    def fn():
        x = _v(2, 3)
        y = F.softmax(x)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.random.uniform(-1, 1, (2, 3))))
        return error_of(y.backward), x.grad
    check_same(fn)


def test_gradient_of_another_shape_is_left_to_stock(patched_stats):
    def fn():
        x = _v(2, 3)
        y = F.softmax(x)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((3,), numpy.float32)))
        y.backward()
        return x.grad
    check_error_same(fn)
    assert patched_stats(lambda: error_of(fn))['fallback'] == {
        'case left to stock: Softmax': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 4)
    type_check_is_cached(softmax.Softmax, lambda: F.softmax(x))


@pytest.mark.parametrize('owner,name', [
    (softmax.Softmax, 'forward'),
    (softmax.Softmax, 'retain_outputs'),
    (softmax._SoftmaxGrad, 'forward'),
    (softmax._SoftmaxGrad, '__init__'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['softmax'], numpy.float32))
