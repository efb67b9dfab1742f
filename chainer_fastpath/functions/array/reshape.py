"""``Reshape``: its passed type checks are cached."""
from chainer.functions.array import reshape

from chainer_fastpath._core._registry import Compiled

ENTRIES = (Compiled(reshape.Reshape, type_check=('shape', '_cnt')),)
