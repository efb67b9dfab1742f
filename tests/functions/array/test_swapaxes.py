"""F.swapaxes (``Swapaxes``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import swapaxes

from chainer_fastpath.testing import (
    applied, gradients, check_error_same, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'swap': lambda: (lambda a: F.swapaxes(a, 2, 1), [_v(2, 3, 4)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'swap': lambda d: applied(lambda a: F.swapaxes(a, 2, 1),
                              _v(2, 3, 4, dtype=d)),
    'negative': lambda d: applied(lambda a: F.swapaxes(a, 0, -1),
                                  _v(2, 3, dtype=d)),
    'same_axis': lambda d: applied(lambda a: F.swapaxes(a, 1, 1),
                                   _v(2, 3, dtype=d)),
    'strided': lambda d: applied(lambda a: F.swapaxes(a, 0, 1),
                                 strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(lambda a: F.swapaxes(a, 0, 1),
                               _v(0, 3, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['swap']))


def test_forward_is_compiled(compiled_instead):
    x = _v(2, 3)
    compiled_instead(lambda: F.swapaxes(x, 0, 1), swapaxes.Swapaxes.forward)


@pytest.mark.parametrize('type_check', [True, False])
def test_bad_axis_same_error_as_stock(type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            F.swapaxes(_v(2, 3), 0, 2)
    assert check_error_same(fn) is not None


def test_bad_gradient_same_error_as_stock():
    def fn():
        x = _v(2, 3)
        y = F.swapaxes(x, 0, 1)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((5,), numpy.float32)))
        y.backward()
    assert check_error_same(fn) is not None


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(swapaxes.Swapaxes, lambda: F.swapaxes(x, 0, 1))


@pytest.mark.parametrize('owner,name', [
    (swapaxes.Swapaxes, 'forward'),
    (swapaxes.Swapaxes, 'check_type_forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['swap'], numpy.float32))
