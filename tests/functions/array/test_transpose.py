"""F.transpose (``Transpose``), stock vs patched."""
import numpy
import pytest

import chainer.functions as F
from chainer.functions.array import transpose

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'transpose': lambda: (lambda a: F.transpose(a), [_v(2, 3, 4)]),
    'axes': lambda: (lambda a: F.transpose(a, (1, 0, 2)), [_v(2, 3, 4)]),
    'negative_axes': lambda: (lambda a: F.transpose(a, (-1, 0, -2)),
                              [_v(2, 3, 4)]),
    'float64_strided': lambda: (
        F.transpose, [strided_variable(3, 2, dtype=numpy.float64)]),
    '0d': lambda: (F.transpose, [_v()]),
    'empty': lambda: (F.transpose, [_v(0, 3)]),
    # To stock: axes NumPy takes otherwise than a tuple of ints.
    'list_axes': lambda: (lambda a: F.transpose(a, [1, 0]), [_v(2, 3)]),
    'numpy_axes': lambda: (
        lambda a: F.transpose(a, (numpy.int64(1), numpy.int64(0))),
        [_v(2, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'transpose': lambda d: applied(F.transpose, _v(2, 3, 4, dtype=d)),
    'axes': lambda d: applied(lambda a: F.transpose(a, (2, 0, 1)),
                              _v(2, 3, 4, dtype=d)),
    'negative_axes': lambda d: applied(
        lambda a: F.transpose(a, (-1, -3, 1)), _v(2, 3, 4, dtype=d)),
    '0d': lambda d: applied(lambda a: F.transpose(a, ()), _v(dtype=d)),
}

globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['axes', 'negative_axes'],
    compiled_forward=dict.fromkeys(
        ['transpose', 'axes', 'negative_axes', 'float64_strided', '0d',
         'empty'], transpose.Transpose.forward)))


@pytest.mark.parametrize('axes', [(0, 0), (0, 2), (0,), (0, 1, 2),
                                  (5, 1), (True, 0)])
def test_bad_axes_as_stock(axes):
    check_error_same(lambda: F.transpose(_v(2, 3), axes))


@pytest.mark.parametrize('axes', [(0, 0), (1, 2), None, (), (1, 0, 2),
                                  [1, 0], (2 ** 70, 0)])
def test_axes_changed_before_the_backward_as_stock(axes):
    def fn():
        x = _v(2, 3)
        y = F.transpose(x, (1, 0))
        y.creator.axes = axes
        y.grad = numpy.ones_like(y.array)
        return error_of(y.backward), x.grad
    check_same(fn)


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(transpose.Transpose, lambda: F.transpose(x))
