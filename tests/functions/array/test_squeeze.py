"""F.squeeze (``Squeeze``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import squeeze
from chainer.functions.array import reshape

from chainer_fastpath.testing import (
    applied, gradients, check_error_same, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'all': lambda: (F.squeeze, [_v(2, 1, 3, 1)]),
    'axis': lambda: (lambda a: F.squeeze(a, -1), [_v(2, 1, 3, 1)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'all': lambda d: applied(F.squeeze, _v(2, 1, 3, 1, dtype=d)),
    'axis': lambda d: applied(lambda a: F.squeeze(a, -1),
                              _v(2, 1, 3, 1, dtype=d)),
    'axes': lambda d: applied(lambda a: F.squeeze(a, (3, 1)),
                              _v(2, 1, 3, 1, dtype=d)),
    'nothing': lambda d: applied(F.squeeze, _v(2, 3, dtype=d)),
    'strided': lambda d: applied(lambda a: F.squeeze(a, 1),
                                 strided_variable(2, 1, 3, dtype=d)),
    'empty': lambda d: applied(F.squeeze, _v(0, 1, dtype=d)),
    'to_0d': lambda d: applied(F.squeeze, _v(1, 1, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['all']))


def test_forward_is_compiled(compiled_instead):
    x = _v(2, 1)
    compiled_instead(lambda: F.squeeze(x), squeeze.Squeeze.forward)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('axis', [0, 2, -3])
def test_bad_axis_same_error_as_stock(axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            F.squeeze(_v(2, 1), axis)
    assert check_error_same(fn) is not None


def test_bad_gradient_same_error_as_stock():
    def fn():
        x = _v(2, 1)
        y = F.squeeze(x)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((5,), numpy.float32)))
        y.backward()
    assert check_error_same(fn) is not None


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 1)
    type_check_is_cached(squeeze.Squeeze, lambda: F.squeeze(x, 1))


@pytest.mark.parametrize('owner,name', [
    (squeeze.Squeeze, 'forward'),
    (reshape.Reshape, 'forward'),
    (reshape.Reshape, 'check_type_forward'),
    (squeeze, 'argone'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['all'], numpy.float32))
