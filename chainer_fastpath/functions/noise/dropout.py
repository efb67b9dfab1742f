"""``Dropout``: its passed type checks are cached."""
from chainer.functions.noise import dropout

from chainer_fastpath._core._registry import Compiled

ENTRIES = (Compiled(dropout.Dropout, type_check=()),)
