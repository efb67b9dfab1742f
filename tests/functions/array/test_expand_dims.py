"""F.expand_dims (``ExpandDims``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import expand_dims
from chainer.functions.array import reshape

from chainer_fastpath.testing import (
    applied, gradients, check_error_same, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'middle': lambda: (lambda a: F.expand_dims(a, 1), [_v(2, 3)]),
    'last': lambda: (lambda a: F.expand_dims(a, -1), [_v(2, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'middle': lambda d: applied(lambda a: F.expand_dims(a, 1),
                                _v(2, 3, dtype=d)),
    'last': lambda d: applied(lambda a: F.expand_dims(a, -1),
                              _v(2, 3, dtype=d)),
    'strided': lambda d: applied(lambda a: F.expand_dims(a, 0),
                                 strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(lambda a: F.expand_dims(a, 0),
                               _v(0, 3, dtype=d)),
    '0d': lambda d: applied(lambda a: F.expand_dims(a, 0), _v(dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['middle']))


def test_forward_is_compiled(compiled_instead):
    x = _v(2, 3)
    compiled_instead(lambda: F.expand_dims(x, 1),
                     expand_dims.ExpandDims.forward)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('axis', [3, -4])
def test_bad_axis_same_error_as_stock(axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            F.expand_dims(_v(2, 3), axis)
    assert check_error_same(fn) is not None


def test_bad_gradient_same_error_as_stock():
    def fn():
        x = _v(2, 3)
        y = F.expand_dims(x, 0)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((5,), numpy.float32)))
        y.backward()
    assert check_error_same(fn) is not None


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(expand_dims.ExpandDims,
                         lambda: F.expand_dims(x, 1))


@pytest.mark.parametrize('owner,name', [
    (expand_dims.ExpandDims, 'forward'),
    (reshape.Reshape, 'forward'),
    (reshape.Reshape, 'check_type_forward'),
    (F, 'reshape'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['middle'], numpy.float32))
