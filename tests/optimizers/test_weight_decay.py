"""The fused ``WeightDecay.__call__``: what it takes, what it gives back to
stock, and what a subclass, a mock or a replaced function sees.

The numerical cases (every dtype, NumPy's error states, NaN bits, large
and chunked arrays) run in test_optimizers and test_floating_point, whose
OPTIMIZERS include optimizers set up with the hook.
"""
from unittest import mock
import warnings

import numpy
import pytest

import chainer
from chainer import optimizer_hooks, optimizers

import chainer_fastpath
from chainer_fastpath.optimizers import _kernels
from chainer_fastpath.testing import bits, check_same, misaligned

FAST = dict(forward=False, backward=False, optimizers=True)
DTYPES = [numpy.float16, numpy.float32, numpy.float64]


class Model(chainer.Link):
    def __init__(self, dtype, shapes=((3, 4), (7,), (2, 3, 5))):
        super().__init__()
        with self.init_scope():
            for i, shape in enumerate(shapes):
                setattr(self, 'w%d' % i, chainer.Parameter(
                    numpy.random.uniform(-1, 1, shape).astype(dtype)))


def decay(dtype=numpy.float32, rate=0.01, hook=None, grads=None, steps=3,
          model=None):
    """Trains with SGD and a weight decay hook; returns every parameter's
    and gradient's bits after each step, or the error that ended it."""
    link = model(dtype) if model else Model(dtype)
    opt = optimizers.SGD(lr=0.1).setup(link)
    opt.add_hook(hook or optimizer_hooks.WeightDecay(rate))
    rng = numpy.random.RandomState(2)
    out = []
    for step in range(steps):
        for p in sorted(link.params(), key=lambda p: p.name):
            g = rng.uniform(-1, 1, p.shape).astype(dtype)
            p.grad = grads(g) if grads else g
        try:
            opt.update()
        except Exception as e:
            out.append((type(e).__name__, str(e)))
            break
        out.append([(bits(p.array), None if p.grad is None
                     else bits(p.grad))
                    for p in sorted(link.params(), key=lambda p: p.name)])
    return out


def weight_decay_stats():
    return chainer_fastpath.stats()['WeightDecay.__call__']


@pytest.mark.parametrize('rate', [
    1e-4, 0.5, 3, True, numpy.float32(0.01), numpy.float64(2.5),
    numpy.int64(2), 1e-30, 0.0, -0.1, float('inf')],
    ids=lambda r: '{}({})'.format(type(r).__name__, r))
@pytest.mark.parametrize('dtype', DTYPES, ids=lambda d: d.__name__)
def test_rates_same_as_stock(dtype, rate):
    with numpy.errstate(all='ignore'):
        check_same(lambda: decay(dtype, rate), **FAST)
    st = weight_decay_stats()
    assert st['fast'] + sum(st['fallback'].values()) == 3 * 3
    if rate != float('inf'):
        assert st['fast'] == 3 * 3, st


@pytest.mark.parametrize('rate, dtype', [
    (1e300, numpy.float32), (1e10, numpy.float16), (70000, numpy.float16),
    (numpy.array(0.5), numpy.float32), (1 + 2j, numpy.float32)])
def test_rates_numpy_would_promote_go_to_stock(rate, dtype):
    # The product's dtype is not the parameter's (or the scalar is one we
    # don't cast): stock computes it, and casts or raises on the add.
    with numpy.errstate(all='ignore'):
        check_same(lambda: decay(dtype, rate), **FAST)
    st = weight_decay_stats()
    assert st['fast'] == 0
    assert list(st['fallback']) == ['hyperparameter']


def test_rate_that_raises_raises_stocks_error():
    class Raising(optimizer_hooks.WeightDecay):
        def __init__(self):
            pass

        @property
        def rate(self):
            raise ArithmeticError('no rate')

    stock, _ = check_same(lambda: decay(hook=Raising()), **FAST)
    assert stock == [('ArithmeticError', 'no rate')]


def test_subclass_reads_rate_as_stock_does():
    reads = []

    class Counting(optimizer_hooks.WeightDecay):
        def __init__(self):
            pass

        @property
        def rate(self):
            reads.append(1)
            return 0.25

    def run():
        del reads[:]
        return decay(hook=Counting()), len(reads)

    stock, _ = check_same(run, **FAST)
    assert stock[1] == 3 * 3
    assert weight_decay_stats()['fast'] == 3 * 3


def test_subclass_overriding_call_is_not_touched():
    class Halved(optimizer_hooks.WeightDecay):
        def __call__(self, rule, param):
            param.grad *= 0.5
            super().__call__(rule, param)

    check_same(lambda: decay(hook=Halved(0.1)), **FAST)
    # super().__call__ reaches the fused one
    assert weight_decay_stats()['fast'] == 3 * 3


def test_mock_of_call_sees_stocks_calls():
    # Not autospec: that of a compiled function is not passed `self`.
    def run():
        with mock.patch.object(optimizer_hooks.WeightDecay,
                               '__call__') as m:
            out = decay()
        return out, [tuple(type(a).__name__ for a in c.args)
                     for c in m.call_args_list]

    stock, _ = check_same(run, **FAST)
    assert len(stock[1]) == 3 * 3


def test_using_device_replaced_is_called():
    def run():
        with mock.patch.object(chainer, 'using_device',
                               wraps=chainer.using_device) as m:
            out = decay()
        return out, m.call_count

    stock, _ = check_same(run, **FAST)
    assert stock[1] >= 3 * 3
    assert weight_decay_stats()['fast'] == 0


@pytest.mark.parametrize('case', [
    'non-contiguous', 'misaligned', 'read-only', 'same-array', 'none'])
def test_odd_gradients_same_as_stock(case):
    def grads(g):
        if case == 'non-contiguous':
            return numpy.asfortranarray(g) if g.ndim > 1 else g[::-1]
        if case == 'misaligned':
            return misaligned(g)
        if case == 'read-only':
            g.flags.writeable = False
            return g
        return None

    def run():
        if case != 'same-array':
            return decay(grads=grads)
        link = Model(numpy.float32)
        opt = optimizers.SGD(lr=0.1).setup(link)
        opt.add_hook(optimizer_hooks.WeightDecay(0.5))
        for p in link.params():
            p.grad = p.array        # the gradient is the parameter
        opt.update()
        return [bits(p.array) for p in link.params()]

    check_same(run, **FAST)


def test_loss_scaling_goes_to_stock():
    def run():
        p = chainer.Parameter(numpy.arange(6, dtype=numpy.float32))
        p.grad = numpy.ones(6, numpy.float32)
        p._loss_scale = 8.0
        optimizer_hooks.WeightDecay(0.1)(None, p)
        return bits(p.grad)

    check_same(run, **FAST)
    assert weight_decay_stats()['fallback'] == {'loss scaling': 1}


def test_variable_subclass_goes_to_stock():
    class MyParam(chainer.Parameter):
        pass

    def run():
        p = MyParam(numpy.arange(6, dtype=numpy.float32).reshape(2, 3))
        p.grad = numpy.ones((2, 3), numpy.float32)
        optimizer_hooks.WeightDecay(0.5)(None, p)
        return bits(p.grad)

    check_same(run, **FAST)
    assert weight_decay_stats()['fallback'] == {'not a plain Parameter': 1}


@pytest.mark.parametrize('dtype', DTYPES, ids=lambda d: d.__name__)
def test_nan_in_a_late_chunk_is_finished_by_stock(dtype):
    # Large arrays take one pass, chunk by chunk; a NaN in the last chunk
    # leaves that chunk to stock, the others being final.
    n = 40 * _kernels._CHUNK + 3      # past the 16 KB saved on the stack

    def grads(g):
        if g.size == n:
            g[-2] = numpy.nan
        return g

    def run():
        # The one pass is taken where NumPy's warnings are shown, not
        # raised (pytest's filters make them errors).
        with warnings.catch_warnings():
            warnings.simplefilter('always')
            return decay(dtype, 0.1, grads=grads, steps=2,
                         model=lambda d: Model(d, ((n,), (5,))))

    before = _kernels._finished_by_stock()
    check_same(run, **FAST)
    assert weight_decay_stats() == {'fast': 2, 'fallback': {'NaN': 2}}
    # SGD's update meets the NaN too
    sgd = chainer_fastpath.stats()['SGDRule.update_core_cpu']['fallback']
    assert _kernels._finished_by_stock() - before == 2 + sgd['NaN']
