"""``BroadcastTo``: its passed type checks are cached."""
from chainer.functions.array import broadcast

from chainer_fastpath._core._registry import Compiled

ENTRIES = (Compiled(broadcast.BroadcastTo, type_check=('_shape',)),)
