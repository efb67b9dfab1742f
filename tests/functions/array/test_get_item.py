"""Indexing a Variable (``GetItem``), stock vs patched."""
import numpy
import pytest

from chainer.functions.array import get_item

from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, check_gradients_same, check_outputs_same,
    variable as _v)

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'getitem': lambda: (lambda a: a[1:, ::2], [_v(3, 4)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'get_item_slice': lambda d: applied(lambda a: a[1:, ::2],
                                        _v(3, 5, dtype=d)),
    'get_item_int': lambda d: applied(lambda a: a[1], _v(3, 5, dtype=d)),
    'get_item_repeated_index': lambda d: applied(
        lambda a: a[numpy.array([0, 2, 0])], _v(3, 5, dtype=d)),
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


@pytest.mark.parametrize('case', ['get_item_slice'])
def test_compiled_backward_is_used(case, compiled_backward_is_used):
    compiled_backward_is_used(BACKWARD_CASES[case])


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(get_item.GetItem, lambda: x[0])
