"""The entry points ``Variable.backward`` and
``chainer._backprop._backprop_to_all`` (``_fast_backward.pyx``), stock vs
patched: arguments, the loss's seed and its warnings, fallbacks."""
import warnings
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L

import chainer_fastpath
from chainer_fastpath.testing import (
    assert_same, check_same, run_both, variable as _v)


def _grads(link):
    return [(name, p.grad) for name, p in sorted(link.namedparams())]


def _counts(name='Variable.backward'):
    return chainer_fastpath.stats()[name]


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


# -- the loss's seed -----------------------------------------------------

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


def test_loss_device_as_stock_computes_it():
    # The device the loss caches, and the calls a mocked lookup sees.
    def fn():
        x = _v(3)
        loss = F.sum(x * x)
        before = loss._device
        loss.backward()
        x2 = _v(3)
        loss2 = F.sum(x2 * x2)
        from chainer import backend
        with mock.patch.object(backend, 'get_device_from_array',
                               wraps=backend.get_device_from_array) as m:
            loss2.backward()
        return (before, type(loss._device).__name__, loss.device ==
                chainer.get_device('@numpy'), x.grad, x2.grad,
                [c.args[0] is loss2.array for c in m.call_args_list])
    stock, _ = check_same(fn)
    # The loss's device first, then once per node that stock applies or
    # runs backward.
    assert stock[0] is None and stock[-1][0] and len(stock[-1]) > 1


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


def _assert_same_outcome(stock, patched):
    assert patched['warnings'] == stock['warnings']
    assert patched['error'] == stock['error']
    assert patched['calls'] == stock['calls']
    assert_same(stock['state'], patched['state'])


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


class _SeesConfig(chainer.FunctionNode):
    """Records what a backward sees of ``enable_backprop``; with ``delete``
    also deletes the thread's value, which the backward had set."""

    def __init__(self, seen, delete=False):
        self.seen = seen
        self.delete = delete

    def forward(self, inputs):
        return inputs[0] * 2,

    def backward(self, indexes, grad_outputs):
        local = chainer.config._local
        self.seen.append((chainer.config.enable_backprop,
                          hasattr(local, 'enable_backprop')))
        if self.delete:
            del chainer.config.enable_backprop
        return grad_outputs[0] * 2,


@pytest.mark.parametrize('outer', ['unset', True, False])
@pytest.mark.parametrize('double', [False, True])
@pytest.mark.parametrize('where', ['main', 'thread', 'deleted'])
def test_enable_backprop_as_using_config_sets_it(outer, double, where):
    # backward runs in ``using_config('enable_backprop', double)``: set in
    # the thread's configuration, put back or deleted after; deleted by the
    # backward itself, stock's delattr raises at the end.
    import threading

    def body(seen):
        x = _v(3)
        y = F.sum(_SeesConfig(seen, where == 'deleted').apply((x,))[0])
        try:
            y.backward(enable_double_backprop=double)
        except Exception as e:
            seen.append(type(e).__name__)
        local = chainer.config._local
        seen.append((hasattr(local, 'enable_backprop'),
                     getattr(local, 'enable_backprop', None)))
        return x.grad

    def fn():
        seen = []
        if outer != 'unset':
            chainer.config.enable_backprop = outer
        try:
            if where == 'thread':
                out = []
                t = threading.Thread(target=lambda: out.append(body(seen)))
                t.start()
                t.join()
                grad = out[0] if out else None
            else:
                grad = body(seen)
        finally:
            if hasattr(chainer.config._local, 'enable_backprop'):
                del chainer.config.enable_backprop
        return grad, seen
    stock, patched = check_same(fn)
    if outer is not False:      # else no graph: no backward to see it
        assert stock[1][0] == (double, True)
