"""F.log_softmax (``LogSoftmax``) and its gradient node, stock vs
patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.activation import log_softmax

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of, gradients, grad_vars,
    special_variable as _specials, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _log_softmax(axis):
    return lambda x: F.log_softmax(x, axis=axis)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'log_softmax': lambda: (F.log_softmax, [_v(3, 4)]),
    'axis': lambda: (_log_softmax(-1), [_v(2, 3, 4)]),
    'axis_0': lambda: (_log_softmax(0), [_v(2, 3, 4)]),
    '1d': lambda: (_log_softmax(0), [_v(5)]),
    'float16': lambda: (F.log_softmax, [_v(3, 4, dtype=numpy.float16)]),
    'float64': lambda: (F.log_softmax, [_v(3, 4, dtype=numpy.float64)]),
    'large': lambda: (F.log_softmax, [_v(3, 4, low=50, high=90)]),
    'strided': lambda: (F.log_softmax, [strided_variable(2, 3)]),
    'transposed': lambda: (F.log_softmax, [
        chainer.Variable(_v(3, 4).array.T)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'log_softmax': lambda d: applied(F.log_softmax, _v(3, 4, dtype=d)),
    'axis': lambda d: applied(_log_softmax(0), _v(2, 3, 4, dtype=d)),
    'negative_axis': lambda d: applied(_log_softmax(-2),
                                       _v(2, 3, 4, dtype=d)),
    'strided': lambda d: applied(F.log_softmax,
                                 strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(F.log_softmax, _v(0, 3, dtype=d)),
    '1d': lambda d: applied(_log_softmax(0), _v(4, dtype=d)),
}

TYPE_CHECK_SEQUENCES = {
    'axis': (lambda: F.log_softmax(_v(2, 3)),
             lambda: F.log_softmax(_v(2, 3), axis=2)),
    'integer': (lambda: F.log_softmax(_v(2, 3)),
                lambda: F.log_softmax(numpy.ones((2, 3), numpy.int32))),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['log_softmax', 'axis'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(APPLY_CASES, log_softmax.logsumexp)))


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
@pytest.mark.parametrize('axis', [0, 1])
def test_specials_same_as_stock(dtype, axis, patched_stats):
    # NaNs, infinities and signed zeros meet inf - inf: under an error
    # state that ignores it, forward and backward are compiled.
    def fn():
        x = _specials((5, 7), dtype)
        with numpy.errstate(all='ignore'):
            y = F.log_softmax(x, axis=axis)
            y.grad = _specials((5, 7), dtype, take=True).array
            y.backward()
        return y.array, x.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {}


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('x,axis', [
    (numpy.arange(6).reshape(2, 3), 1),
    (numpy.zeros((2, 3), numpy.float32), 2),
    (numpy.zeros((2, 3), numpy.float32), numpy.int64(1)),
    (numpy.zeros((2, 3), numpy.float32), (0, 1)),
    (numpy.zeros((), numpy.float32), 0),
    (numpy.zeros((2, 0), numpy.float32), 1),
    (numpy.zeros((0, 2), numpy.float32), 1),
], ids=['int', 'axis', 'numpy_axis', 'tuple_axis', '0d', 'empty_axis',
        'empty'])
def test_unusual_input_is_stocks(x, axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.log_softmax(x, axis=axis).array
    check_error_same(fn)
    if error_of(fn) is None:
        check_same(fn)


def test_node_attributes_same_as_stock():
    def fn():
        node = log_softmax.LogSoftmax(axis=-1)
        y, = node.apply((_v(2, 3, dtype=numpy.float64),))
        return (node._x_xp is numpy, node._x_shape, node._x_dtype,
                node._output_indexes_to_retain, y.array)
    check_same(fn)


@pytest.mark.parametrize('gy_shape,gy_dtype', [
    ((3,), numpy.float32), ((2, 3), numpy.float64)])
def test_unusual_gradient_is_left_to_stock(gy_shape, gy_dtype,
                                           patched_stats):
    def fn():
        x = _v(2, 3)
        y = F.log_softmax(x)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones(gy_shape, gy_dtype)))
        return error_of(y.backward), grad_vars(x)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: LogSoftmax': 1}


@pytest.mark.parametrize('owner,name', [
    (log_softmax.LogSoftmax, 'forward'),
    (log_softmax.LogSoftmax, 'retain_outputs'),
    (log_softmax.LogSoftmaxGrad, 'forward'),
    (log_softmax.LogSoftmaxGrad, '__init__'),
    (log_softmax, '_log_softmax'),
    (log_softmax, 'logsumexp'),
    (chainer, 'should_use_cudnn'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['log_softmax'], numpy.float32))


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 4)
    type_check_is_cached(log_softmax.LogSoftmax, lambda: F.log_softmax(x))
