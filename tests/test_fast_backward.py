"""Variable.backward, stock vs patched: gradients, hooks, errors and
fallbacks must be identical."""
import io
import re
from unittest import mock
import warnings

import numpy
import pytest

import chainer
from chainer import function_hook
import chainer.functions as F
import chainer.links as L

import chainer_fastpath
from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, assert_same, check_gradients_same, check_same,
    error_of, grad_vars, gradients, run_both, variable as _v)


def _grads(link):
    return [(name, p.grad) for name, p in sorted(link.namedparams())]


def _counts(name='Variable.backward'):
    return chainer_fastpath.stats()[name]


# -- networks -----------------------------------------------------------

@pytest.mark.parametrize('batch', [1, 7])
def test_mlp(batch):
    def fn():
        m = chainer.Sequential(L.Linear(32, 32), F.relu, L.Linear(32, 32),
                               F.tanh, L.Linear(32, 10))
        x = _v(batch, 32)
        t = numpy.random.randint(0, 10, batch).astype(numpy.int32)
        loss = F.softmax_cross_entropy(m(x), t)
        loss.backward()
        return loss, _grads(m), x.grad
    check_same(fn)
    assert _counts()['fast'] == 1


def test_two_backward_calls_accumulate_without_cleargrads():
    def fn():
        m = chainer.Sequential(L.Linear(5, 6), F.sigmoid, L.Linear(6, 2))
        out = []
        for _ in range(3):
            loss = F.sum(m(_v(3, 5)) ** 2)
            loss.backward()
            out.append(_grads(m))
        return out
    check_same(fn)


def test_user_grad_array_is_never_written():
    def fn():
        lin = L.Linear(4, 3)
        user = numpy.full((3, 4), 0.5, numpy.float32)
        keep = user.copy()
        lin.W.grad = user
        x = _v(2, 4)
        F.sum(lin(x) * lin(x)).backward()
        assert user.tobytes() == keep.tobytes()
        first = lin.W.grad
        first_copy = first.copy()
        F.sum(lin(x)).backward()
        # an earlier result handed to the user is not written either
        assert first.tobytes() == first_copy.tobytes()
        return _grads(lin)
    check_same(fn)


def test_rnn_shared_weights_20_steps():
    def fn():
        lstm = L.LSTM(8, 16)
        out = L.Linear(16, 4)
        loss = 0
        for _ in range(20):
            h = lstm(_v(1, 8))
            loss += F.sum(out(h) ** 2)
        loss.backward()
        return loss, _grads(lstm), _grads(out)
    check_same(fn)


def test_elman_rnn_intermediate_fanout():
    def fn():
        W = chainer.Parameter(numpy.random.randn(6, 6).astype('f'))
        h = _v(2, 6)
        h0 = h
        hs = []
        for _ in range(20):
            h = F.tanh(F.matmul(h, W) + h)   # h used twice: fan-out
            hs.append(h)
        loss = F.sum(F.concat(hs, axis=0)) + F.sum(h * h)
        loss.backward()
        return loss, W.grad, h0.grad
    check_same(fn)


def _tree(depth):
    if depth == 0 or numpy.random.rand() < 0.3:
        return int(numpy.random.randint(0, 10))
    return (_tree(depth - 1), _tree(depth - 1))


def test_recursive_net_over_random_trees():
    def fn():
        emb = L.EmbedID(10, 8)
        comp = L.Linear(16, 8)
        out = L.Linear(8, 3)

        def encode(node):
            if isinstance(node, int):
                return emb(numpy.array([node], numpy.int32))
            left, right = encode(node[0]), encode(node[1])
            return F.tanh(comp(F.concat((left, right))))

        results = []
        for _ in range(4):
            t = numpy.random.randint(0, 3, 1).astype(numpy.int32)
            loss = F.softmax_cross_entropy(out(encode(_tree(5))), t)
            loss.backward()
            results.append((loss, _grads(emb), _grads(comp), _grads(out)))
        return results
    check_same(fn)


# -- features -----------------------------------------------------------

def test_double_backprop_chainer_grad():
    def fn():
        x = _v(3, 4)
        lin = L.Linear(4, 2)
        y = F.sum(F.tanh(lin(x)) ** 3)
        gx, = chainer.grad([y], [x], enable_double_backprop=True)
        z = F.sum(gx * gx)
        z.backward()
        return y, gx, x.grad, _grads(lin)
    check_same(fn)


def test_gradient_penalty():
    def fn():
        D = chainer.Sequential(L.Linear(5, 8), F.leaky_relu, L.Linear(8, 1))
        x = _v(4, 5)
        y = F.sum(D(x))
        y.backward(enable_double_backprop=True)
        gx = x.grad_var
        penalty = F.sum((F.sqrt(F.batch_l2_norm_squared(gx)) - 1) ** 2)
        D.cleargrads()
        penalty.backward()
        return y, gx, penalty, _grads(D)
    check_same(fn)


def test_retain_grad():
    def fn():
        x = _v(3, 4)
        h = F.relu(x * 2)
        g = h + h
        y = F.sum(g * g)
        y.backward(retain_grad=True)
        return x, h, g, y
    check_same(fn)


def test_intermediate_grads_dropped_without_retain_grad():
    def fn():
        x = _v(3, 4)
        h = x * 2
        F.sum(h * h).backward()
        return x.grad, h.grad
    stock, patched = check_same(fn)
    assert patched[1] is None


@pytest.mark.parametrize('loss_scale', [None, 8.0, 3])
def test_loss_scale(loss_scale):
    def fn():
        lin = L.Linear(4, 3)
        x = _v(2, 4)
        y = F.sum(lin(x) ** 2)
        y.backward(loss_scale=loss_scale)
        return _grads(lin), lin.W._loss_scale, x.grad, x._loss_scale
    check_same(fn)


def test_grad_set_before_backward_and_nonscalar_output():
    def fn():
        x = _v(3, 4)
        y = F.tanh(x) * x
        y.grad = numpy.random.randn(3, 4).astype('f')
        y.backward()
        return x.grad, y.grad
    check_same(fn)


def test_no_grad_start():
    def fn():
        x = _v(3, 4)
        y = F.tanh(x)
        with pytest.raises(TypeError) as e:
            y.backward()      # stock passes grad None to TanhGrad
        return str(e.value), x.grad
    check_same(fn)


def test_size_one_nonscalar_warns():
    def fn():
        x = _v(1, 1)
        y = x * 3
        with pytest.warns(DeprecationWarning):
            y.backward()
        return x.grad
    check_same(fn)


def test_inputs_that_need_no_grad():
    def fn():
        x = _v(3, 4)
        c = chainer.Variable(numpy.ones((3, 4), 'f'), requires_grad=False)
        y = F.sum(x * c + c)
        y.backward()
        return x.grad, c.grad
    check_same(fn)


def test_same_input_twice_and_multiple_outputs():
    def fn():
        x = _v(6, 4)
        a, b, c = F.split_axis(x, 3, axis=0)
        y = F.sum(a * a) + F.sum(c) + F.sum(F.concat((x, x)))
        y.backward()
        return x.grad
    check_same(fn)


def test_lazy_grad_sum():
    def fn():
        with chainer.using_config('lazy_grad_sum', True):
            x = _v(3, 4)
            W = chainer.Parameter(numpy.random.randn(4, 4).astype('f'))
            h = x
            for _ in range(5):
                h = F.matmul(h, W) + h
            loss = F.sum(h)
        loss.backward()
        return x.grad, W.grad
    check_same(fn)


def test_uninitialized_param_falls_back():
    def fn():
        lin = L.Linear(None, 3)
        x = _v(2, 4)
        F.sum(lin(x)).backward()
        return _grads(lin)
    check_same(fn)


def test_chainer_backward_multiple_outputs():
    def fn():
        x = _v(3, 4)
        y1 = F.tanh(x)
        y2 = F.sigmoid(x) * x
        y1.grad = numpy.ones((3, 4), 'f')
        y2.grad = numpy.full((3, 4), 2, 'f')
        chainer.backward([y1, y2])
        return x.grad
    check_same(fn)
    assert _counts('_backprop._backprop_to_all')['fast'] == 1


class _Cube(chainer.Function):
    def forward(self, inputs):
        return inputs[0] ** 3,

    def backward(self, inputs, grad_outputs):
        return 3 * inputs[0] ** 2 * grad_outputs[0],


def test_old_style_function():
    def fn():
        x = _v(3, 4)
        y = F.sum(_Cube()(x) + _Cube()(x))
        y.backward()
        return x.grad
    check_same(fn)


def test_old_style_function_twice_differentiate_error():
    def fn():
        x = _v(3)
        y = F.sum(_Cube()(x))
        y.backward(enable_double_backprop=True)
        gx = x.grad_var
        with pytest.raises(RuntimeError) as e:
            F.sum(gx * gx).backward()
        return str(e.value)
    check_same(fn)


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


def test_error_mismatched_sum_dtype_matches_stock():
    # two gradients of one node with different dtypes: stock's F.add raises
    class _AsF64(chainer.FunctionNode):
        def forward(self, inputs):
            return inputs[0] * 1,

        def backward(self, indexes, grad_outputs):
            return chainer.Variable(
                grad_outputs[0].array.astype(numpy.float64)),

    def fn():
        x = _v(3)
        y = F.sum(_AsF64().apply((x,))[0]) + F.sum(x)
        with pytest.raises(Exception) as e:
            y.backward()
        return type(e.value).__name__, str(e.value)
    check_same(fn)


# -- fallbacks ----------------------------------------------------------

def test_debug_mode_falls_back():
    def fn():
        x = _v(3, 4)
        with chainer.using_config('debug', True):
            F.sum(x * x).backward()
        return x.grad
    check_same(fn)
    assert _counts()['fallback'] == {'debug mode': 1}
    assert _counts()['fast'] == 0


def test_subclass_falls_back():
    class MyVariable(chainer.Variable):
        pass

    def fn():
        x = _v(3)
        y = MyVariable(numpy.array(2.0, 'f'))
        y.backward()
        F.sum(x * x).backward()
        return x.grad, y.grad
    check_same(fn)
    assert _counts()['fallback'] == {'Variable subclass': 1}
    assert _counts()['fast'] == 1


def test_disable_restores_original():
    original = chainer.Variable.__dict__['backward']
    original_to_all = chainer._backprop._backprop_to_all
    chainer_fastpath.enable()
    assert chainer.Variable.__dict__['backward'] is not original
    chainer_fastpath.disable()
    assert chainer.Variable.__dict__['backward'] is original
    assert chainer._backprop._backprop_to_all is original_to_all


def test_graph_is_freed():
    import gc
    import weakref

    def fn():
        lin = L.Linear(4, 4)
        x = _v(2, 4)
        h = F.relu(lin(x))
        ref = weakref.ref(h.creator_node)
        loss = F.sum(h + h)
        loss.backward()
        del h, loss
        gc.collect()
        return ref() is None
    stock, patched = run_both(fn)
    assert stock == patched


def test_shared_weight_sums_skip_f_add():
    """The in-place path is taken: no Add nodes are applied for the sums."""
    def fn():
        lstm = L.LSTM(3, 4)
        loss = 0
        for _ in range(5):
            loss += F.sum(lstm(_v(1, 3)))
        chainer_fastpath.reset_stats()
        loss.backward()
        return _grads(lstm), _counts('FunctionNode.apply')['fast']
    _, (grads_fwd_only, applies_fwd_only) = run_both(fn, backward=False)
    stock, (grads_both, applies_both) = run_both(fn)
    assert_same(stock[0], grads_both)
    assert_same(grads_fwd_only, grads_both)
    assert applies_both < applies_fwd_only


@pytest.mark.parametrize('retain_grad', [False, True])
@pytest.mark.parametrize('loss_scale', [None, 4.0])
def test_seeded_loss_gradient_state(retain_grad, loss_scale):
    # The ones the loss is seeded with: the same Variable state and the same
    # attributes left on the loss.
    def fn():
        x = _v(3)
        loss = F.sum(x * x)
        loss.backward(retain_grad=retain_grad, loss_scale=loss_scale)
        gv = loss.grad_var
        state = {k: v for k, v in loss.__dict__.items() if k != '_node'}
        return (list(state), state['_grad_valid'], loss.grad, x.grad,
                None if gv is None else
                [(k, type(v).__name__) for k, v in gv.__dict__.items()],
                None if gv is None else gv.requires_grad)
    check_same(fn)



@pytest.mark.parametrize('dtype, loss_scale, action', [
    (numpy.int32, 1e30, 'ignore'),        # the ints cannot take a float
    (numpy.float16, 1e30, 'error'),       # overflow raised as an error
])
def test_seeded_loss_when_scaling_raises(dtype, loss_scale, action):
    # Stock sets the loss's grad to ones, then scales it in place: when the
    # scaling raises, the loss keeps the grad it had by then.
    def fn():
        x = chainer.Variable(numpy.ones(3, dtype))
        with chainer.using_config('type_check', False):
            loss = F.sum(x)
        with warnings.catch_warnings():
            warnings.simplefilter(action)
            try:
                loss.backward(loss_scale=loss_scale)
                error = None
            except Exception as e:
                error = type(e).__name__
        return error, loss.grad, x.grad
    stock, _ = check_same(fn)
    assert stock[0] is not None

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


# -- floating-point exceptions and warnings, as stock's ----------------------

def _assert_same_outcome(stock, patched):
    assert patched['warnings'] == stock['warnings']
    assert patched['error'] == stock['error']
    assert patched['calls'] == stock['calls']
    assert_same(stock['state'], patched['state'])


_BIG = 1e38     # float32: four of them overflow


def _sum_of_uses(keep, gy, *factors):
    # x's gradients, one per use, summed by the engine: the first sum a new
    # array, each later one in place.
    x = chainer.Variable(numpy.ones(len(gy), numpy.float32))
    keep.append(x)
    y = None
    for c in factors:
        term = x * chainer.Variable(numpy.array(c, numpy.float32))
        y = term if y is None else y + term
    keep.append(y)
    y.grad = numpy.array(gy, numpy.float32)
    y.backward()


def _leaf_accumulation(keep):
    x = chainer.Variable(numpy.array([2.0, 1.0], numpy.float32))
    keep.append(x)
    for _ in range(2):
        y = x * 1.0
        y.grad = numpy.array([3e38, numpy.inf], numpy.float32)
        y.backward()
        # the second time: +inf + +inf, 3e38 + 3e38


def _scaled_loss(keep):
    x = chainer.Variable(numpy.ones(3, numpy.float32))
    keep.append(x)
    F.sum(x * 1.0).backward(loss_scale=1e300)


_SUM_CASES = {
    'first sum overflows': lambda keep: _sum_of_uses(
        keep, [3e38], [1.0], [1.0]),
    'in-place sum overflows': lambda keep: _sum_of_uses(
        keep, [_BIG], [1.0], [1.0], [2.0]),
    'in-place sum overflows and is invalid': lambda keep: _sum_of_uses(
        keep, [_BIG, numpy.inf], [1.0, 1.0], [1.0, 1.0], [2.0, -1.0]),
    'leaf gradient accumulates': _leaf_accumulation,
    'loss scale overflows': _scaled_loss,
}


@pytest.mark.parametrize('errstate', [{}, {'all': 'raise'}, {'all': 'call'}],
                         ids=str)
@pytest.mark.parametrize('mode', ['always', 'default', 'module', 'error'])
@pytest.mark.parametrize('case', sorted(_SUM_CASES))
def test_gradient_sum_exceptions_same_as_stock(fpe_outcome, case, mode,
                                               errstate):
    stock, patched = run_both(
        lambda: fpe_outcome(_SUM_CASES[case], mode, errstate))
    _assert_same_outcome(stock, patched)
    assert (stock['warnings'] or stock['error'] or stock['calls']
            or mode == 'module')


def _one_element_loss(keep):
    x = chainer.Variable(numpy.ones((1, 1), numpy.float32))
    keep.append(x)
    (x * 3).backward()
    (x * 3).backward()   # a second line: the registry counts locations


@pytest.mark.parametrize('mode', ['always', 'default', 'once', 'module'])
def test_one_element_loss_warns_from_stocks_line(fpe_outcome, mode):
    stock, patched = run_both(
        lambda: fpe_outcome(_one_element_loss, mode, frames=False))
    _assert_same_outcome(stock, patched)
    assert stock['warnings'] or mode == 'module'
    assert all(w[2].endswith('chainer/variable.py')
               for w in patched['warnings'])


def test_one_element_loss_error_filtered_by_stocks_module():
    # python -W error::DeprecationWarning:chainer.variable
    def fn():
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter('default')
            warnings.filterwarnings('error', category=DeprecationWarning,
                                    module='chainer.variable')
            try:
                _one_element_loss([])
            except DeprecationWarning as e:
                return str(e)
    stock, patched = check_same(fn)
    assert stock is not None


def test_one_element_loss_warning_calls_a_mocked_warn(monkeypatch):
    # Stock calls ``warnings.warn`` as it finds it.
    import warnings
    calls = []
    monkeypatch.setattr(warnings, 'warn',
                        lambda *args, **kwargs: calls.append(args))

    def fn():
        del calls[:]
        _one_element_loss([])
        return [(str(m), c) for m, c in calls]
    stock, patched = check_same(fn)
    assert len(stock) == 2


def _sum_calls(patch_target):
    """How often a mock wrapping ``patch_target`` is called by one backward
    through a node whose two gradients are summed."""
    owner, name = patch_target()
    x = chainer.Variable(numpy.ones(2, numpy.float32))
    with mock.patch.object(owner, name, autospec=True,
                           side_effect=getattr(owner, name)) as m:
        F.sum(x * 2.0 + x * 3.0).backward()
    return m.call_count, x.grad


@pytest.mark.parametrize('patch_target', [
    lambda: (chainer.functions.math.basic_math.Add, 'forward'),
    lambda: (chainer.functions.math.basic_math.Add, 'check_type_forward'),
    lambda: (chainer.functions.math.basic_math, '_preprocess_rhs'),
], ids=['Add.forward', 'Add.check_type_forward', '_preprocess_rhs'])
def test_gradient_sum_calls_a_mocked_add_node_as_stock(patch_target):
    stock, patched = run_both(lambda: _sum_calls(patch_target))
    assert stock[0] >= 2    # the forward's add and the gradient sum
    assert_same(stock, patched)


def test_gradient_sum_calls_a_mocked_f_add_as_stock():
    def fn():
        x = chainer.Variable(numpy.ones(2, numpy.float32))
        calls = []
        add = chainer.functions.add

        def spy(*xs):
            calls.append(len(xs))
            return add(*xs)

        with mock.patch('chainer.functions.add', spy):
            F.sum(x * 2.0 + x * 3.0).backward()
        return calls, x.grad

    stock, patched = run_both(fn)
    assert stock[0] == [2]
    assert_same(stock, patched)


# --- gradient sums: the bits of stock's out-of-place sums ---

_NAN = numpy.float32(numpy.nan)


@pytest.mark.parametrize('signs', [(1, -1, -1), (-1, 1, 1), (1, 1, -1)])
@pytest.mark.parametrize('size', [1, 3, 17])
def test_gradient_sum_keeps_stocks_nan(signs, size):
    # x's gradient is the sum of three NaNs: NumPy's in-place add on few
    # elements keeps the second operand's NaN, the out-of-place one (stock's
    # F.add) the first's.
    def fn():
        x = chainer.Variable(numpy.zeros(size, numpy.float32))
        loss = sum(F.sum(x * numpy.full(size, s * _NAN, numpy.float32))
                   for s in signs)
        loss.backward()
        return x.grad.view(numpy.uint32)
    check_same(fn)


@pytest.mark.parametrize('order', ['C', 'F'])
def test_gradient_sum_has_stocks_layout(order):
    def fn():
        x = chainer.Variable(numpy.ones((2, 1, 3), numpy.float32, order=order))
        w = chainer.Variable(numpy.ones((2, 1, 3), numpy.float32, order='F'))
        loss = F.sum(x * w) + F.sum(x * 2.0) + F.sum(w * x)
        loss.backward()
        return x.grad.strides, w.grad.strides, x.grad, w.grad
    check_same(fn)


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
@pytest.mark.parametrize('size', [1, 5])
@pytest.mark.parametrize('nan', [False, True])
def test_gradient_sums_same_bits_as_stock(dtype, size, nan):
    # A gradient summed from three uses, in place where that leaves stock's
    # bits; with NaNs of both signs meeting, whose sum keeps one of them.
    def fn():
        x = chainer.Variable(numpy.linspace(-1, 1, size).astype(dtype))
        ks = (0.5, numpy.nan, -numpy.nan) if nan else (0.5, 2.0, -3.0)
        ys = [x * k for k in ks]
        loss = F.sum(ys[0] + ys[1]) + F.sum(ys[2])
        loss.backward()
        return x.grad
    check_same(fn)


class _Order(function_hook.FunctionHook):
    """Numbers the nodes as they are applied; records the numbers of those
    whose backward runs, in order."""
    name = 'order'

    def __init__(self):
        self.made = 0
        self.order = []

    def forward_preprocess(self, function, in_data):
        function._order_tag = self.made
        self.made += 1

    def backward_preprocess(self, function, in_data, out_grad):
        self.order.append(function._order_tag)


@pytest.mark.parametrize('rank', [
    None, 2 ** 70, -2 ** 63, numpy.int64(3), True, 1.5, float('nan')])
def test_candidates_taken_in_stocks_order(rank):
    # Candidates with equal ranks come in the order they were queued; a
    # rank that is not a plain int of 64 bits (replaced on some nodes after
    # the forward) makes the heap compare them as stock's heapq does, from
    # the layout stock's heap would have. Out of order, stock's table of
    # gradients fails its closing assertion: the same here.
    def fn():
        hook = _Order()
        x = _v(4)
        with hook:
            ys = [x * float(i) for i in range(7)]
            zs = [F.sin(y) + ys[(i + 3) % 7] for i, y in enumerate(ys)]
            loss = F.sum(F.stack(zs + [F.cos(z) for z in zs[::2]]))
            if rank is not None:
                for z in zs[1::3] + ys[::4]:
                    z.creator.rank = rank
            error = error_of(loss.backward)
        return hook.order, error, x.grad
    check_same(fn)


@pytest.mark.parametrize('seed', range(5))
def test_candidate_heap_is_laid_out_as_heapq_lays_it_out(seed):
    # The heap pops what heapq pops and leaves each item where heapq would,
    # so that a switch to stock's tuples (a rank that is not an int of 64
    # bits) goes on from stock's very list.
    import heapq
    from chainer_fastpath._backward import heap
    rng = numpy.random.RandomState(seed)
    ops, expected, popped, seq = [], [], [], 0
    for _ in range(300):
        if expected and rng.rand() < 0.4:
            ops.append(None)
            popped.append(heapq.heappop(expected)[2])
        else:
            rank = int(rng.randint(0, 6))
            node = object()
            ops.append((rank, seq, node))
            heapq.heappush(expected, (-rank, seq, node))
            seq += 1
    got_popped, got_heap = heap.replay(ops)
    assert got_popped == popped
    assert got_heap == expected


@pytest.mark.parametrize('ops', [[None], [()], [(1, 0)], [(0, 0, 'a'), None,
                                                          None]])
def test_candidates_replay_refuses_bad_operations(ops):
    # A pop from an empty heap, a push of no node: the test hook raises
    # rather than reading past the heap.
    from chainer_fastpath._backward import heap
    with pytest.raises((IndexError, ValueError)):
        heap.replay(ops)


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
