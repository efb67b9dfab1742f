"""Fast path for ``Variable.backward``."""
from chainer_fastpath._stats cimport EntryStats
from chainer_fastpath import _stats

cdef EntryStats _stats_backward = _stats.entry('Variable.backward')
cdef object _original_backward = None


def bind(original):
    """Gives the module the stock ``backward`` it falls back to."""
    global _original_backward
    _original_backward = original


def backward(self, retain_grad=False, enable_double_backprop=False,
             loss_scale=None):
    """Drop-in for ``Variable.backward``."""
    _stats_backward.fallback('not implemented yet')
    return _original_backward(self, retain_grad, enable_double_backprop,
                              loss_scale)
