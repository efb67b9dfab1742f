"""F.transpose_sequence (``TransposeSequence``), stock vs patched: compiled
forward (rows copied in C) and backward (a detached
``TransposeSequence``)."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import transpose_sequence as ts

from chainer_fastpath.testing import (
    applied, applied_state, check_error_same, check_same, gradients,
    special_variable, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _transposed(*xs):
    # The outputs concatenated: one Variable to compare.
    return lambda: (lambda *a: F.concat(F.transpose_sequence(a), 0),
                    [x() for x in xs])


def _fortran(*shape):
    return chainer.Variable(numpy.asfortranarray(_v(*shape).array))


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'sorted': _transposed(lambda: _v(3, 2), lambda: _v(2, 2),
                          lambda: _v(1, 2)),
    'equal': _transposed(lambda: _v(2, 3), lambda: _v(2, 3)),
    'one': _transposed(lambda: _v(1, 1)),
    'vectors': _transposed(lambda: _v(4), lambda: _v(2), lambda: _v(2)),
    'zero_length_last': _transposed(lambda: _v(2, 2), lambda: _v(0, 2)),
    'empty_unit': _transposed(lambda: _v(3, 0), lambda: _v(1, 0)),
    'strided': _transposed(lambda: strided_variable(3, 2),
                           lambda: strided_variable(1, 2)),
    'fortran_3d': _transposed(lambda: _fortran(3, 2, 2),
                              lambda: _fortran(2, 2, 2)),
    'float16': _transposed(lambda: _v(2, 3, dtype=numpy.float16),
                           lambda: _v(1, 3, dtype=numpy.float16)),
    'float64': _transposed(lambda: _v(2, 3, dtype=numpy.float64),
                           lambda: _v(2, 3, dtype=numpy.float64)),
    'special': _transposed(lambda: special_variable((3, 4)),
                           lambda: special_variable((2, 4), take=True)),
    'arrays': _transposed(lambda: _v(3, 2).array, lambda: _v(1, 2).array),
}


def _backward_case(*shapes):
    return lambda d: applied(
        lambda *xs: F.concat(F.transpose_sequence(xs), 0) * 2,
        *[_v(*s, dtype=d) for s in shapes])


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'sorted': _backward_case((3, 2), (2, 2), (1, 2)),
    'equal_3d': _backward_case((2, 3, 2), (2, 3, 2)),
    'vectors': _backward_case((4,), (1,)),
}


def test_output_without_gradient_fails_as_stock():
    # Stock's backward passes the missing gradient, a None, to its new
    # node, whose type check fails on it: the compiled backward leaves it.
    def fn():
        xs = [_v(2, 2), _v(2, 2)]
        F.sum(F.transpose_sequence(xs)[0]).backward()
        return [x.grad for x in xs]
    assert check_error_same(fn)[0] == 'AttributeError'


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['sorted', 'equal_3d'],
    compiled_forward=dict.fromkeys(
        ['sorted', 'equal', 'vectors', 'special', 'strided', 'fortran_3d'],
        ts._transpose)))


def test_passed_type_check_is_cached(type_check_is_cached):
    xs = [_v(3, 2), _v(1, 2)]
    type_check_is_cached(ts.TransposeSequence,
                         lambda: F.transpose_sequence(xs))


def _outputs(xs, type_check=True):
    with chainer.using_config('type_check', type_check):
        ys = F.transpose_sequence(xs)
    return [(y.array, y.array.dtype, y.array.strides) for y in ys]


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('shapes', [
    [(1, 2), (3, 2)], [(3, 2), (1, 3)], [(3, 2), ()], [(0, 2)], [()],
    [(2, 2), (2,)]],
    ids=['growing', 'unit', '0d', 'all_empty', 'only_0d', 'ndim'])
def test_bad_input_same_as_stock(shapes, type_check):
    def fn():
        xs = [numpy.ones(s, numpy.float32) for s in shapes]
        return _outputs(xs, type_check)
    check_error_same(fn)


@pytest.mark.parametrize('dtypes', [
    ('int32', 'int32'), ('bool', 'bool'), ('>f4', '>f4'), ('f4', 'f8'),
    ('f8', 'f4'), ('O', 'O'), ('f4,i2', 'f4,i2')])
def test_other_dtypes_same_as_stock(dtypes):
    def fn():
        xs = [numpy.arange(6).reshape(3, 2).astype(dtypes[0]),
              numpy.arange(2).reshape(1, 2).astype(dtypes[1])]
        return [(y.tobytes() if y.dtype != object else list(y.ravel()),
                 y.dtype, y.strides) for y, _, _ in _outputs(xs, False)]
    check_error_same(fn)


def test_no_inputs_same_as_stock():
    check_error_same(lambda: _outputs([]))


def test_node_length_other_than_the_first_input_is_stock():
    def fn():
        xs = (_v(2, 2), _v(1, 2))
        return [y.array for y in ts.TransposeSequence(3).apply(xs)]
    check_error_same(fn, type_check=False)


@pytest.mark.parametrize('owner,name', [
    (ts.TransposeSequence, 'forward'), (ts, '_transpose'),
    (ts.TransposeSequence, 'backward'), (ts.TransposeSequence, '__init__')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['sorted'], numpy.float32))


class _Reversed(ts.TransposeSequence):
    def forward(self, xs):
        return tuple(x[::-1].copy() for x in xs)


def test_subclass_overriding_forward_is_stock():
    def fn():
        xs = (_v(2, 2), _v(1, 2))
        return [y.array for y in _Reversed(2).apply(xs)]
    check_error_same(fn)


# name -> shapes of the inputs: passing and failing checks, decided by the
# checker or left by it to stock's check
CHECKS = {
    'shrinking': [(3, 2), (3, 2), (1, 2)],
    'growing': [(1, 2), (3, 2)],
    'trailing_mismatch': [(3, 2), (2, 3)],
    'ndim_mismatch': [(3, 2), (2,)],
    'one_d': [(3,), (2,), (0,)],
    'zero_d_among_two': [(3,), ()],
    'zero_d_alone': [()],
    'none': [],
}


@pytest.mark.parametrize('name', sorted(CHECKS))
def test_type_check_same_as_stock(name):
    def fn():
        xs = [numpy.random.uniform(-1, 1, s).astype(numpy.float32)
              for s in CHECKS[name]]
        length = len(xs[0]) if xs and xs[0].ndim else 0
        return applied_state(ts.TransposeSequence(length), xs)
    check_same(fn)


def test_varying_shapes_are_checked_compiled(compiled_instead):
    compiled_instead(lambda: [F.transpose_sequence([_v(n, 2), _v(1, 2)])
                              for n in range(1, 20)],
                     ts.TransposeSequence.check_type_forward)
