# cython: boundscheck=True, wraparound=True
"""Compiled ``_lstm`` of ``chainer.functions.rnn.n_step_lstm``: the cell the
compiled ``n_step_rnn_impl`` runs per time step of ``F.n_step_lstm`` and
``F.n_step_bilstm``, with ``_stack_weight`` in it.

It calls the very functions stock's cell calls, each read from the module's
globals where stock's cell reads it, with the same arguments in the same
order, so it applies the same nodes and builds the same graph.
"""
from chainer.functions.rnn import n_step_lstm

from chainer_fastpath._core._audit import is_chainers

ENTRIES = ()

cdef dict _globals = n_step_lstm.__dict__
cdef object _cell = n_step_lstm._lstm
cdef object _stack_weight = n_step_lstm._stack_weight
# Captured when the patch first loads: a replacement made before then is
# never taken for stock's.
cdef bint _stock = is_chainers(_cell) and is_chainers(_stack_weight)


cdef object _global(str name):
    # A global of n_step_lstm as a function of it reads it.
    try:
        return _globals[name]
    except KeyError:
        raise NameError("name '%s' is not defined" % name) from None


cdef bint is_stock_lstm(object f):
    """Whether ``f`` is stock's ``_lstm``."""
    return _stock and f is _cell


cdef object _stack(list ws):
    # _stack_weight(ws) as the cell calls it: the module's function, which
    # stacks the matrices on axis 1 and merges the first two axes.
    stack_weight = _global('_stack_weight')
    if stack_weight is not _stack_weight:
        return stack_weight(ws)
    w = _global('stack').stack(ws, axis=1)
    shape = w.shape
    return _global('reshape').reshape(
        w, (shape[0] * shape[1],) + shape[2:])


cdef tuple lstm_step(object x, object h, object c, object w, object b):
    """``_lstm(x, h, c, w, b)``: ``(h, c)`` of the next step; each global
    read where stock's cell reads it."""
    xw = _stack([w[2], w[0], w[1], w[3]])
    hw = _stack([w[6], w[4], w[5], w[7]])
    xb = _stack([b[2], b[0], b[1], b[3]])
    hb = _stack([b[6], b[4], b[5], b[7]])
    xs = _global('linear').linear(x, xw, xb)
    hs = _global('linear').linear(h, hw, hb)
    c_bar, h_bar = _global('lstm').lstm(c, xs + hs)
    return h_bar, c_bar
