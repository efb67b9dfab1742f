"""F.matmul (``MatMul``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import matmul
from chainer.functions.math import sum as sum_mod

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, gradients, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'matmul': lambda: (F.matmul, [_v(3, 4), _v(4, 5)]),
    'batch': lambda: (F.matmul, [_v(2, 3, 4), _v(2, 4, 1)]),
    'vector': lambda: (F.matmul, [_v(3, 4), _v(4)]),
    'mixed_dtypes': lambda: (F.matmul, [_v(3, 4),
                                        _v(4, 2, dtype=numpy.float64)]),
}


def _mm(transa=False, transb=False):
    return lambda a, b: F.matmul(a, b, transa, transb)


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'matmul': lambda d: applied(_mm(), _v(3, 4, dtype=d), _v(4, 5, dtype=d)),
    'transa': lambda d: applied(_mm(True), _v(4, 3, dtype=d),
                                _v(4, 5, dtype=d)),
    'transb': lambda d: applied(_mm(False, True), _v(3, 4, dtype=d),
                                _v(5, 4, dtype=d)),
    'batch': lambda d: applied(_mm(), _v(2, 3, 4, dtype=d),
                               _v(2, 4, 1, dtype=d)),
    'broadcast_batch': lambda d: applied(_mm(), _v(2, 3, 4, dtype=d),
                                         _v(4, 2, dtype=d)),
    'strided': lambda d: applied(_mm(), strided_variable(3, 4, dtype=d),
                                 _v(4, 2, dtype=d)),
    'empty': lambda d: applied(_mm(), _v(0, 4, dtype=d), _v(4, 2, dtype=d)),
    'one_input': lambda d: applied(lambda a: F.matmul(
        a, chainer.Variable(numpy.ones((4, 2), d), requires_grad=False)),
        _v(3, 4, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['matmul', 'broadcast_batch']))


def test_vector_operand_is_left_to_stock(patched_stats):
    def fn():
        a, b = _v(3, 4), _v(4)
        y = F.matmul(a, b)
        y.grad = numpy.ones(3, numpy.float32)
        y.backward()
        return a.grad, b.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {'case left to stock: MatMul': 1}


def test_mixed_dtypes_gradient_same_as_stock():
    def fn():
        a, b = _v(3, 4), _v(4, 2, dtype=numpy.float64)
        y = F.matmul(a, b)
        y.grad = numpy.random.uniform(-1, 1, (3, 2))
        y.backward()
        return a.grad, b.grad
    check_same(fn)


def test_forward_is_compiled(compiled_instead):
    a, b = _v(3, 4), _v(4, 5)
    compiled_instead(lambda: F.matmul(a, b), matmul.MatMul.forward)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('a,b', [
    ((3, 4), (5, 2)),
    ((2, 3, 4), (3, 4, 2)),
], ids=['inner', 'batch'])
def test_bad_input_same_error_as_stock(a, b, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.matmul(_v(*a), _v(*b)).array
    assert check_error_same(fn) is not None


def test_int_input_same_error_as_stock():
    assert check_error_same(lambda: F.matmul(
        numpy.ones((2, 2), numpy.int32), _v(2, 2))) is not None


def test_passed_type_check_is_cached(type_check_is_cached):
    x, y = _v(2, 3), _v(3, 4)
    type_check_is_cached(matmul.MatMul, lambda: F.matmul(x, y))


@pytest.mark.parametrize('owner,name', [
    (matmul.MatMul, 'forward'),
    (matmul.MatMul, 'check_type_forward'),
    (matmul.MatMul, '__init__'),
    (F, 'sum_to'),
    (sum_mod.SumTo, 'forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['broadcast_batch'], numpy.float32))
