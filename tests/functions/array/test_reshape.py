"""F.reshape (``Reshape``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import reshape

from chainer_fastpath.testing import (
    applied, gradients, check_error_same, check_same, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'reshape': lambda: (lambda a: F.reshape(a, (3, 4)), [_v(2, 6)]),
    'unknown_dim': lambda: (lambda a: F.reshape(a, (-1, 2)), [_v(2, 6)]),
    'strided': lambda: (lambda a: F.reshape(a, (6,)),
                        [strided_variable(2, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'reshape': lambda d: applied(lambda a: F.reshape(a, (3, 4)),
                                 _v(2, 6, dtype=d)),
    'unknown_dim': lambda d: applied(lambda a: F.reshape(a, (2, -1)),
                                     _v(3, 4, dtype=d)),
    'strided': lambda d: applied(lambda a: F.reshape(a, (6,)),
                                 strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(lambda a: F.reshape(a, (3, 0)),
                               _v(0, 3, dtype=d)),
    'to_0d': lambda d: applied(lambda a: F.reshape(a, ()), _v(1, dtype=d)),
    'from_0d': lambda d: applied(lambda a: F.reshape(a, (1, 1)),
                                 _v(dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['reshape', 'empty']))


def test_forward_is_compiled(compiled_instead):
    x = _v(2, 6)
    compiled_instead(lambda: F.reshape(x, (3, 4)), reshape.Reshape.forward)


def test_int_input_without_type_check_same_as_stock():
    def fn():
        with chainer.using_config('type_check', False):
            x = chainer.Variable(numpy.arange(6).reshape(2, 3))
            return F.reshape(x, (3, 2)).array
    check_same(fn)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('shape', [(4, 2), (-1, 5)])
def test_bad_shape_same_error_as_stock(shape, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            F.reshape(_v(2, 3), shape)
    assert check_error_same(fn) is not None


def test_bad_gradient_same_error_as_stock():
    def fn():
        x = _v(2, 3)
        y = F.reshape(x, (6,))
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((5,), numpy.float32)))
        y.backward()
    assert check_error_same(fn) is not None


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(reshape.Reshape, lambda: F.reshape(x, (3, 2)))


@pytest.mark.parametrize('owner,name', [
    (reshape.Reshape, 'forward'),
    (reshape.Reshape, 'check_type_forward'),
    (reshape, 'reshape'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['reshape'], numpy.float32))
