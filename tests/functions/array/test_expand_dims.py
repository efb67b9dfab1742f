"""F.expand_dims (``ExpandDims``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import expand_dims
from chainer.functions.array import reshape

from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, gradients, check_error_same, check_gradients_same,
    check_outputs_same, check_second_order_same, strided_variable,
    variable as _v)

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'middle': lambda: (lambda a: F.expand_dims(a, 1), [_v(2, 3)]),
    'last': lambda: (lambda a: F.expand_dims(a, -1), [_v(2, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'middle': lambda d: applied(lambda a: F.expand_dims(a, 1),
                                _v(2, 3, dtype=d)),
    'last': lambda d: applied(lambda a: F.expand_dims(a, -1),
                              _v(2, 3, dtype=d)),
    'strided': lambda d: applied(lambda a: F.expand_dims(a, 0),
                                 strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(lambda a: F.expand_dims(a, 0),
                               _v(0, 3, dtype=d)),
    '0d': lambda d: applied(lambda a: F.expand_dims(a, 0), _v(dtype=d)),
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
def test_double_backprop_same_as_stock(dtype):
    check_second_order_same(BACKWARD_CASES['middle'], dtype)


@pytest.mark.parametrize('case', sorted(BACKWARD_CASES))
def test_compiled_backward_is_used(case, compiled_backward_is_used):
    compiled_backward_is_used(BACKWARD_CASES[case])


def test_forward_is_compiled(compiled_instead):
    x = _v(2, 3)
    compiled_instead(lambda: F.expand_dims(x, 1),
                     expand_dims.ExpandDims.forward)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('axis', [3, -4])
def test_bad_axis_same_error_as_stock(axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            F.expand_dims(_v(2, 3), axis)
    assert check_error_same(fn) is not None


def test_bad_gradient_same_error_as_stock():
    def fn():
        x = _v(2, 3)
        y = F.expand_dims(x, 0)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((5,), numpy.float32)))
        y.backward()
    assert check_error_same(fn) is not None


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(expand_dims.ExpandDims,
                         lambda: F.expand_dims(x, 1))


@pytest.mark.parametrize('owner,name', [
    (expand_dims.ExpandDims, 'forward'),
    (reshape.Reshape, 'forward'),
    (reshape.Reshape, 'check_type_forward'),
    (F, 'reshape'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['middle'], numpy.float32))
