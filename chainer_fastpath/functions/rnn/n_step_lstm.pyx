# cython: boundscheck=True, wraparound=True
"""Compiled ``_lstm`` of ``chainer.functions.rnn.n_step_lstm``: the cell
the compiled ``n_step_rnn_impl`` runs per time step of ``F.n_step_lstm``
and ``F.n_step_bilstm``, with ``_stack_weight`` in it.

It calls the very functions stock's cell calls, read from the same module
globals, with the same arguments in the same order, so it applies the same
nodes and builds the same graph.
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


cdef tuple lstm_functions(object f):
    """Where ``f`` is stock's ``_lstm`` and the module's ``_stack_weight``
    stock's, the functions the cell calls (``linear.linear``,
    ``lstm.lstm``, ``stack.stack``, ``reshape.reshape``), read as it reads
    them; None otherwise."""
    if not _stock or f is not _cell or _globals.get(
            '_stack_weight') is not _stack_weight:
        return None
    return (_global('linear').linear, _global('lstm').lstm,
            _global('stack').stack, _global('reshape').reshape)


cdef object _stacked(tuple functions, list ws):
    # _stack_weight(ws): the matrices stacked on axis 1, the first two axes
    # merged.
    w = functions[2](ws, axis=1)
    shape = w.shape
    return functions[3](w, (shape[0] * shape[1],) + shape[2:])


cdef tuple lstm_step(tuple functions, object x, object h, object c,
                     object w, object b):
    """``_lstm(x, h, c, w, b)``: ``(h, c)`` of the next step."""
    xw = _stacked(functions, [w[2], w[0], w[1], w[3]])
    hw = _stacked(functions, [w[6], w[4], w[5], w[7]])
    xb = _stacked(functions, [b[2], b[0], b[1], b[3]])
    hb = _stacked(functions, [b[6], b[4], b[5], b[7]])
    linear = functions[0]
    xs = linear(x, xw, xb)
    hs = linear(h, hw, hb)
    c_bar, h_bar = functions[1](c, xs + hs)
    return h_bar, c_bar
