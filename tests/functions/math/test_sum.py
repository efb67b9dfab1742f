"""F.sum (``Sum``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import sum as sum_mod
from chainer.functions.array import broadcast
from chainer.functions.array import reshape

from chainer_fastpath.testing import (
    applied, gradients, check_same, error_of, strided_variable,
    variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'sum': lambda: (lambda a: F.sum(a, axis=1), [_v(3, 4)]),
    'sum_all': lambda: (F.sum, [_v(5, 7)]),
    'sum_all_keepdims': lambda: (lambda a: F.sum(a, keepdims=True),
                                 [_v(5, 7)]),
    'sum_axes': lambda: (lambda a: F.sum(a, axis=(0, -1)), [_v(2, 3, 4)]),
    'sum_float16': lambda: (F.sum, [_v(300, dtype=numpy.float16)]),
    'sum_float64_long': lambda: (lambda a: F.sum(a, axis=0),
                                 [_v(20000, 3, dtype=numpy.float64)]),
    'sum_0d': lambda: (F.sum, [_v()]),
    'sum_strided': lambda: (lambda a: F.sum(a, axis=1),
                            [strided_variable(3, 4)]),
    'sum_transposed': lambda: (F.sum, [chainer.Variable(_v(30, 4).array.T)]),
    'sum_empty': lambda: (lambda a: F.sum(a, axis=1), [_v(3, 0)]),
    'sum_nan': lambda: (F.sum, [chainer.Variable(numpy.array(
        [1.0, numpy.nan, -numpy.nan, 2.0], numpy.float32))]),
    'sum_negative_zeros': lambda: (F.sum, [chainer.Variable(
        -numpy.zeros((2, 3), numpy.float64))]),
    'sum_all_long': lambda: (F.sum, [_v(20011)]),
    'sum_all_keepdims_int': lambda: (lambda a: F.sum(a, keepdims=1),
                                     [_v(3, 4)]),
    # Over an axis rows follow: NumPy adds whole rows in order.
    'sum_middle': lambda: (lambda a: F.sum(a, axis=1), [_v(3, 4, 5)]),
    'sum_middle_keepdims': lambda: (
        lambda a: F.sum(a, axis=-2, keepdims=True),
        [_v(2, 3, 7, 6, dtype=numpy.float64)]),
    'sum_first_axis': lambda: (lambda a: F.sum(a, axis=0), [_v(9, 2)]),
    'sum_middle_long_rows': lambda: (lambda a: F.sum(a, axis=0),
                                     [_v(3, 20011)]),
    'sum_middle_nan': lambda: (lambda a: F.sum(a, axis=0), [
        chainer.Variable(numpy.array([[1.0, numpy.nan], [-numpy.nan, 2.0],
                                      [numpy.nan, 1.0]], numpy.float32))]),
    'sum_middle_negative_zeros': lambda: (
        lambda a: F.sum(a, axis=1),
        [chainer.Variable(-numpy.zeros((2, 3, 4), numpy.float32))]),
    'sum_middle_subnormal': lambda: (lambda a: F.sum(a, axis=0), [
        chainer.Variable(numpy.full((3, 2), 1e-40, numpy.float32))]),
    # Over the last axis: NumPy sums each row pairwise.
    'sum_last_short_rows': lambda: (lambda a: F.sum(a, axis=-1),
                                    [_v(4, 7)]),
    'sum_last_rows_of_eights': lambda: (lambda a: F.sum(a, axis=1),
                                        [_spread(3, 45)]),
    'sum_last_blocks': lambda: (lambda a: F.sum(a, axis=2, keepdims=True),
                                [_spread(2, 3, 300, dtype=numpy.float64)]),
    'sum_last_halves_of_halves': lambda: (lambda a: F.sum(a, axis=1),
                                          [_spread(2, 4099)]),
    'sum_last_then_ones': lambda: (lambda a: F.sum(a, axis=1),
                                   [_spread(2, 130, 1, 1)]),
    'sum_last_negative_zeros': lambda: (
        lambda a: F.sum(a, axis=1),
        [chainer.Variable(-numpy.zeros((2, 9), numpy.float32))]),
    'sum_last_nan': lambda: (lambda a: F.sum(a, axis=1), [
        chainer.Variable(numpy.array([[1.0, numpy.nan], [-numpy.nan, 2.0]],
                                     numpy.float32))]),
}

def _spread(*shape, dtype=numpy.float32):
    # Magnitudes from 1e-6 to 1e6: each order of additions rounds its own
    # way.
    rng = numpy.random.RandomState(len(shape))
    return chainer.Variable((rng.standard_normal(shape) * 10.0 ** rng.randint(
        -6, 7, shape)).astype(dtype))


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'sum': lambda d: applied(F.sum, _v(3, 4, dtype=d)),
    'sum_axis': lambda d: applied(lambda a: F.sum(a, axis=1),
                                  _v(3, 4, dtype=d)),
    'sum_keepdims': lambda d: applied(
        lambda a: F.sum(a, axis=0, keepdims=True), _v(3, 4, dtype=d)),
    'sum_axes': lambda d: applied(lambda a: F.sum(a, axis=(-1, 0)),
                                  _v(2, 3, 4, dtype=d)),
    'sum_size_one_axis': lambda d: applied(lambda a: F.sum(a, axis=1),
                                           _v(3, 1, dtype=d)),
    'sum_axis_strided': lambda d: applied(
        lambda a: F.sum(a, axis=-2), strided_variable(3, 4, dtype=d)),
    'sum_axis_empty': lambda d: applied(lambda a: F.sum(a, axis=0),
                                        _v(0, 3, dtype=d)),
    'sum_last_rows': lambda d: applied(lambda a: F.sum(a, axis=-1),
                                       _v(3, 45, dtype=d)),
    'sum_middle': lambda d: applied(lambda a: F.sum(a, axis=-2),
                                    _v(2, 5, 3, dtype=d)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['sum', 'sum_axis', 'sum_axes', 'sum_keepdims',
                  'sum_middle', 'sum_last_rows'],
    compiled_forward=dict.fromkeys(APPLY_CASES, sum_mod.Sum.forward)))


def test_gradient_of_another_shape_is_left_to_stock(patched_stats):
    def fn():
        x = _v(3, 4)
        y = F.sum(x, axis=1)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((4,), numpy.float32)))
        return error_of(y.backward)
    assert check_same(fn)[0] is not None
    assert patched_stats(fn)['fallback'] == {'case left to stock: Sum': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(sum_mod.Sum, lambda: F.sum(x, axis=1))


@pytest.mark.parametrize('owner,name', [
    (reshape.Reshape, 'forward'),
    (reshape.Reshape, 'check_type_forward'),
    (F, 'reshape'),
    (broadcast.BroadcastTo, 'forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['sum_axis'], numpy.float32))


@pytest.mark.parametrize('size', [16, 48, 10000])
def test_sum_with_another_buffer_size_same_as_stock(size):
    # A full reduction adds runs of NumPy's buffer size, and so does a sum
    # over the last axis of rows longer than it.
    def fn():
        old = numpy.setbufsize(size)
        try:
            x = _v(20011)
            rows = _spread(3, 45)
            return (F.sum(x).array, F.sum(x, keepdims=True).array,
                    F.sum(rows, axis=1).array,
                    F.sum(_spread(2, 9000), axis=-1).array)
        finally:
            numpy.setbufsize(old)
    check_same(fn)


def test_mocked_forward_is_called(mock_is_called):
    mock_is_called(sum_mod.Sum, 'forward', lambda: F.sum(_v(3, 4)))


@pytest.mark.parametrize('keepdims', [numpy.bool_(True), numpy.bool_(False),
                                      1, 0])
@pytest.mark.parametrize('axis', [None, 0, (0, 1)])
def test_keepdims_not_a_bool_warns_as_stock(axis, keepdims):
    # NumPy deprecates a numpy.bool_ read as an int: its warning comes from
    # NumPy's own Python, where a filter by module sees it.
    x = _v(2, 3)
    stock, _ = check_same(lambda: warned(
        lambda: F.sum(x, axis=axis, keepdims=keepdims).array))
    assert stock[1] or type(keepdims) is int


@pytest.mark.parametrize('mode', ['warn', 'ignore', 'raise'])
@pytest.mark.parametrize('rows,flagged', [
    (numpy.full((2, 3), 3e38, numpy.float32), True),         # overflow
    # invalid: inf - inf down a column and along a row
    (numpy.array([[numpy.inf, -numpy.inf], [-numpy.inf, 2]]), True),
    (numpy.full((3, 2), 1e-40, numpy.float32), False),       # subnormal
])
@pytest.mark.parametrize('axis', [0, -1])
def test_sum_over_rows_flags_same_as_stock(rows, flagged, mode, axis):
    # Rows summed in C raise the flags NumPy's loop would; where the error
    # state acts on one, NumPy sums them again and warns or raises.
    def fn():
        with numpy.errstate(all=mode):
            return F.sum(chainer.Variable(rows), axis=axis).array
    stock, _ = check_same(lambda: warned(fn))
    error, warnings = stock
    assert (error is not None or bool(warnings)) == (flagged and
                                                     mode != 'ignore')
