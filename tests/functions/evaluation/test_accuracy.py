"""F.accuracy (``Accuracy``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.evaluation import accuracy

from chainer_fastpath.testing import (
    check_error_same, check_same, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _labels(shape, classes, dtype=numpy.int32, low=0):
    return numpy.random.randint(low, classes, shape).astype(dtype)


def _acc(**kwargs):
    return lambda y, t: F.accuracy(y, t, **kwargs)


def _steps(shape, dtype=numpy.float32):
    # Few distinct scores: equal maxima (the first is the prediction).
    return chainer.Variable(
        numpy.random.randint(-1, 2, shape).astype(dtype))


def _specials(shape, dtype=numpy.float32):
    # NaNs (the first is the prediction), infinities, zeros of both signs.
    y = numpy.random.uniform(-1, 1, shape).astype(dtype)
    flat = y.reshape(-1)
    flat[::3] = -0.0
    flat[1::3] = 0.0
    flat[2::7] = numpy.nan
    flat[4::9] = numpy.inf
    flat[5::11] = -numpy.inf
    return chainer.Variable(y)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'accuracy': lambda: (F.accuracy, [_v(10, 4), _labels(10, 4)]),
    'ignore_label': lambda: (_acc(ignore_label=1),
                             [_v(10, 4), _labels(10, 4)]),
    'ignore_negative': lambda: (_acc(ignore_label=-1),
                                [_v(12, 3), _labels(12, 3, low=-1)]),
    'all_ignored': lambda: (_acc(ignore_label=2),
                            [_v(5, 3), numpy.full(5, 2, numpy.int32)]),
    'ignore_out_of_int32': lambda: (_acc(ignore_label=2 ** 40),
                                    [_v(6, 3), _labels(6, 3)]),
    'spatial': lambda: (F.accuracy, [_v(5, 3, 2, 4), _labels((5, 2, 4), 3)]),
    'spatial_ignore': lambda: (_acc(ignore_label=0),
                               [_v(4, 3, 3), _labels((4, 3), 3)]),
    'trailing_ones': lambda: (F.accuracy, [_v(6, 3, 4, 1),
                                           _labels((6, 4), 3)]),
    'float16': lambda: (F.accuracy, [_v(9, 5, dtype=numpy.float16),
                                     _labels(9, 5)]),
    'float16_ignore': lambda: (_acc(ignore_label=3), [
        _v(7, 5, dtype=numpy.float16), _labels(7, 5)]),
    'float64': lambda: (F.accuracy, [_v(9, 5, dtype=numpy.float64),
                                     _labels(9, 5)]),
    'int64_labels': lambda: (F.accuracy, [_v(8, 3),
                                          _labels(8, 3, numpy.int64)]),
    'labels_out_of_range': lambda: (F.accuracy, [
        _v(6, 3), numpy.array([0, 99, -5, 2, 1, 2 ** 31 - 1], numpy.int32)]),
    'one_class': lambda: (F.accuracy, [_v(4, 1), _labels(4, 1)]),
    'equal_maxima': lambda: (F.accuracy, [_steps((20, 4)),
                                          _labels(20, 4)]),
    'equal_maxima_float16': lambda: (F.accuracy, [
        _steps((20, 4), numpy.float16), _labels(20, 4)]),
    'specials': lambda: (F.accuracy, [_specials((20, 4)), _labels(20, 4)]),
    'specials_float16': lambda: (F.accuracy, [
        _specials((20, 4), numpy.float16), _labels(20, 4)]),
    'specials_float64': lambda: (F.accuracy, [
        _specials((20, 4), numpy.float64), _labels(20, 4)]),
    'strided_scores': lambda: (F.accuracy, [strided_variable(6, 3),
                                            _labels(6, 3)]),
    'transposed_scores': lambda: (F.accuracy, [
        chainer.Variable(_v(3, 6).array.T), _labels(6, 3)]),
    'strided_labels': lambda: (F.accuracy, [_v(5, 3),
                                            _labels(10, 3)[::2]]),
    'many_float32': lambda: (F.accuracy, [_v(3000, 2), _labels(3000, 2)]),
    # Left to stock: more float16 labels than its sums keep exact, labels
    # of another type, an ignore label of another type, scores not
    # C-ordered beyond two dimensions, labels neither 1-d nor C-ordered.
    'many_float16': lambda: (F.accuracy, [_v(2100, 2, dtype=numpy.float16),
                                          _labels(2100, 2)]),
    'int8_labels': lambda: (F.accuracy, [_v(5, 3),
                                         _labels(5, 3, numpy.int8)]),
    'numpy_ignore_label': lambda: (_acc(ignore_label=numpy.int32(1)),
                                   [_v(5, 3), _labels(5, 3)]),
    'spatial_strided': lambda: (F.accuracy, [
        chainer.Variable(_v(5, 3, 4, 2).array[:, :, ::2]),
        _labels((5, 2, 2), 3)]),
    'labels_2d_transposed': lambda: (F.accuracy, [
        _v(3, 3, 4), numpy.ascontiguousarray(_labels((4, 3), 3)).T]),
}

_STOCK = ('many_float16', 'int8_labels', 'numpy_ignore_label',
          'spatial_strided', 'labels_2d_transposed')

globals().update(function_tests(
    APPLY_CASES, {}, second_order=[], compiled_backward=False,
    compiled_forward=dict.fromkeys(
        [name for name in APPLY_CASES if name not in _STOCK],
        accuracy.Accuracy._forward)))


def test_result_same_as_stock():
    def fn():
        acc = F.accuracy(_v(10, 4), _labels(10, 4), ignore_label=1)
        return acc.array, acc.array.strides, acc.requires_grad, type(acc)
    check_same(fn)


def test_passed_type_check_is_cached(type_check_is_cached):
    y, t = _v(10, 4), _labels(10, 4)
    type_check_is_cached(accuracy.Accuracy, lambda: F.accuracy(y, t))


@pytest.mark.parametrize('make', [
    lambda: F.accuracy(_v(4, 3), _labels(4, 3).astype(numpy.float32)),
    lambda: F.accuracy(_v(4, 3).array.astype(numpy.int32), _labels(4, 3)),
    lambda: F.accuracy(_v(4, 3), _labels(5, 3)),
    lambda: F.accuracy(_v(4, 3), _labels((4, 2), 3)),
    lambda: F.accuracy(_v(4, 3, 2), _labels((4, 3), 3)),
    lambda: F.accuracy(_v(4), _labels(4, 3)),
    lambda: F.accuracy(_v(4, 0), _labels(4, 1)),
    lambda: F.accuracy(_v(0, 3), _labels(0, 3)),
    lambda: F.accuracy(_v(4, 3), _labels((2, 2), 3)),
    lambda: F.accuracy(_v(4, 3), _labels(4, 3), ignore_label=2 ** 70),
    lambda: F.accuracy(_v(4, 3), _labels(4, 3), ignore_label='a'),
])
@pytest.mark.parametrize('type_check', [True, False])
def test_bad_input_same_error_as_stock(make, type_check):
    check_error_same(make, type_check)
