"""F.maximum (``Maximum``) and its gradient node, stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import maximum

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of, gradients, grad_vars,
    special_variable as _specials, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _ties(d):
    # Equal elements (ties: x1's gradient), NaNs on either side (x2's),
    # infinities and signed zeros.
    nan, inf = numpy.nan, numpy.inf
    x1 = numpy.array([1, 2, nan, 0.0, -0.0, inf, -inf, nan, 3], d)
    x2 = numpy.array([1, 1, 1, -0.0, 0.0, inf, 0, nan, nan], d)
    return applied(F.maximum, chainer.Variable(x1), chainer.Variable(x2))


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'maximum': lambda: (F.maximum, [_v(3, 4), _v(3, 4)]),
    'float16': lambda: (F.maximum, [_v(3, 4, dtype=numpy.float16),
                                    _v(3, 4, dtype=numpy.float16)]),
    'float64_array': lambda: (lambda a, b: F.maximum(a, b.array), [
        _v(5, dtype=numpy.float64), _v(5, dtype=numpy.float64)]),
    'broadcast': lambda: (F.maximum, [_v(3, 1), _v(4)]),
    'specials': lambda: (F.maximum, [_specials((5, 7)),
                                     _specials((5, 7), take=True)]),
    'specials_float16': lambda: (F.maximum, [
        _specials((9,), numpy.float16), _v(9, dtype=numpy.float16)]),
    '0d': lambda: (F.maximum, [_v(), _v()]),
    'empty': lambda: (F.maximum, [_v(0, 3), _v(0, 3)]),
    'strided': lambda: (F.maximum, [strided_variable(2, 3), _v(2, 3)]),
    'transposed': lambda: (F.maximum, [chainer.Variable(_v(3, 4).array.T),
                                       _v(4, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'maximum': lambda d: applied(F.maximum, _v(3, 4, dtype=d),
                                 _v(3, 4, dtype=d)),
    'ties': _ties,
    'broadcast': lambda d: applied(F.maximum, _v(3, 1, dtype=d),
                                   _v(2, 1, 4, dtype=d)),
    'const': lambda d: applied(lambda a: F.maximum(a, numpy.zeros(4, d)),
                               _v(4, dtype=d)),
    '0d': lambda d: applied(F.maximum, _v(dtype=d), _v(dtype=d)),
    'strided': lambda d: applied(F.maximum, strided_variable(2, 3, dtype=d),
                                 _v(2, 3, dtype=d)),
    'empty': lambda d: applied(F.maximum, _v(0, 2, dtype=d),
                               _v(0, 2, dtype=d)),
}


def _ones(dtype=numpy.float32, shape=(3,)):
    return chainer.Variable(numpy.ones(shape, dtype))


TYPE_CHECK_SEQUENCES = {
    'other_dtype': (lambda: F.maximum(_ones(), _ones()),
                    lambda: F.maximum(_ones(), _ones(numpy.float64))),
    'other_shape': (lambda: F.maximum(_ones(), _ones()),
                    lambda: F.maximum(_ones(), _ones(shape=(2,)))),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['maximum', 'broadcast'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(APPLY_CASES,
                                   maximum.Maximum.forward_cpu)))


@pytest.mark.parametrize('x1,x2', [
    (numpy.ones((3,), numpy.int32), numpy.zeros((3,), numpy.int32)),
    (numpy.ones((3,), numpy.float32), numpy.zeros((3,), numpy.float64)),
    (numpy.ones((2, 3), numpy.float32), numpy.zeros((2,), numpy.float32)),
], ids=['int', 'mixed', 'mismatch'])
def test_unchecked_input_is_stocks(x1, x2):
    def fn():
        with chainer.using_config('type_check', False):
            return F.maximum(x1, x2).array
    check_error_same(fn)
    if error_of(fn) is None:
        check_same(fn)


@pytest.mark.parametrize('gy_shape,gy_dtype', [
    ((3,), numpy.float32), ((2, 3), numpy.float64)])
def test_unusual_gradient_is_left_to_stock(gy_shape, gy_dtype,
                                           patched_stats):
    def fn():
        a, b = _v(2, 3), _v(2, 3)
        y = F.maximum(a, b)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones(gy_shape, gy_dtype)))
        return error_of(y.backward), grad_vars(a, b)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: Maximum': 1}


@pytest.mark.parametrize('owner,name', [
    (maximum.MaximumGrad, 'forward_cpu'), (maximum.MaximumGrad, '__init__'),
    (maximum.Maximum, 'retain_inputs'), (chainer.utils, 'sum_to')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['broadcast'], numpy.float32))


def test_passed_type_check_is_cached(type_check_is_cached):
    x, y = _v(3, 4), _v(3, 4)
    type_check_is_cached(maximum.Maximum, lambda: F.maximum(x, y))
