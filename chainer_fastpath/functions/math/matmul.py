"""``MatMul``: its passed type checks are cached."""
from chainer.functions.math import matmul

from chainer_fastpath._core._registry import Compiled

ENTRIES = (Compiled(matmul.MatMul, type_check=('transa', 'transb')),)
