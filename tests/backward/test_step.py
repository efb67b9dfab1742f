"""One function node's step (``_backward/step.pyx``), stock vs patched:
function hooks, ``backward_accumulate`` overrides, stock's gradient checks
and errors, the compiled backwards standing in for stock's."""
import io
import re

import numpy
import pytest

import chainer
from chainer import function_hook
import chainer.functions as F
import chainer.links as L

import chainer_fastpath
from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, check_gradients_same, check_same, error_of,
    grad_vars, gradients, variable as _v)


def _grads(link):
    return [(name, p.grad) for name, p in sorted(link.namedparams())]


def _counts(name='Variable.backward'):
    return chainer_fastpath.stats()[name]


# -- backward_accumulate --------------------------------------------------

class _AccumulatingMul2(chainer.FunctionNode):
    def forward(self, inputs):
        return inputs[0] * 2,

    def backward_accumulate(self, target_input_indexes, grad_outputs,
                            grad_inputs):
        gx = grad_outputs[0] * 2
        g_in = grad_inputs[0]
        return (gx if g_in is None else gx + g_in),


def test_backward_accumulate_override():
    def fn():
        x = _v(3, 4)
        h = x * 3
        y = F.sum(_AccumulatingMul2().apply((h,))[0] * h) + F.sum(
            _AccumulatingMul2().apply((x,))[0])
        y.backward()
        return x.grad
    check_same(fn)


class _AccumulateReturning(chainer.FunctionNode):
    """x * 2, whose backward_accumulate returns its gradient in a
    container of the kind asked for (stock pairs it with the inputs by
    ``zip``)."""

    def __init__(self, kind):
        self.kind = kind

    def forward(self, inputs):
        return inputs[0] * 2,

    def backward_accumulate(self, target_input_indexes, grad_outputs,
                            grad_inputs):
        gx = grad_outputs[0] * 2
        if grad_inputs[0] is not None:
            gx = gx + grad_inputs[0]
        return {'tuple': lambda: (gx,),
                'list': lambda: [gx],
                'generator': lambda: (g for g in [gx]),
                'longer': lambda: (gx, gx * 5),
                'empty': lambda: ()}[self.kind]()


@pytest.mark.parametrize('kind', ['tuple', 'list', 'generator', 'longer',
                                  'empty'])
def test_backward_accumulate_result_paired_as_stock(kind):
    def fn():
        x = _v(3, 4)

        def run():
            h = F.tanh(x)
            y, = _AccumulateReturning(kind).apply((h,))
            F.sum(y * h).backward()
        # 'empty' drops h's gradient: stock's tanh backward then fails.
        return error_of(run), x.grad
    check_same(fn)


def test_backward_accumulate_replaced_on_the_base_class():
    # Stock compares the node's backward_accumulate code with the one
    # chainer.FunctionNode has now: replaced there, every node finds the
    # base's and backward runs, the replacement never (an outside probe:
    # the patched step called it for every node).
    import mock
    calls = []

    def backward_accumulate(self, target_input_indexes, grad_outputs,
                            grad_inputs):
        calls.append(type(self).__name__)
        return tuple(g * 2 for g in grad_outputs)

    def fn():
        del calls[:]
        with mock.patch.object(chainer.FunctionNode, 'backward_accumulate',
                               backward_accumulate):
            x = _v(3, 4)
            F.sum(F.tanh(x) * x).backward()
            y = _v(3, 4)
            F.sum(_AccumulatingMul2().apply((y,))[0]).backward()
        return x.grad, y.grad, list(calls)
    stock, patched = check_same(fn)
    assert stock[2] == []


# -- hooks --------------------------------------------------------------

class _Recorder(function_hook.FunctionHook):
    name = 'recorder'

    def __init__(self):
        self.calls = []

    def _rec(self, event, func, in_data, out_grad=None):
        self.calls.append((
            event, func.label,
            tuple(None if a is None else (a.shape, str(a.dtype), a.tobytes())
                  for a in in_data),
            None if out_grad is None else tuple(
                None if a is None else (a.shape, a.tobytes())
                for a in out_grad)))

    def forward_preprocess(self, func, in_data):
        self._rec('fpre', func, in_data)

    def forward_postprocess(self, func, in_data):
        self._rec('fpost', func, in_data)

    def backward_preprocess(self, func, in_data, out_grad):
        self._rec('bpre', func, in_data, out_grad)

    def backward_postprocess(self, func, in_data, out_grad):
        self._rec('bpost', func, in_data, out_grad)


def _shared_weight_net():
    lin = L.Linear(4, 4)
    x = _v(2, 4)
    h = x
    for _ in range(3):
        h = F.relu(lin(h))
    return lin, x, F.sum(h)


def test_global_hook_sees_same_calls():
    def fn():
        lin, x, loss = _shared_weight_net()
        rec = _Recorder()
        with rec:
            loss.backward()
        return rec.calls, _grads(lin), x.grad
    stock, patched = check_same(fn)
    # the summation of the shared weight's gradients is visible to hooks
    assert any(c[1] == '_ + _' for c in stock[0])


def test_local_hook_sees_same_calls():
    def fn():
        lin = L.Linear(4, 4)
        x = _v(2, 4)
        h1 = lin(x)
        rec = _Recorder()
        h1.creator.add_hook(rec)
        loss = F.sum(F.relu(lin(h1)))
        loss.backward()
        return rec.calls, _grads(lin)
    check_same(fn)


def test_timer_hook_same_calls():
    from chainer.function_hooks import TimerHook

    def fn():
        lin, x, loss = _shared_weight_net()
        hook = TimerHook()
        with hook:
            loss.backward()
        return [name for name, _ in hook.call_history], _grads(lin)
    check_same(fn)


def test_print_hook_same_output():
    from chainer.function_hooks import PrintHook

    def fn():
        lin, x, loss = _shared_weight_net()
        buf = io.StringIO()
        with PrintHook(file=buf):
            loss.backward()
        # addresses differ between any two runs
        return re.sub('0x[0-9a-f]+', 'ADDR', buf.getvalue()), _grads(lin)
    check_same(fn)


# -- errors -------------------------------------------------------------

class _BadGrad(chainer.FunctionNode):
    def __init__(self, kind):
        self.kind = kind

    def forward(self, inputs):
        return inputs[0] * 1,

    def backward(self, indexes, grad_outputs):
        gy, = grad_outputs
        if self.kind == 'dtype':
            return chainer.Variable(gy.array.astype(numpy.float64)),
        if self.kind == 'shape':
            return chainer.Variable(gy.array[:1]),
        if self.kind == 'type':
            return chainer.Variable(gy.array.tolist()),
        if self.kind == 'count':
            return gy, gy
        if self.kind == 'raise':
            raise ZeroDivisionError('boom')
        raise AssertionError


@pytest.mark.parametrize('kind', ['dtype', 'shape', 'count', 'raise'])
def test_errors_match_stock(kind):
    def fn():
        x = _v(3, 4)
        y = F.sum(_BadGrad(kind).apply((x,))[0])
        with pytest.raises(Exception) as e:
            y.backward()
        return type(e.value).__name__, str(e.value)
    stock, patched = check_same(fn)
    assert stock[0] in ('TypeError', 'ValueError', 'ZeroDivisionError')


# -- the compiled backwards, across functions ------------------------------
# Each compiled function's own backward tests are in
# tests/functions/<family>/test_<name>.py.

def _bigru(dtype):
    # NStepBiGRU over sequences of decreasing lengths, as the sequence
    # labeler runs it: split_axis, sigmoid, tanh, 1 - z, products, concat.
    with chainer.using_config('dtype', dtype):
        gru = L.NStepBiGRU(1, 3, 2, 0.0)
    xs = [_v(n, 3, dtype=dtype) for n in (4, 3, 1)]
    _, ys = gru(None, xs)
    return tuple(xs) + tuple(p for _, p in sorted(gru.namedparams())), \
        F.concat(ys, axis=0)


@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
@pytest.mark.parametrize('type_check', [True, False])
def test_gru_encoder_gradients_same_as_stock(dtype, type_check):
    check_gradients_same(_bigru, dtype, type_check)


def test_gru_encoder_backward_is_all_compiled(patched_stats):
    reasons = patched_stats(
        lambda: gradients(_bigru, numpy.float32))['fallback']
    # Only the sequence bookkeeping nodes are left to stock.
    assert set(reasons) <= {'no compiled backward: TransposeSequence',
                            'no compiled backward: Separate'}


def test_mlp_training_steps_same_as_stock():
    def fn():
        m = chainer.Sequential(L.Linear(6, 8), F.relu, L.Linear(8, 8),
                               F.sigmoid, L.Linear(8, 3))
        opt = chainer.optimizers.Adam()
        opt.setup(m)
        out = []
        for _ in range(5):
            x = _v(4, 6)
            t = numpy.random.randint(0, 3, 4).astype(numpy.int32)
            loss = F.softmax_cross_entropy(m(x), t)
            m.cleargrads()
            loss.backward()
            opt.update()
            out.append([p.array.copy() for p in m.params()])
        return out
    check_same(fn)


def test_double_backprop_does_not_use_compiled_backward():
    def fn():
        x = _v(2, 3)
        W = _v(4, 3)
        y = F.sum(F.tanh(F.linear(x, W)))
        gx, = chainer.grad([y], [x], enable_double_backprop=True)
        F.sum(gx * gx).backward()
        return grad_vars(x, W)
    check_same(fn)
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        x = _v(2, 3)
        y = F.sum(F.tanh(F.linear(x, _v(4, 3))))
        y.backward(enable_double_backprop=True)
        assert _counts('FunctionNode.backward')['fast'] == 0
        assert x.grad_var.creator is not None


def test_function_hook_sees_the_gradient_nodes():
    # A hook observes the nodes stock's backward applies: with one
    # registered, the compiled backwards stand aside.
    def linear(d):
        return applied(lambda x, W, b: F.linear(x, W, b), _v(3, 4, dtype=d),
                       _v(5, 4, dtype=d), _v(5, dtype=d))

    from chainer.function_hooks import TimerHook

    def fn():
        hook = TimerHook()
        with hook:
            gradients(linear, numpy.float32)
        return sorted(name for name, _ in hook.call_history)
    _, patched = check_same(fn)
    assert 'LinearGradWeight' in patched


# -- the gradient summed into the table by backward_into -------------------

class _DropsInputs(function_hook.FunctionHook):
    name = 'drops_inputs'

    def backward_preprocess(self, function, in_data, out_grad):
        function.inputs = ()


def test_hook_rebinding_inputs_before_the_backward_as_stock():
    # EmbedID's gradient is summed straight into the weight's: that path
    # reads the node's inputs after the hook has emptied them.
    def run():
        W = chainer.Parameter(numpy.random.rand(10, 3).astype(numpy.float32))
        y = F.embed_id(numpy.array([1, 2], numpy.int32), W)
        y.creator.add_hook(_DropsInputs())
        return error_of(lambda: F.sum(y).backward())
    stock, _ = check_same(run)
    assert stock[0] == 'IndexError'


class _KeepsTwoInputs(function_hook.FunctionHook):
    name = 'KeepsTwoInputs'

    def backward_preprocess(self, function, in_data, out_grad):
        function.inputs = function.inputs[1:]


@pytest.mark.parametrize('first_requires_grad', [False, True])
def test_hook_shortening_inputs_pairs_gradients_as_stock(
        first_requires_grad):
    # As many gradients as inputs now, but asked for inputs 1 and 2 of the
    # three there were: stock picks them by index, and fails.
    def run():
        a = _v(2, requires_grad=first_requires_grad)
        b, c = _v(2), _v(2)
        y = F.add(a, b, c)
        y.creator.add_hook(_KeepsTwoInputs())
        error = error_of(lambda: F.sum(y).backward())
        return error, b.grad, c.grad
    check_same(run)


class _ReplacesInputs(function_hook.FunctionHook):
    """Rebinds the node's inputs before its backward: to its own nodes in
    the other order, or the first to a node of no input."""
    name = 'ReplacesInputs'

    def __init__(self, how):
        self.how = how
        self.fresh = None

    def backward_preprocess(self, function, in_data, out_grad):
        if self.how == 'swapped':
            function.inputs = function.inputs[::-1]
        else:
            self.fresh = chainer.Variable(numpy.zeros(2, numpy.float32)).node
            function.inputs = (self.fresh,) + function.inputs[1:]


@pytest.mark.parametrize('how', ['swapped', 'fresh'])
def test_hook_replacing_inputs_finds_their_gradients_as_stock(how):
    # The gradients are gathered per input node before the backward, and
    # each is then added to the list of the node found at its index: the
    # other input's (swapped), or none, stock's KeyError (fresh).
    def run():
        a, b = _v(2), _v(2)
        y = a * b
        hook = _ReplacesInputs(how)
        y.creator.add_hook(hook)
        error = error_of(lambda: F.sum(y).backward())
        if error is not None:
            error = error[0], error[1] == repr(hook.fresh)
        return error, a.grad, b.grad
    stock, _ = check_same(run)
    assert (stock[0] is None) == (how == 'swapped')


def test_an_input_twice_gets_both_gradients_as_stock():
    # One node at two indexes is one key of stock's dict: both gradients
    # go to its list and are summed.
    def run():
        x = _v(3)
        y = F.sum(x * x + F.add(x, x, x))
        y.backward()
        return x.grad
    check_same(run)


@pytest.mark.parametrize('n', [8, 9, 30])
def test_many_inputs_some_twice_get_their_gradients_as_stock(n):
    # Up to eight inputs asked for are found in a flat list, more through
    # stock's dict: the same lists either way.
    def run():
        xs = [_v(2) for _ in range(n // 2 + 1)]
        inputs = [xs[i % len(xs)] for i in range(n)]
        F.sum(F.concat(inputs, axis=0) ** 2).backward()
        return [x.grad for x in xs]
    check_same(run)


@pytest.mark.parametrize('how', ['swapped', 'fresh'])
def test_hook_replacing_many_inputs_finds_their_gradients_as_stock(how):
    def run():
        xs = [_v(2) for _ in range(10)]
        y = F.concat(xs, axis=0)
        hook = _ReplacesInputs(how)
        y.creator.add_hook(hook)
        error = error_of(lambda: F.sum(y * y).backward())
        if error is not None:
            error = error[0], error[1] == repr(hook.fresh)
        return error, [x.grad for x in xs]
    check_same(run)
