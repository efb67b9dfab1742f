"""F.dropout (``Dropout``: its type check is cached), stock vs patched."""
import pytest

import chainer.functions as F
from chainer.functions.noise import dropout

from chainer_fastpath.testing import check_outputs_same, variable as _v

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'dropout': lambda: (lambda a: F.dropout(a, 0.5), [_v(10, 10)]),
}


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
@pytest.mark.parametrize('case', sorted(APPLY_CASES))
def test_outputs_same_as_stock(case, backprop, type_check):
    check_outputs_same(APPLY_CASES[case], backprop, type_check)


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(dropout.Dropout, lambda: F.dropout(x))
