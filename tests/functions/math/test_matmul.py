"""F.matmul (``MatMul``: its type check is cached), stock vs patched."""
import pytest

import chainer.functions as F
from chainer.functions.math import matmul

from chainer_fastpath.testing import check_outputs_same, variable as _v

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'matmul': lambda: (F.matmul, [_v(3, 4), _v(4, 5)]),
}


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
@pytest.mark.parametrize('case', sorted(APPLY_CASES))
def test_outputs_same_as_stock(case, backprop, type_check):
    check_outputs_same(APPLY_CASES[case], backprop, type_check)


def test_passed_type_check_is_cached(type_check_is_cached):
    x, y = _v(2, 3), _v(3, 4)
    type_check_is_cached(matmul.MatMul, lambda: F.matmul(x, y))
