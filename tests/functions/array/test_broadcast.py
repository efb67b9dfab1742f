"""``BroadcastTo``: its passed type checks are cached."""
import chainer.functions as F
from chainer.functions.array import broadcast

from chainer_fastpath.testing import variable as _v


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(1, 3)
    type_check_is_cached(broadcast.BroadcastTo,
                         lambda: F.broadcast_to(x, (2, 3)))
