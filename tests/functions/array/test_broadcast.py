"""F.broadcast_to (``BroadcastTo``) and F.broadcast (``Broadcast``),
stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import broadcast
from chainer.functions.math import sum as sum_mod

from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, gradients, check_error_same, check_gradients_same,
    check_outputs_same, check_same, check_second_order_same, strided_variable,
    variable as _v)


def _both(a, b):
    ya, yb = F.broadcast(a, b)
    return ya * 2 + yb


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'broadcast_to': lambda: (lambda a: F.broadcast_to(a, (2, 3)),
                             [_v(1, 3)]),
    'broadcast': lambda: (F.broadcast, [_v(2, 1, 3), _v(4, 1)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'broadcast_to': lambda d: applied(lambda a: F.broadcast_to(a, (2, 3)),
                                      _v(1, 3, dtype=d)),
    'broadcast_to_lead': lambda d: applied(
        lambda a: F.broadcast_to(a, (4, 2, 3)), _v(2, 1, dtype=d)),
    'broadcast_to_0d': lambda d: applied(
        lambda a: F.broadcast_to(a, (2, 3)), _v(dtype=d)),
    'broadcast_to_strided': lambda d: applied(
        lambda a: F.broadcast_to(a, (2, 2, 3)),
        strided_variable(2, 1, 3, dtype=d)),
    'broadcast_to_empty': lambda d: applied(
        lambda a: F.broadcast_to(a, (0, 3)), _v(1, 3, dtype=d)),
    'broadcast': lambda d: applied(_both, _v(2, 1, 3, dtype=d),
                                   _v(4, 1, dtype=d)),
    'broadcast_same_shape': lambda d: applied(_both, _v(2, 3, dtype=d),
                                              _v(2, 3, dtype=d)),
    'broadcast_one_output': lambda d: applied(
        lambda a, b: F.broadcast(a, b)[1], _v(2, 3, dtype=d),
        _v(3, dtype=d)),
    'broadcast_strided': lambda d: applied(
        _both, strided_variable(3, 1, dtype=d), _v(4, dtype=d)),
}


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
@pytest.mark.parametrize('case', sorted(APPLY_CASES))
def test_outputs_same_as_stock(case, backprop, type_check):
    check_outputs_same(APPLY_CASES[case], backprop, type_check)


@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
@pytest.mark.parametrize('case', sorted(BACKWARD_CASES))
@pytest.mark.parametrize('type_check', [True, False])
def test_gradients_same_as_stock(case, dtype, type_check):
    check_gradients_same(BACKWARD_CASES[case], dtype, type_check)


@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
@pytest.mark.parametrize('case', ['broadcast_to_lead', 'broadcast'])
def test_double_backprop_same_as_stock(case, dtype):
    check_second_order_same(BACKWARD_CASES[case], dtype)


@pytest.mark.parametrize('case', sorted(BACKWARD_CASES))
def test_compiled_backward_is_used(case, compiled_backward_is_used):
    compiled_backward_is_used(BACKWARD_CASES[case])


@pytest.mark.parametrize('fn,method', [
    (lambda x: F.broadcast_to(x, (4, 3)), broadcast.BroadcastTo.forward),
    (lambda x: F.broadcast(x, x[0]), broadcast.Broadcast.forward),
], ids=['broadcast_to', 'broadcast'])
def test_forward_is_compiled(fn, method, compiled_instead):
    x = _v(1, 3)
    compiled_instead(lambda: fn(x), method)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('fn', [
    lambda: F.broadcast_to(_v(2, 3), (3, 3)),
    lambda: F.broadcast_to(_v(2, 3), (3,)),
    lambda: F.broadcast(_v(2, 3), _v(3, 2)),
], ids=['to_shape', 'to_fewer_dims', 'broadcast'])
def test_bad_input_same_error_as_stock(fn, type_check):
    def run():
        with chainer.using_config('type_check', type_check):
            fn()
    assert check_error_same(run) is not None


def test_int_inputs_same_as_stock():
    def fn():
        a = chainer.Variable(numpy.arange(3))
        b = chainer.Variable(numpy.arange(2).reshape(2, 1))
        return [y.array for y in F.broadcast(a, b)] + [
            F.broadcast_to(a, (2, 3)).array]
    check_same(fn)


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(1, 3)
    type_check_is_cached(broadcast.BroadcastTo,
                         lambda: F.broadcast_to(x, (2, 3)))
    type_check_is_cached(broadcast.Broadcast, lambda: F.broadcast(x, x[0]))


@pytest.mark.parametrize('owner,name', [
    (broadcast.Broadcast, 'forward'),
    (sum_mod.SumTo, 'forward'),
    (F, 'sum_to'),
    (chainer.utils, 'sum_to'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['broadcast'], numpy.float32))
