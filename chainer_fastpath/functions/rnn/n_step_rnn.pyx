# cython: boundscheck=True, wraparound=True
"""Compiled ``n_step_rnn_impl`` of ``chainer.functions.rnn.n_step_rnn``:
the CPU loop over layers, directions and time steps behind every NStep RNN
(``F.n_step_lstm``, ``F.n_step_gru``, ``F.n_step_rnn`` and their
bi-directional kinds, and the ``L.NStep*`` links), with
``_one_directional_loop``, ``_dropout_sequence`` and the three cells
(stock's ``_lstm``, ``_gru`` and ``n_step_rnn_base``'s ``f``) in it.

It calls the functions stock's loop calls (``F.separate``,
``F.split_axis``, ``F.concat``, ``F.dropout``, ``F.stack`` and the cells'
own), each read from the module's globals where stock reads it (a helper
or cell replaced meanwhile is called as stock would call it), with the same
arguments in the same order: the same nodes, the same dropout draws, the
same graph. Anything else (NumPy arrays only, no iDeep, no debug mode, no
static graph, stock's helpers and cells, the usual argument types) runs
stock's loop, counted.
"""
import types

import numpy

import chainer
from chainer.backends import intel64
from chainer.functions.rnn import n_step_rnn

from chainer_fastpath._core import _stats
from chainer_fastpath._core._audit import is_chainers

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath.functions.rnn.n_step_gru cimport is_stock_gru, gru_step
from chainer_fastpath.functions.rnn.n_step_lstm cimport (
    is_stock_lstm, lstm_step)

ENTRIES = ()

cdef type _ndarray = numpy.ndarray
cdef type _Variable = chainer.Variable
cdef type _function = types.FunctionType
cdef dict _globals = n_step_rnn.__dict__
cdef object _loop = n_step_rnn._one_directional_loop
cdef object _dropout_sequence = n_step_rnn._dropout_sequence


cdef object _rnn_cell_code():
    # The code of the cell ``f`` that n_step_rnn_base defines per call.
    for const in n_step_rnn.n_step_rnn_base.__code__.co_consts:
        if (type(const) is types.CodeType and const.co_name == 'f'
                and const.co_freevars == ('activation',)):
            return const
    return None


cdef object _rnn_code = _rnn_cell_code()
# Captured when the patch first loads: a replacement made before then is
# never taken for stock's.
cdef bint _stock = (
    is_chainers(n_step_rnn.n_step_rnn_impl) and is_chainers(_loop)
    and is_chainers(_dropout_sequence)
    and is_chainers(n_step_rnn.n_step_rnn_base))

# The kinds of cell.
cdef enum:
    _RNN, _GRU, _LSTM


cdef object _global(str name):
    # A global of n_step_rnn as a function of it reads it.
    try:
        return _globals[name]
    except KeyError:
        raise NameError("name '%s' is not defined" % name) from None


cdef object _rnn_activation(object f):
    # Where f is n_step_rnn_base's cell, its activation ('tanh' or
    # 'relu'); else None.
    if (type(f) is not _function or f.__code__ is not _rnn_code
            or f.__globals__ is not _globals or f.__defaults__ is not None
            or f.__kwdefaults__ is not None):
        return None
    activation = f.__closure__[0].cell_contents
    if type(activation) is str and activation in ('tanh', 'relu'):
        return activation
    return None


cdef tuple _rnn_step(str activation, object x, object h, object w,
                     object b):
    # n_step_rnn_base's f(x, h, None, w, b): (h, None) of the next step.
    xw, hw = w
    xb, hb = b
    xs = _global('linear').linear(x, xw, xb)
    hs = _global('linear').linear(h, hw, hb)
    if activation == 'tanh':
        return _global('tanh').tanh(xs + hs), None
    return _global('relu').relu(xs + hs), None


cdef inline bint _numpy(object v):
    # Whether v is a NumPy array or a Variable holding one.
    if type(v) is _ndarray:
        return True
    return isinstance(v, _Variable) and type(v.array) is _ndarray


cdef str _unusual(object n_layers, object hx, object cx, object ws,
                  object bs, object xs, Py_ssize_t direction,
                  Py_ssize_t weights):
    # Why stock's loop must run for these arguments (before anything is
    # applied), or None. Stock's own errors for the usual types come from
    # the nodes, which both loops apply alike; anything else is stock's.
    if type(n_layers) is not int or n_layers < 0:
        return 'n_layers not an int'
    if not (type(ws) is list or type(ws) is tuple) or not (
            type(bs) is list or type(bs) is tuple):
        return 'ws or bs neither list nor tuple'
    if not (type(xs) is list or type(xs) is tuple):
        return 'xs neither list nor tuple'
    if n_layers > len(ws) or direction * n_layers > min(len(ws), len(bs)):
        return 'fewer weights than layers'
    cdef Py_ssize_t n = direction * n_layers
    if not _numpy(hx) or cx is not None and not _numpy(cx):
        return 'not NumPy arrays'
    for i in range(n):
        for group in (ws[i], bs[i]):
            if not (type(group) is list or type(group) is tuple):
                return 'weights neither list nor tuple'
            if len(group) != weights:
                return 'number of weights'
            for v in group:
                if not _numpy(v):
                    return 'not NumPy arrays'
    for x in xs:
        if not _numpy(x):
            return 'not NumPy arrays'
    return None


cdef tuple _one_directional(int kind, str activation, object f, object xs,
                            object h, object c, object w, object b):
    # _one_directional_loop(f, xs, h, c, w, b): (h, c, [h per step]),
    # or what the module's _one_directional_loop returns where it is not
    # stock's.
    loop = _global('_one_directional_loop')
    if loop is not _loop:
        return loop(f, xs, h, c, w, b)
    cdef list h_list = []
    cdef Py_ssize_t batch
    cdef bint need_split
    for x in xs:
        batch = len(x)
        need_split = len(h) > batch
        if need_split:
            h, h_rest = _global('split_axis').split_axis(h, [batch], axis=0)
            if c is not None:
                c, c_rest = _global('split_axis').split_axis(
                    c, [batch], axis=0)
        if kind == _LSTM:
            h, c = lstm_step(x, h, c, w, b)
        elif kind == _GRU:
            h, c = gru_step(x, h, w, b)
        else:
            h, c = _rnn_step(activation, x, h, w, b)
        h_list.append(h)
        if need_split:
            h = _global('concat').concat([h, h_rest], axis=0)
            if c is not None:
                c = _global('concat').concat([c, c_rest], axis=0)
    return h, c, h_list


cdef object _dropped(object xs, object dropout_ratio):
    # _dropout_sequence(xs, dropout_ratio), the module's where it is not
    # stock's.
    sequence = _global('_dropout_sequence')
    if sequence is not _dropout_sequence:
        return sequence(xs, dropout_ratio)
    return [_global('dropout').dropout(x, ratio=dropout_ratio) for x in xs]


cdef tuple _impl(int kind, str activation, object f, object n_layers,
                 object dropout_ratio, object hx, object cx, object ws,
                 object bs, object xs, bint bi):
    # n_step_rnn_impl's body, on arguments _unusual accepts; each global
    # read where stock's reads it.
    cdef Py_ssize_t direction = 2 if bi else 1
    hx = _global('chainer').functions.separate(hx)
    cdef bint use_cell = cx is not None
    if use_cell:
        cx = _global('chainer').functions.separate(cx)
    else:
        cx = [None] * len(hx)
    xs_next = xs
    h_forward = None
    cdef list hy = [], cy = []
    cdef Py_ssize_t layer, idx
    for layer in range(n_layers):
        for idx in range(direction * layer, direction * (layer + 1)):
            if layer == 0:
                xs = xs_next
            else:
                xs = _dropped(xs_next, dropout_ratio)
            h, c, h_list = _one_directional(
                kind, activation, f,
                xs if idx == direction * layer else reversed(xs),
                hx[idx], cx[idx], ws[idx], bs[idx])
            hy.append(h)
            cy.append(c)
            if not bi:
                xs_next = h_list
            elif idx == direction * layer:
                h_forward = h_list
            else:
                h_list.reverse()
                xs_next = [_global('concat').concat([hf, hb], axis=1)
                           for hf, hb in zip(h_forward, h_list)]
    h_stacked = _global('stack').stack(hy)
    c_stacked = _global('stack').stack(cy) if use_cell else None
    return h_stacked, c_stacked, tuple(xs_next)


# -- n_step_rnn_impl ---------------------------------------------------------

TARGETS = ((n_step_rnn, 'n_step_rnn_impl'),)

cdef EntryStats _stats_impl = _stats.entry('n_step_rnn.n_step_rnn_impl')
cdef object _original = None


def bind(owner, attribute, original):
    """Keeps stock's ``n_step_rnn_impl`` to fall back to; returns its
    replacement."""
    global _original
    if _original is None:
        _original = original
    return n_step_rnn_impl_


cdef str _why_stock():
    # Why the loop is stock's whatever its arguments, or None.
    if not _stock:
        return 'replaced before enable()'
    if (_globals.get('_one_directional_loop') is not _loop
            or _globals.get('_dropout_sequence') is not _dropout_sequence):
        return 'n_step_rnn helpers replaced'
    cdef ConfigView config = ConfigView.current()
    if config.get('debug'):
        return 'debug mode'
    if config.get('schedule_func') is not None:
        return 'static graph (schedule_func)'
    if config.get('use_ideep') != 'never' and intel64.is_ideep_available():
        return 'iDeep'
    return None


cdef int _kind(object f):
    # Which of stock's cells f is, or -1.
    if is_stock_lstm(f):
        return _LSTM
    if is_stock_gru(f):
        return _GRU
    return -1 if _rnn_activation(f) is None else _RNN


def n_step_rnn_impl_(f, n_layers, dropout_ratio, hx, cx, ws, bs, xs,
                     use_bi_direction):
    """Drop-in for ``n_step_rnn_impl``: ``(hy, cy, ys)``, from the same
    nodes in the same order."""
    cdef int kind = -1
    cdef str activation = None
    cdef bint bi = False
    cdef str why = _why_stock()
    if why is None:
        kind = _kind(f)
        if kind < 0:
            why = 'cell not stock'
        elif kind == _RNN:
            activation = _rnn_activation(f)
    if why is None:
        bi = bool(use_bi_direction)
        why = _unusual(n_layers, hx, cx, ws, bs, xs, 2 if bi else 1,
                       8 if kind == _LSTM else 6 if kind == _GRU else 2)
        if why is None and (cx is None) != (kind != _LSTM):
            why = 'cell states'
    if why is not None:
        _stats_impl.fallback(why)
        return _original(f, n_layers, dropout_ratio, hx, cx, ws, bs, xs,
                         use_bi_direction)
    _stats_impl.fast += 1
    return _impl(kind, activation, f, n_layers, dropout_ratio, hx, cx, ws, bs,
                 xs, bi)
