"""F.where (``Where``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import where

from chainer_fastpath.testing import (
    applied, check_error_same, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _condition(*shape):
    return numpy.random.uniform(size=shape) > 0.5


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'where': lambda: (lambda x, y: F.where(_condition(3, 4), x, y),
                      [_v(3, 4), _v(3, 4)]),
    'variable_condition': lambda: (
        lambda x, y: F.where(chainer.Variable(_condition(3)), x, y),
        [_v(3), _v(3)]),
    'broadcast': lambda: (lambda x, y: F.where(_condition(2, 1), x, y),
                          [_v(2, 3), _v(3)]),
    'float16': lambda: (lambda x, y: F.where(_condition(5), x, y),
                        [_v(5, dtype=numpy.float16),
                         _v(5, dtype=numpy.float16)]),
    '0d': lambda: (lambda x, y: F.where(numpy.array(True), x, y),
                   [_v(), _v()]),
    'empty': lambda: (lambda x, y: F.where(_condition(0, 2), x, y),
                      [_v(0, 2), _v(0, 2)]),
    'array_inputs': lambda: (
        lambda x, y: F.where(_condition(4), x.array, y.array),
        [_v(4), _v(4)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'where': lambda d: applied(lambda x, y: F.where(_condition(3, 4), x, y),
                               _v(3, 4, dtype=d), _v(3, 4, dtype=d)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['where'],
    compiled_backward=False,
    compiled_forward=dict.fromkeys(
        ['where', 'broadcast', 'float16', '0d'], where.Where.forward)))


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('condition', [
    lambda: numpy.ones(3, numpy.int32), lambda: numpy.ones(2, bool),
    lambda: True, lambda: [True, False, True]])
def test_odd_condition_same_as_stock(condition, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.where(condition(), _v(3), _v(3)).array
    check_error_same(fn)


def test_mixed_dtypes_same_error_as_stock():
    check_error_same(lambda: F.where(_condition(3), _v(3),
                                     _v(3, dtype=numpy.float64)).array)
