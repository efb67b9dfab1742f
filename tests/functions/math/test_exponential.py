"""``Exp``: its passed type checks are cached."""
import chainer.functions as F
from chainer.functions.math import exponential

from chainer_fastpath.testing import variable as _v


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(exponential.Exp, lambda: F.exp(x))
