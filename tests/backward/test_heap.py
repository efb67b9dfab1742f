"""The candidate heap (``_backward/heap.pyx``): function nodes taken in
stock's order, laid out as ``heapq`` lays out stock's list."""
import numpy
import pytest

from chainer import function_hook
import chainer.functions as F

from chainer_fastpath.testing import check_same, error_of, variable as _v


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
