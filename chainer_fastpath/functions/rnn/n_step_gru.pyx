# cython: boundscheck=True, wraparound=True
"""Compiled ``_gru`` of ``chainer.functions.rnn.n_step_gru``: the cell the
compiled ``n_step_rnn_impl`` runs per time step of ``F.n_step_gru`` and
``F.n_step_bigru``.

It calls the very functions and operators stock's cell calls, each read
from the module's globals where stock's cell reads it, with the same
arguments in the same order, so it applies the same nodes and builds the
same graph.
"""
from chainer.functions.rnn import n_step_gru

from chainer_fastpath._core._audit import is_chainers

ENTRIES = ()

cdef dict _globals = n_step_gru.__dict__
cdef object _cell = n_step_gru._gru
# Captured when the patch first loads: a replacement made before then is
# never taken for stock's.
cdef bint _stock = is_chainers(_cell)


cdef object _global(str name):
    # A global of n_step_gru as a function of it reads it.
    try:
        return _globals[name]
    except KeyError:
        raise NameError("name '%s' is not defined" % name) from None


cdef bint is_stock_gru(object f):
    """Whether ``f`` is stock's ``_gru``."""
    return _stock and f is _cell


cdef tuple gru_step(object x, object h, object w, object b):
    """``_gru(x, h, None, w, b)``: ``(h, None)`` of the next step; each
    global read where stock's cell reads it."""
    xw = _global('concat').concat([w[0], w[1], w[2]], axis=0)
    hw = _global('concat').concat([w[3], w[4], w[5]], axis=0)
    xb = _global('concat').concat([b[0], b[1], b[2]], axis=0)
    hb = _global('concat').concat([b[3], b[4], b[5]], axis=0)
    gru_x = _global('linear').linear(x, xw, xb)
    gru_h = _global('linear').linear(h, hw, hb)
    W_r_x, W_z_x, W_x = _global('split_axis').split_axis(gru_x, 3, axis=1)
    U_r_h, U_z_h, U_x = _global('split_axis').split_axis(gru_h, 3, axis=1)
    r = _global('sigmoid').sigmoid(W_r_x + U_r_h)
    z = _global('sigmoid').sigmoid(W_z_x + U_z_h)
    h_bar = _global('tanh').tanh(W_x + r * U_x)
    kept = 1 - z
    kept = kept * h_bar
    return kept + z * h, None
