"""``Transpose``: its passed type checks are cached."""
from chainer.functions.array import transpose

from chainer_fastpath._core._registry import Compiled

ENTRIES = (Compiled(transpose.Transpose, type_check=()),)
