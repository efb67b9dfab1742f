"""Floating-point exceptions of the engine's gradient sums
(``_backward/fpe_replay.pyx``) and of the loss's scaled seed
(``_fast_backward.pyx``): the same warnings, errors and callbacks as stock's,
under every warnings filter and NumPy error state."""
import numpy
import pytest

import chainer
import chainer.functions as F

from chainer_fastpath.testing import assert_same, run_both


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
