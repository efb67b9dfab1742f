"""F.mean (``Mean``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import broadcast
from chainer.functions.array import reshape
from chainer.functions.math import average
from chainer.functions.math import basic_math

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of,
    gradients, strided_variable, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'mean': lambda: (F.mean, [_v(3, 4)]),
    'axis': lambda: (lambda a: F.mean(a, axis=1), [_v(2, 3, 4)]),
    'keepdims': lambda: (lambda a: F.mean(a, axis=(0, 2), keepdims=True),
                         [_v(2, 3, 4)]),
    # Over an axis that rows follow: whole rows summed, then divided.
    'middle': lambda: (lambda a: F.mean(a, axis=-2), [_v(4, 7, 3)]),
    'middle_keepdims': lambda: (
        lambda a: F.mean(a, axis=0, keepdims=True),
        [_v(3, 5, dtype=numpy.float64)]),
    'middle_long_rows': lambda: (lambda a: F.mean(a, axis=0),
                                 [_v(3, 20011)]),
    'middle_float16': lambda: (lambda a: F.mean(a, axis=0),
                               [_v(3, 5, dtype=numpy.float16)]),
    # Over every item: NumPy's pairwise sum, then divided by the count.
    'all_long': lambda: (F.mean, [_v(1031, dtype=numpy.float64)]),
    'all_keepdims': lambda: (lambda a: F.mean(a, keepdims=True),
                             [_v(5, 67)]),
    'all_strided': lambda: (F.mean, [strided_variable(6, 5)]),
    'all_float16': lambda: (F.mean, [_v(3, 5, dtype=numpy.float16)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'mean': lambda d: applied(F.mean, _v(3, 4, dtype=d)),
    'axis': lambda d: applied(lambda a: F.mean(a, axis=1),
                              _v(2, 3, 4, dtype=d)),
    'axes': lambda d: applied(lambda a: F.mean(a, axis=(-1, 0)),
                              _v(2, 3, 4, dtype=d)),
    'keepdims': lambda d: applied(
        lambda a: F.mean(a, axis=0, keepdims=True), _v(3, 4, dtype=d)),
    'strided': lambda d: applied(lambda a: F.mean(a, axis=0),
                                 strided_variable(3, 4, dtype=d)),
    'empty_rows': lambda d: applied(lambda a: F.mean(a, axis=1),
                                    _v(0, 3, dtype=d)),
    '0d': lambda d: applied(F.mean, _v(dtype=d)),
    'middle': lambda d: applied(lambda a: F.mean(a, axis=1),
                                _v(2, 7, 3, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['mean', 'axis']))


def test_forward_is_compiled(compiled_instead):
    x = _v(3, 4)
    compiled_instead(lambda: F.mean(x, axis=1), average.Mean.forward)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('x,axis', [
    (numpy.arange(6).reshape(2, 3), 1),
    (numpy.zeros((2, 3), numpy.float32), 2),
    (numpy.zeros((0, 3), numpy.float32), None),
], ids=['int', 'axis', 'empty'])
def test_bad_input_same_error_as_stock(x, axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.mean(x, axis=axis).array
    check_error_same(fn)


def test_gradient_of_another_shape_is_left_to_stock(patched_stats):
    def fn():
        x = _v(3, 4)
        y = F.mean(x, axis=1)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((4,), numpy.float32)))
        return error_of(y.backward), x.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {'case left to stock: Mean': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 4)
    type_check_is_cached(average.Mean, lambda: F.mean(x, axis=1))


@pytest.mark.parametrize('owner,name', [
    (average.Mean, 'forward'),
    (basic_math.MulConstant, 'forward'),
    (basic_math, '_preprocess_const'),
    (reshape.Reshape, 'forward'),
    (broadcast.BroadcastTo, 'forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['axis'], numpy.float32))


@pytest.mark.parametrize('keepdims', [numpy.bool_(True), numpy.bool_(False),
                                      1, 0])
@pytest.mark.parametrize('values', ['finite', 'inf_minus_inf'])
def test_keepdims_not_a_bool_warns_once_as_stock(values, keepdims):
    # NumPy's DeprecationWarning for a numpy.bool_ read as an index comes
    # once from its own Python, also where inf - inf then makes it warn about
    # the reduction (the fuzzer's finding: it came twice patched).
    def fn():
        x = _v(2, 3)
        if values == 'inf_minus_inf':
            x.array[0, :2] = numpy.inf, -numpy.inf
        return warned(lambda: F.mean(-x, axis=1, keepdims=keepdims).array)
    with numpy.errstate(invalid='warn'):
        stock, _ = check_same(fn)
    assert stock[1] or type(keepdims) is int


@pytest.mark.parametrize('mode', ['warn', 'ignore', 'raise'])
@pytest.mark.parametrize('rows,flagged', [
    (numpy.array([[1e-45, 1e-45], [0, 0]], numpy.float32), True),  # underflow
    (numpy.full((2, 3), 3e38, numpy.float32), True),         # overflow
    (numpy.array([[numpy.nan, 1.0], [2.0, 3.0]]), False),    # NaN
])
@pytest.mark.parametrize('axis', [0, None])
def test_mean_flags_same_as_stock(rows, flagged, mode, axis):
    # The sum and the division raise the flags NumPy's would; where the
    # error state acts on one, NumPy computes the mean again and warns or
    # raises.
    def fn():
        with numpy.errstate(all=mode):
            return F.mean(chainer.Variable(rows), axis=axis).array
    (error, warnings), _ = check_same(lambda: warned(fn))
    assert (error is not None or bool(warnings)) == (flagged
                                                     and mode != 'ignore')
