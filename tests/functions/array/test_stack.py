"""F.stack (``Stack``), stock vs patched: compiled forward and backward."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import separate
from chainer.functions.array import stack

from chainer_fastpath.testing import (
    applied, check_error_same, gradients, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _stacked(axis, *shape, n=3, dtype=numpy.float32, make=_v):
    return lambda: (lambda *xs: F.stack(xs, axis),
                    [make(*shape, dtype=dtype) for _ in range(n)])


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'axis0': _stacked(0, 2, 3),
    'axis1': _stacked(1, 2, 3),
    'last_axis': _stacked(2, 2, 3),
    'negative_axis': _stacked(-1, 2, 3),
    'most_negative_axis': _stacked(-3, 2, 3),
    'one_input': _stacked(0, 2, 3, n=1),
    '0d_inputs': _stacked(0, n=4),
    'empty_inputs': _stacked(1, 0, 3),
    'strided': _stacked(1, 2, 3, make=strided_variable),
    'arrays': lambda: (lambda *xs: F.stack(xs, 1),
                       [_v(2, 3).array, _v(2, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'axis0': lambda d: applied(lambda a, b: F.stack((a, b), 0),
                               _v(2, 3, dtype=d), _v(2, 3, dtype=d)),
    'negative_axis': lambda d: applied(lambda a, b: F.stack((a, b), -1),
                                       _v(2, 3, dtype=d), _v(2, 3, dtype=d)),
    '0d': lambda d: applied(lambda a, b: F.stack((a, b)),
                            _v(dtype=d), _v(dtype=d)),
    'strided': lambda d: applied(lambda a, b: F.stack((a, b), 1),
                                 strided_variable(2, 3, dtype=d),
                                 _v(2, 3, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['axis0', 'negative_axis']))


def test_forward_is_compiled(compiled_instead):
    xs = [_v(2, 3), _v(2, 3)]
    compiled_instead(lambda: F.stack(xs, 1), stack.Stack.forward)


def test_passed_type_check_is_cached(type_check_is_cached):
    xs = [_v(2, 3), _v(2, 3)]
    type_check_is_cached(stack.Stack, lambda: F.stack(xs, 1))


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('xs,axis', [
    ([numpy.zeros((2, 3), numpy.float32)] * 2, 3),
    ([numpy.zeros((2, 3), numpy.float32)] * 2, -4),
    ([numpy.zeros((2, 3), numpy.float32),
      numpy.zeros((3, 2), numpy.float32)], 0),
    ([numpy.zeros((2, 3), numpy.float32),
      numpy.zeros((2, 3), numpy.float64)], 0),
    ([], 0),
], ids=['axis', 'negative_axis', 'shapes', 'dtypes', 'no_inputs'])
def test_bad_input_same_error_as_stock(xs, axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return stack.Stack(axis).apply(xs)[0].array
    check_error_same(fn)


def test_gradient_of_zero_length_axis_left_to_stock():
    # Separating along an empty axis is numpy.split's error.
    def fn():
        xs = [_v(0, 3), _v(0, 3)]
        y = F.stack(xs, 1)
        y.grad = numpy.ones((0, 2, 3), numpy.float32)
        y.backward()
        return [x.grad for x in xs]
    check_error_same(fn)


@pytest.mark.parametrize('owner,name', [
    (numpy, 'stack'),
    (stack.Stack, 'forward'),
    (separate.Separate, 'forward'),
    (separate.Separate, 'check_type_forward'),
    (numpy, 'split'),
    (numpy, 'squeeze'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['axis0'], numpy.float32))
