"""Memory with the fast paths: nothing kept per call, graphs freed by
reference counting as in stock."""
import gc
import tracemalloc
import weakref

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L

import chainer_fastpath
from chainer_fastpath.testing import run_both

# A leak of one small object per call would add 64 bytes or more per call:
# 3,000 calls, 192 kB. Allocator and tracemalloc noise stays far below.
CALLS = 3000
NOISE_BYTES = 32 * 1024


def _growth(step):
    """Bytes still allocated after CALLS more calls of a warmed-up step."""
    for _ in range(200):
        step()
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(CALLS):
            step()
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return after - before


def _forward_step():
    rng = numpy.random.RandomState(0)
    x = rng.randn(1, 8).astype(numpy.float32)
    W = chainer.Parameter(rng.randn(8, 8).astype(numpy.float32))

    def step():
        F.sum(F.relu(F.linear(x, W)) + 1)
    return step


def _backward_step():
    rng = numpy.random.RandomState(0)
    model = chainer.Sequential(L.Linear(8, 8), F.tanh, L.Linear(8, 3))
    x = rng.randn(2, 8).astype(numpy.float32)
    t = numpy.array([0, 2], numpy.int32)

    def step():
        model.cleargrads()
        F.softmax_cross_entropy(model(x), t).backward()
    return step


@pytest.mark.parametrize('make_step', [_forward_step, _backward_step])
def test_no_growth_over_many_calls(make_step):
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        growth = _growth(make_step())
        stats = chainer_fastpath.stats()
    assert stats['FunctionNode.apply']['fast'] > CALLS
    assert growth < NOISE_BYTES


def test_graph_freed_without_gc_as_stock():
    # Without cycles, dropping the last Variable frees the whole graph at
    # once; a cycle made by the fast path would wait for the collector.
    def fn():
        gc.disable()
        try:
            x = chainer.Variable(numpy.ones((2, 3), numpy.float32))
            h = F.tanh(x * 2)
            y = F.sum(h)
            refs = [weakref.ref(h.creator_node), weakref.ref(y.creator_node),
                    weakref.ref(h.node)]
            y.backward()
            del h, y
            return [r() is None for r in refs]
        finally:
            gc.enable()
    stock, patched = run_both(fn)
    assert stock == [True, True, True]
    assert patched == stock
