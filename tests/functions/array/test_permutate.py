"""F.permutate (``Permutate``), stock vs patched: compiled forward and
backward (the backward a detached ``Permutate``)."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import permutate

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, gradients, special_variable,
    strided_variable, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests

_I32 = numpy.int32


def _permuted(x, indices, **kwargs):
    return lambda: (lambda a: F.permutate(a, indices, **kwargs), [x()])


def _fortran(*shape):
    return chainer.Variable(numpy.asfortranarray(_v(*shape).array))


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'axis0': _permuted(lambda: _v(3, 2), numpy.array([2, 0, 1], _I32)),
    'inv': _permuted(lambda: _v(3, 2), numpy.array([2, 0, 1], _I32),
                     inv=True),
    'axis1': _permuted(lambda: _v(2, 3, 4), numpy.array([1, 2, 0], _I32),
                       axis=1),
    'axis1_inv_int64': _permuted(
        lambda: _v(2, 3, 4), numpy.array([1, 2, 0], numpy.int64), axis=1,
        inv=True),
    # A negative axis repeats no slice: stock permutes axis 0.
    'negative_axis': _permuted(lambda: _v(3, 3), numpy.array([1, 2, 0], _I32),
                               axis=-1),
    'negative_indices': _permuted(lambda: _v(3, 2),
                                  numpy.array([-1, 0, 1], _I32)),
    'one': _permuted(lambda: _v(1, 1), numpy.array([0], _I32)),
    'empty': _permuted(lambda: _v(0, 3), numpy.array([], _I32)),
    'strided': _permuted(lambda: strided_variable(2, 3),
                         numpy.array([2, 0, 1], _I32), axis=1),
    'fortran': _permuted(lambda: _fortran(3, 4), numpy.array([2, 0, 1], _I32)),
    'float16': _permuted(lambda: _v(3, 2, dtype=numpy.float16),
                         numpy.array([2, 0, 1], _I32), inv=True),
    'float64': _permuted(lambda: _v(2, 3, dtype=numpy.float64),
                         numpy.array([2, 0, 1], _I32), axis=1),
    'special': _permuted(lambda: special_variable((4, 3)),
                         numpy.array([3, 1, 0, 2], _I32)),
    'variable_indices': _permuted(
        lambda: _v(3, 2), chainer.Variable(numpy.array([2, 0, 1], _I32))),
    # Stock makes no check outside debug mode: the last index wins.
    'duplicate_indices': _permuted(lambda: _v(3, 2),
                                   numpy.array([0, 0, 1], _I32), inv=True),
}


def _backward_case(shape, indices, **kwargs):
    return lambda d: applied(
        lambda a: F.permutate(a, numpy.array(indices, _I32), **kwargs) * 2,
        _v(*shape, dtype=d))


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'axis0': _backward_case((3, 2), [2, 0, 1]),
    'inv': _backward_case((3, 2), [2, 0, 1], inv=True),
    'axis1': _backward_case((2, 3, 4), [1, 2, 0], axis=1),
    'negative_axis': _backward_case((3, 3), [1, 2, 0], axis=-1),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=sorted(BACKWARD_CASES),
    compiled_forward=dict.fromkeys(
        ['axis0', 'inv', 'axis1', 'special', 'empty'],
        permutate.Permutate._permutate)))


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 2)
    indices = numpy.array([1, 0], _I32)
    type_check_is_cached(permutate.Permutate,
                         lambda: F.permutate(x, indices, axis=1))


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('indices,axis,inv', [
    ([0, 3, 1], 0, False), ([0, 3, 1], 0, True), ([0, 1], 2, False),
    ([0, 1], -3, False), ([0, 1, 2], 0, False)],
    ids=['out_of_range', 'out_of_range_inv', 'axis', 'negative_axis',
         'longer_indices'])
def test_bad_input_same_error_as_stock(indices, axis, inv, type_check):
    x = numpy.zeros((2, 3), numpy.float32)

    def fn():
        with chainer.using_config('type_check', type_check):
            return F.permutate(x, numpy.array(indices, _I32), axis=axis,
                               inv=inv).array
    check_error_same(fn)


@pytest.mark.parametrize('indices', [[0, 0, 1], [0, 3, 1]])
def test_debug_mode_checks_the_indices_as_stock(indices):
    def fn():
        with chainer.using_config('debug', True):
            return F.permutate(_v(3, 2), numpy.array(indices, _I32)).array
    check_error_same(fn)


@pytest.mark.parametrize('inv', [numpy.bool_(True), 1, None])
@pytest.mark.parametrize('indices', [
    numpy.array([2, 0, 1], _I32), numpy.array([[2, 0, 1]], _I32),
    numpy.array([2.0, 0.0, 1.0])], ids=['1d', '2d', 'float'])
def test_node_arguments_stock_takes_as_stock(indices, inv):
    # Arguments F.permutate would reject, or not of the types the compiled
    # forward takes, on a node built directly: stock's forward.
    def fn():
        x = _v(3, 2)
        y, = permutate.Permutate(indices, 0, inv).apply((x,))
        y.grad = numpy.ones_like(y.array)
        y.backward()
        return y.array, x.grad
    check_error_same(fn)


@pytest.mark.parametrize('owner,name', [
    (permutate.Permutate, 'forward'), (permutate.Permutate, '_permutate'),
    (permutate, '_inverse_indices'), (permutate.Permutate, 'backward'),
    (permutate.Permutate, '__init__')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['inv'], numpy.float32))


@pytest.mark.parametrize('dtype', [numpy.int32, numpy.bool_, '>f4'])
def test_other_dtypes_same_as_stock(dtype):
    def fn():
        x = numpy.arange(6).reshape(3, 2).astype(dtype)
        y = F.permutate(x, numpy.array([2, 0, 1], _I32), inv=True).array
        return y, y.dtype, y.strides
    check_error_same(fn)


class _Reversed(permutate.Permutate):
    def forward(self, inputs):
        return inputs[0][::-1].copy(),


def test_subclass_overriding_forward_is_stock():
    def fn():
        x = _v(3, 2)
        y, = _Reversed(numpy.array([2, 0, 1], _I32), 0, False).apply((x,))
        return y.array
    check_error_same(fn)


@pytest.mark.parametrize('shape,axis', [((2, 0), 0), ((0, 3), 1)])
def test_index_out_of_range_into_an_empty_result_warns_as_stock(shape, axis):
    # NumPy's DeprecationWarning comes from the line that indexes: stock's.
    def run():
        x = chainer.Variable(numpy.zeros(shape, numpy.float32))
        return warned(lambda: F.permutate(
            x, numpy.array([2, 0] if axis == 0 else [0, 5, 1], numpy.int32),
            axis=axis).array)
    stock, _ = check_same(run)
    assert stock[1], 'NumPy warned of no index out of range'
