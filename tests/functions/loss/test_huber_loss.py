"""F.huber_loss (``HuberLoss``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
import chainer_fastpath
from chainer.functions.loss import huber_loss
from chainer.functions.math import basic_math
from chainer.functions.math import clip

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of,
    gradients, strided_variable, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests


def _huber(delta=1.0, reduce='sum_along_second_axis'):
    return lambda x, t: F.huber_loss(x, t, delta, reduce)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'sum': lambda: (_huber(), [_v(3, 4, low=-3, high=3), _v(3, 4)]),
    'no': lambda: (_huber(0.5, 'no'), [_v(3, 4, low=-3, high=3),
                                       _v(3, 4)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'sum': lambda d: applied(_huber(), _v(3, 4, low=-3, high=3, dtype=d),
                             _v(3, 4, dtype=d)),
    'sum_3d': lambda d: applied(_huber(0.3), _v(2, 3, 2, dtype=d),
                                _v(2, 3, 2, dtype=d)),
    'no': lambda d: applied(_huber(0.5, 'no'),
                            _v(3, 4, low=-3, high=3, dtype=d),
                            _v(3, 4, dtype=d)),
    'int_delta': lambda d: applied(_huber(1, 'no'),
                                   _v(5, low=-3, high=3, dtype=d),
                                   _v(5, dtype=d)),
    'target_constant': lambda d: applied(
        _huber(), _v(3, 4, dtype=d),
        _v(3, 4, dtype=d, requires_grad=False)),
    'strided': lambda d: applied(_huber(), strided_variable(3, 2, dtype=d),
                                 _v(3, 2, dtype=d)),
    'empty': lambda d: applied(_huber(), _v(0, 2, dtype=d),
                               _v(0, 2, dtype=d)),
    '0d': lambda d: applied(_huber(1.0, 'no'), _v(dtype=d), _v(dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['sum', 'no']))


def test_forward_is_compiled(compiled_instead):
    x, t = _v(3, 4), _v(3, 4)
    compiled_instead(lambda: F.huber_loss(x, t, 1.0),
                     huber_loss.HuberLoss.forward)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('x,t', [
    (numpy.zeros((2, 3), numpy.float32), numpy.zeros((2, 3))),
    (numpy.zeros((2, 3), numpy.float32), numpy.zeros((3, 2), numpy.float32)),
    (numpy.zeros(3, numpy.float32), numpy.zeros(3, numpy.float32)),
    (numpy.arange(6).reshape(2, 3), numpy.arange(6).reshape(2, 3)),
], ids=['dtypes', 'shapes', '1d', 'int'])
def test_bad_input_same_error_as_stock(x, t, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.huber_loss(x, t, 1.0).array
    check_error_same(fn)


@pytest.mark.parametrize('delta', [0, -1.0])
def test_delta_not_positive_is_left_to_stock(delta, patched_stats):
    def fn():
        x, t = _v(3, 4), _v(3, 4)
        y = F.huber_loss(x, t, delta)
        y.grad = numpy.ones(3, numpy.float32)
        return error_of(y.backward), x.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: HuberLoss': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x, t = _v(3, 4), _v(3, 4)
    type_check_is_cached(huber_loss.HuberLoss,
                         lambda: F.huber_loss(x, t, 1.0))


@pytest.mark.parametrize('owner,name', [
    (huber_loss.HuberLoss, 'forward'),
    (huber_loss.HuberLoss, 'retain_inputs'),
    (clip.Clip, 'forward_cpu'),
    (clip.Clip, 'check_type_forward'),
    (F, 'clip'),
    (F, 'expand_dims'),
    (basic_math.Sub, 'forward'),
    (basic_math.Mul, 'forward'),
    (basic_math.Neg, 'forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['sum'], numpy.float32))


def _edge_values(rng, shape, dtype, delta, share):
    # Differences at the kinks (|d| = delta, |d| = delta / 2), zeros of
    # both signs, tiny and huge values, infinities and NaNs among uniform
    # ones.
    x = rng.uniform(-3 * delta, 3 * delta, shape).astype(dtype)
    t = rng.uniform(-3 * delta, 3 * delta, shape).astype(dtype)
    info = numpy.finfo(dtype)
    special = numpy.array([0.0, -0.0, delta, -delta, delta / 2,
                           info.tiny / 3, -info.tiny, info.max / 2,
                           -info.max, numpy.inf, -numpy.inf, numpy.nan],
                          dtype)
    for a in (x, t):
        flat = a.reshape(-1)
        at = rng.rand(flat.size) < share
        flat[at] = rng.choice(special, int(at.sum()))
    return x, t


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('reduce', ['sum_along_second_axis', 'no'])
@pytest.mark.parametrize('errstate', ['ignore', 'warn', 'raise'])
@pytest.mark.parametrize('then', ['grad', 'mean'])
def test_random_edges_same_as_stock(dtype, reduce, errstate, then):
    # The one-pass loops round each of stock's operations as NumPy's loops
    # do; NaNs and flags the error state acts on go back to NumPy.
    rng = numpy.random.RandomState(7)
    cases = []
    for _ in range(60):
        delta = [1.0, 0.3, 1, 2, 1e-20, 1e20, 7.5e-23][rng.randint(7)]
        shape = tuple(rng.randint(0, 5, rng.randint(2, 4)))
        share = rng.choice([0, 0.05, 0.3])
        cases.append((delta, _edge_values(rng, shape, dtype, delta, share)))

    def fn():
        out = []
        with numpy.errstate(all=errstate):
            for delta, (x, t) in cases:
                x = chainer.Variable(x.copy())
                t = chainer.Variable(t.copy())

                result = []

                def run():
                    y = F.huber_loss(x, t, delta, reduce)
                    result.append(y.array)
                    if then == 'mean':    # gy: one item, broadcast
                        y = F.mean(y)
                    y.grad = numpy.ones_like(y.array)
                    y.backward()
                out.append((warned(run), result, x.grad, t.grad))
        return out
    check_same(fn)


def test_fused_loops_are_taken():
    # The cases above would pass with every node left to NumPy's path.
    # The forward's own loop makes one array where NumPy's path holds two
    # (tracemalloc traces NumPy's allocations), and the backward's never
    # reaches the clip of NumPy's Python.
    import tracemalloc
    from unittest import mock
    x = _v(1000, 100, dtype=numpy.float64)
    t = _v(1000, 100, dtype=numpy.float64)
    with chainer_fastpath.enabled():
        tracemalloc.start()
        try:
            y = F.huber_loss(x, t, 1.0, 'no')
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 1.5 * x.array.nbytes
        y.grad = numpy.ones_like(y.array)
        with mock.patch('numpy.core._methods._clip',
                        side_effect=AssertionError('NumPy path')):
            y.backward()
    assert x.grad is not None


def test_integer_inputs_unchecked_warn_from_stocks_frame():
    # The fuzzer's finding: with type_check off, uint8 inputs and a delta
    # out of uint8's range, NumPy's DeprecationWarning came from the
    # compiled forward's frame instead of stock's.
    def fn():
        x = numpy.arange(4, dtype=numpy.uint8)
        with chainer.using_config('type_check', False):
            return warned(lambda: F.huber_loss(x, x, 2 ** 60).array)
    check_same(fn)
