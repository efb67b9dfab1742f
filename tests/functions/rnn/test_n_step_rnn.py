"""The NStep RNNs' CPU loop (``n_step_rnn_impl`` with its helpers and the
cells ``_lstm``, ``_gru`` and ``n_step_rnn_base``'s ``f``), stock vs
patched: outputs, every gradient, the nodes a function hook sees (class
and input shapes, in order), dropout's draws, errors; and stock's loop
wherever something it stands for was replaced."""
import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L
from chainer.functions.rnn import n_step_gru, n_step_lstm, n_step_rnn

import chainer_fastpath
from chainer_fastpath.testing import (
    assert_same, check_error_same, check_same, run_both)

ROW = 'n_step_rnn.n_step_rnn_impl'
# kind -> (weights per direction and layer, the public functions: uni, bi)
KINDS = {
    'lstm': (8, F.n_step_lstm, F.n_step_bilstm),
    'gru': (6, F.n_step_gru, F.n_step_bigru),
    'tanh': (2, F.n_step_rnn, F.n_step_birnn),
    'relu': (2, F.n_step_rnn, F.n_step_birnn),
}
DTYPES = [numpy.float16, numpy.float32, numpy.float64]


class Recorder(chainer.FunctionHook):
    """Records each node a forward or backward applies: its class and its
    inputs' shapes."""

    name = 'Recorder'

    def __init__(self):
        self.calls = []

    def forward_preprocess(self, function, in_data):
        self.calls.append(('forward', type(function).__name__,
                           [None if x is None else x.shape
                            for x in in_data]))

    def backward_preprocess(self, function, in_data, out_grad):
        self.calls.append(('backward', type(function).__name__,
                           [None if x is None else x.shape
                            for x in in_data]))


def _var(rng, shape, dtype):
    return chainer.Variable(rng.uniform(-1, 1, shape).astype(dtype))


def _arguments(kind, n_layers, bi, lengths, units, in_size, dtype, seed=0):
    # (hx, cx or None, ws, bs, xs) for the function of kind; xs transposed
    # (lengths sorted down), as the functions take them.
    rng = numpy.random.RandomState(seed)
    weights = KINDS[kind][0]
    directions = 2 if bi else 1
    half = weights // 2
    batch = len(lengths)
    hx = _var(rng, (n_layers * directions, batch, units), dtype)
    cx = (_var(rng, (n_layers * directions, batch, units), dtype)
          if kind == 'lstm' else None)
    ws, bs = [], []
    for layer in range(n_layers):
        for _ in range(directions):
            inputs = in_size if layer == 0 else units * directions
            ws.append([_var(rng, (units, inputs if j < half else units),
                            dtype) for j in range(weights)])
            bs.append([_var(rng, (units,), dtype) for _ in range(weights)])
    steps = max(lengths) if lengths else 0
    xs = [_var(rng, (sum(1 for n in lengths if n > t), in_size), dtype)
          for t in range(steps)]
    return hx, cx, ws, bs, xs


def _call(kind, n_layers, dropout, bi, args):
    hx, cx, ws, bs, xs = args
    fn = KINDS[kind][2 if bi else 1]
    if kind == 'lstm':
        return fn(n_layers, dropout, hx, cx, ws, bs, xs)
    if kind == 'gru':
        hy, ys = fn(n_layers, dropout, hx, ws, bs, xs)
    else:
        hy, ys = fn(n_layers, dropout, hx, ws, bs, xs, activation=kind)
    return hy, None, ys


def _loss(outputs):
    # A weighted sum of every output, so that each gradient differs.
    terms = []
    for y in outputs:
        if y is not None:
            w = numpy.linspace(-1, 1, y.size).reshape(y.shape)
            terms.append(F.sum(y * w.astype(y.dtype)))
    return F.sum(F.stack(terms)) if terms else None


def _run(kind, n_layers, dropout, bi, lengths, dtype, units=3, in_size=4,
         backward=True):
    # Outputs, gradients and the hook's record of one call.
    args = _arguments(kind, n_layers, bi, lengths, units, in_size, dtype)
    recorder = Recorder()
    with recorder:
        hy, cy, ys = _call(kind, n_layers, dropout, bi, args)
        if backward:
            loss = _loss([hy, cy] + list(ys))
            loss.backward()
    hx, cx, ws, bs, xs = args
    grads = [v.grad for v in [hx, cx] + sum(ws, []) + sum(bs, []) + xs
             if v is not None]
    return ([hy.array, None if cy is None else cy.array],
            [y.array for y in ys], type(ys), grads, recorder.calls)


def _check(*args, **kwargs):
    chainer_fastpath.reset_stats()
    stock, patched = run_both(lambda: _run(*args, **kwargs))
    assert_same(stock, patched)
    return chainer_fastpath.stats().get(ROW)


@pytest.mark.parametrize('kind', sorted(KINDS))
@pytest.mark.parametrize('n_layers', [1, 2, 3])
@pytest.mark.parametrize('bi', [False, True])
@pytest.mark.parametrize('dropout', [0.0, 0.4])
def test_same_graph_and_gradients(kind, n_layers, bi, dropout):
    stats = _check(kind, n_layers, dropout, bi, [4, 3, 3, 1], numpy.float32)
    assert stats == {'fast': 1, 'fallback': {}}


@pytest.mark.parametrize('kind', sorted(KINDS))
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('lengths', [[3, 3, 3], [5, 2, 1], [1], [2, 2, 0]])
def test_dtypes_and_lengths(kind, dtype, lengths):
    stats = _check(kind, 2, 0.25, True, lengths, dtype)
    assert stats == {'fast': 1, 'fallback': {}}


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_without_backprop(kind):
    with chainer.no_backprop_mode():
        stats = _check(kind, 2, 0.3, True, [3, 2], numpy.float32,
                       backward=False)
    assert stats['fast'] == 1


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_test_mode_draws_nothing(kind):
    with chainer.using_config('train', False):
        stats = _check(kind, 2, 0.5, False, [3, 1], numpy.float64)
    assert stats['fast'] == 1


def _second_order(kind, bi):
    args = _arguments(kind, 2, bi, [3, 2], 3, 4, numpy.float64)
    hx, cx, ws, bs, xs = args
    hy, cy, ys = _call(kind, 2, 0.0, bi, args)
    inputs = [hx, xs[0], ws[0][0]]
    gxs = chainer.grad([_loss([hy, cy] + list(ys))], inputs,
                       enable_double_backprop=True)
    _loss(gxs).backward()
    return [g.array for g in gxs], [v.grad for v in inputs]


@pytest.mark.parametrize('kind', sorted(KINDS))
@pytest.mark.parametrize('bi', [False, True])
def test_double_backprop(kind, bi):
    check_same(lambda: _second_order(kind, bi))


# -- the links, which sort, permute and transpose around the loop ----------

LINKS = {
    'lstm': (L.NStepLSTM, L.NStepBiLSTM),
    'gru': (L.NStepGRU, L.NStepBiGRU),
    'tanh': (L.NStepRNNTanh, L.NStepBiRNNTanh),
    'relu': (L.NStepRNNReLU, L.NStepBiRNNReLU),
}


def _link_run(kind, bi, n_layers, states, dtype):
    link = LINKS[kind][bi](n_layers, 4, 3, 0.2)
    link.cleargrads()
    rng = numpy.random.RandomState(1)
    xs = [rng.uniform(-1, 1, (n, 4)).astype(dtype) for n in (2, 4, 1, 3)]
    directions = 2 if bi else 1
    shape = (n_layers * directions, len(xs), 3)
    hx = (chainer.Variable(rng.uniform(-1, 1, shape).astype(dtype))
          if states else None)
    recorder = Recorder()
    with recorder:
        if kind == 'lstm':
            cx = (chainer.Variable(rng.uniform(-1, 1, shape).astype(dtype))
                  if states else None)
            hy, cy, ys = link(hx, cx, xs)
        else:
            hy, ys = link(hx, xs)
            cy = None
        _loss([hy, cy] + list(ys)).backward()
    return ([hy.array, None if cy is None else cy.array],
            [y.array for y in ys], [p.grad for p in link.params()],
            None if hx is None else hx.grad, recorder.calls)


@pytest.mark.parametrize('kind', sorted(LINKS))
@pytest.mark.parametrize('bi', [False, True])
@pytest.mark.parametrize('n_layers', [1, 2])
@pytest.mark.parametrize('states', [False, True])
def test_links(kind, bi, n_layers, states):
    chainer_fastpath.reset_stats()
    check_same(lambda: _link_run(kind, bi, n_layers, states, numpy.float32))
    assert chainer_fastpath.stats()[ROW] == {'fast': 1, 'fallback': {}}


# -- errors: stock's, from the same node or the same indexing --------------

def _error_case(kind, change):
    def fn():
        args = list(_arguments(kind, 2, True, [3, 2], 3, 4, numpy.float32))
        n_layers = change(args)
        hy, cy, ys = _call(kind, n_layers, 0.0, True, args)
    return fn


def _unsorted(args):
    args[4].reverse()
    return 2


def _short_hx(args):
    args[0] = args[0][:3]
    return 2


def _hx_batch(args):
    args[0] = args[0][:, :1]
    return 2


def _few_weights(args):
    del args[2][-1]
    return 2


def _weight_count(args):
    del args[2][1][-1]
    return 2


def _weight_shape(args):
    args[2][2][-1] = args[2][2][-1][:, :2]
    return 2


def _bias_shape(args):
    args[3][0][-1] = args[3][0][-1][:2]
    return 2


@pytest.mark.parametrize('kind', sorted(KINDS))
@pytest.mark.parametrize('change', [
    _short_hx, _few_weights, _weight_count, _weight_shape,
    _bias_shape, lambda args: 3, lambda args: -1, lambda args: 2.0,
])
def test_errors(kind, change):
    assert check_error_same(_error_case(kind, change)) is not None


@pytest.mark.parametrize('kind', sorted(KINDS))
@pytest.mark.parametrize('change', [
    _unsorted, _hx_batch, lambda args: 0, lambda args: True])
def test_odd_arguments(kind, change):
    # Stock takes these (a step longer than the one before it, one state
    # broadcast over the batch, no layer, a bool for n_layers), or raises:
    # the patch does the same.
    check_error_same(_error_case(kind, change))


# -- stock's loop where something it stands for was replaced ---------------

def _spy(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize('module, name, kind', [
    (n_step_rnn, '_one_directional_loop', 'gru'),
    (n_step_rnn, '_dropout_sequence', 'tanh'),
    (n_step_lstm, '_lstm', 'lstm'),
    (n_step_lstm, '_stack_weight', 'lstm'),
    (n_step_gru, '_gru', 'gru'),
])
def test_replaced_helper_is_called(monkeypatch, module, name, kind):
    calls = _spy(monkeypatch, module, name)
    stock, patched = run_both(
        lambda: _run(kind, 2, 0.5, True, [3, 2], numpy.float32))
    assert_same(stock, patched)
    assert len(calls) % 2 == 0 and calls[:len(calls) // 2] == calls[
        len(calls) // 2:] and calls


def test_replaced_helper_falls_back_counted(monkeypatch):
    _spy(monkeypatch, n_step_rnn, '_one_directional_loop')
    stats = _check('lstm', 1, 0.0, False, [2], numpy.float32)
    assert stats == {'fast': 0,
                     'fallback': {'n_step_rnn helpers replaced': 1}}


def test_replaced_function_is_called(monkeypatch):
    # The functions the loop calls are read from stock's globals
    # (F.separate is no patch target, so the spy stays on, patched).
    calls = _spy(monkeypatch, F, 'separate')

    def run():
        del calls[:]
        return _run('lstm', 2, 0.0, True, [3, 1], numpy.float32), len(calls)

    chainer_fastpath.reset_stats()
    stock, patched = check_same(run)
    assert stock[1] >= 2   # hx and cx; the backward of F.stack too
    assert chainer_fastpath.stats()[ROW]['fast'] == 1


class _SwapAfterFirst(chainer.FunctionHook):
    """After the first node, replaces ``module.name`` by a spy (a user's
    hook that patches a function in the middle of a call)."""

    name = 'SwapAfterFirst'

    def __init__(self, monkeypatch, module, name):
        self.monkeypatch, self.module, self.name = monkeypatch, module, name
        self.calls = None

    def forward_postprocess(self, function, in_data):
        if self.calls is None:
            self.calls = _spy(self.monkeypatch, self.module, self.name)


@pytest.mark.parametrize('module, name, kind', [
    (n_step_rnn, '_one_directional_loop', 'gru'),
    (n_step_rnn, '_dropout_sequence', 'tanh'),
    (n_step_lstm, '_stack_weight', 'lstm'),
    (n_step_lstm.linear, 'linear', 'lstm'),
    (n_step_gru.split_axis, 'split_axis', 'gru'),
    (n_step_rnn.concat, 'concat', 'relu'),
])
def test_replaced_in_the_middle_of_a_call(monkeypatch, module, name, kind):
    # Each global is read where stock reads it: a replacement made by a hook
    # after the first node is called as often as stock calls it.
    def run():
        hook = _SwapAfterFirst(monkeypatch, module, name)
        with hook:
            result = _run(kind, 2, 0.5, True, [3, 2], numpy.float32,
                          backward=False)
        monkeypatch.undo()
        return result, len(hook.calls)

    stock, patched = check_same(run)
    assert stock[1] > 0


def test_debug_mode_is_stock():
    with chainer.using_config('debug', True):
        stats = _check('lstm', 1, 0.0, True, [2, 1], numpy.float32)
    assert stats == {'fast': 0, 'fallback': {'debug mode': 1}}


def test_unusual_arguments_are_stock():
    def run():
        hx, cx, ws, bs, xs = _arguments('gru', 1, False, [2], 3, 4,
                                        numpy.float32)
        ws = [tuple(w) for w in ws]
        hy, ys = F.n_step_gru(1, 0.0, hx, ws, bs, tuple(xs))
        return hy.array, [y.array for y in ys]

    chainer_fastpath.reset_stats()
    check_same(run)
    assert chainer_fastpath.stats()[ROW]['fast'] == 1

    def arrays():
        hx, cx, ws, bs, xs = _arguments('tanh', 1, False, [2], 3, 4,
                                        numpy.float32)
        xs = [x.array for x in xs]
        hy, ys = F.n_step_rnn(1, 0.0, hx.array, ws, bs, xs)
        return hy.array, [y.array for y in ys]

    check_same(arrays)


def _relaid(layout):
    # A copy of a Variable's array in another layout, values unchanged
    # (or NaN and infinities in place of some, for 'special').
    def relay(v):
        a = v.array
        if layout == 'F':
            a = numpy.asfortranarray(a)
        elif layout == 'strided':
            wide = numpy.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
            wide[..., ::2] = a
            a = wide[..., ::2]
        elif layout == 'special' and a.size:
            a = a.copy()
            a.flat[::5] = numpy.nan
            a.flat[1::7] = numpy.inf
            a.flat[2::11] = -numpy.inf
        return chainer.Variable(a)
    return relay


@pytest.mark.parametrize('kind', sorted(KINDS))
@pytest.mark.parametrize('layout', ['F', 'strided', 'special'])
def test_layouts_and_special_values(kind, layout):
    def run():
        relay = _relaid(layout)
        hx, cx, ws, bs, xs = _arguments(kind, 2, True, [3, 2, 2], 3, 4,
                                        numpy.float32)
        ws = [[relay(w) for w in group] for group in ws]
        xs = [relay(x) for x in xs]
        if cx is not None:
            cx = relay(cx)
        hy, cy, ys = _call(kind, 2, 0.5, True, (relay(hx), cx, ws, bs, xs))
        _loss([hy, cy] + list(ys)).backward()
        return ([hy.array, None if cy is None else cy.array,
                 [y.array for y in ys]],
                [w.grad for w in sum(ws, [])], [x.grad for x in xs])

    chainer_fastpath.reset_stats()
    check_same(run)
    assert chainer_fastpath.stats()[ROW] == {'fast': 1, 'fallback': {}}


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_empty_input_size(kind):
    stats = _check(kind, 2, 0.5, True, [2, 1], numpy.float32, in_size=0)
    assert stats == {'fast': 1, 'fallback': {}}


class _Sub(numpy.ndarray):
    pass


def test_other_array_types_are_stock():
    def run():
        hx, cx, ws, bs, xs = _arguments('lstm', 1, False, [2, 1], 3, 4,
                                        numpy.float32)
        xs = [chainer.Variable(x.array.view(_Sub)) for x in xs]
        hy, cy, ys = F.n_step_lstm(1, 0.0, hx, cx, ws, bs, xs)
        return hy.array, cy.array

    chainer_fastpath.reset_stats()
    check_same(run)
    assert chainer_fastpath.stats()[ROW] == {
        'fast': 0, 'fallback': {'not NumPy arrays': 1}}


@pytest.mark.parametrize('kind', sorted(KINDS))
@pytest.mark.parametrize('ratio', [1.5, -0.1])
def test_bad_dropout_ratio(kind, ratio):
    # Stock's error from F.dropout, once the first layer's nodes and draws
    # are done (the second layer's inputs are the first to be dropped out).
    def fn():
        args = _arguments(kind, 2, False, [2, 1], 3, 4, numpy.float32)
        _call(kind, 2, ratio, False, args)

    assert check_error_same(fn) is not None
