"""F.broadcast_to (``BroadcastTo``) and F.broadcast (``Broadcast``),
stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import broadcast
from chainer.functions.math import sum as sum_mod

from chainer_fastpath.testing import (
    applied, gradients, check_error_same, check_same, error_of,
    strided_variable, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests


def _both(a, b):
    ya, yb = F.broadcast(a, b)
    return ya * 2 + yb


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'broadcast_to': lambda: (lambda a: F.broadcast_to(a, (2, 3)),
                             [_v(1, 3)]),
    'broadcast': lambda: (F.broadcast, [_v(2, 1, 3), _v(4, 1)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'broadcast_to': lambda d: applied(lambda a: F.broadcast_to(a, (2, 3)),
                                      _v(1, 3, dtype=d)),
    'broadcast_to_lead': lambda d: applied(
        lambda a: F.broadcast_to(a, (4, 2, 3)), _v(2, 1, dtype=d)),
    'broadcast_to_0d': lambda d: applied(
        lambda a: F.broadcast_to(a, (2, 3)), _v(dtype=d)),
    'broadcast_to_strided': lambda d: applied(
        lambda a: F.broadcast_to(a, (2, 2, 3)),
        strided_variable(2, 1, 3, dtype=d)),
    'broadcast_to_empty': lambda d: applied(
        lambda a: F.broadcast_to(a, (0, 3)), _v(1, 3, dtype=d)),
    'broadcast': lambda d: applied(_both, _v(2, 1, 3, dtype=d),
                                   _v(4, 1, dtype=d)),
    'broadcast_same_shape': lambda d: applied(_both, _v(2, 3, dtype=d),
                                              _v(2, 3, dtype=d)),
    'broadcast_one_output': lambda d: applied(
        lambda a, b: F.broadcast(a, b)[1], _v(2, 3, dtype=d),
        _v(3, dtype=d)),
    'broadcast_strided': lambda d: applied(
        _both, strided_variable(3, 1, dtype=d), _v(4, dtype=d)),
    # CRF1d's alpha[..., None] against its cost matrix: the gradients are
    # summed over the last axis (pairwise) and over the first.
    'broadcast_crf': lambda d: applied(_both, _v(3, 45, 1, dtype=d),
                                       _v(45, 45, dtype=d)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['broadcast_to_lead', 'broadcast']))


@pytest.mark.parametrize('fn,method', [
    (lambda x: F.broadcast_to(x, (4, 3)), broadcast.BroadcastTo.forward),
    (lambda x: F.broadcast(x, x[0]), broadcast.Broadcast.forward),
], ids=['broadcast_to', 'broadcast'])
def test_forward_is_compiled(fn, method, compiled_instead):
    x = _v(1, 3)
    compiled_instead(lambda: fn(x), method)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('fn', [
    lambda: F.broadcast_to(_v(2, 3), (3, 3)),
    lambda: F.broadcast_to(_v(2, 3), (3,)),
    lambda: F.broadcast(_v(2, 3), _v(3, 2)),
], ids=['to_shape', 'to_fewer_dims', 'broadcast'])
def test_bad_input_same_error_as_stock(fn, type_check):
    def run():
        with chainer.using_config('type_check', type_check):
            fn()
    assert check_error_same(run) is not None


def test_int_inputs_same_as_stock():
    def fn():
        a = chainer.Variable(numpy.arange(3))
        b = chainer.Variable(numpy.arange(2).reshape(2, 1))
        return [y.array for y in F.broadcast(a, b)] + [
            F.broadcast_to(a, (2, 3)).array]
    check_same(fn)


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(1, 3)
    type_check_is_cached(broadcast.BroadcastTo,
                         lambda: F.broadcast_to(x, (2, 3)))
    type_check_is_cached(broadcast.Broadcast, lambda: F.broadcast(x, x[0]))


@pytest.mark.parametrize('owner,name', [
    (broadcast.Broadcast, 'forward'),
    (sum_mod.SumTo, 'forward'),
    (F, 'sum_to'),
    (chainer.utils, 'sum_to'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['broadcast'], numpy.float32))


def _layout(a):
    # What a user may read of an output array besides its items.
    return (a.shape, a.strides, a.dtype, a.flags.c_contiguous,
            a.flags.f_contiguous, a.flags.owndata, a.flags.writeable,
            a.base is None)


@pytest.mark.parametrize('fn', [
    lambda: [F.broadcast_to(_v(1, 3), (2, 1, 3))],
    lambda: [F.broadcast_to(strided_variable(2, 3), (4, 2, 3))],
    lambda: [F.broadcast_to(_v(2, 3), (2, 3))],
    lambda: F.broadcast(_v(2, 1, 3), _v(4, 1)),
    lambda: F.broadcast(_v(2, 3), _v(2, 3)),
    lambda: F.broadcast(chainer.Variable(numpy.broadcast_to(
        numpy.zeros((1, 3), numpy.float32), (2, 3))), _v(4, 1, 1)),
], ids=['to', 'to_strided', 'to_same_shape', 'arrays', 'arrays_same_shape',
        'arrays_of_read_only'])
def test_output_views_same_as_stock(fn):
    # Strides, flags (read-only, or writeable with a warning on a write),
    # dtype and base as NumPy makes them; the warnings of reading the flag.
    check_same(lambda: warned(lambda: [_layout(y.array) for y in fn()]))


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('errstate', ['ignore', 'raise'])
def test_gradient_summed_over_one_axis_same_as_stock(dtype, errstate):
    # BroadcastTo's backward sums its gradient over the broadcast axes
    # (utils.sum_to); over one axis that rows follow, in C. The gradient's
    # bits, and its layout (a view of the sum where a leading axis goes),
    # are stock's, NaNs, zeros of both signs and overflows included.
    rng = numpy.random.RandomState(3)
    special = numpy.array([0.0, -0.0, numpy.inf, -numpy.inf, numpy.nan,
                           numpy.finfo(dtype).max], dtype)
    cases = []
    for _ in range(60):
        shape = tuple(rng.randint(1, 5, rng.randint(1, 4)))
        small = list(shape)
        if rng.rand() < 0.5:
            small[rng.randint(len(small))] = 1
        lead = rng.randint(0, 3)
        target = tuple(rng.randint(1, 4, lead)) + shape
        gy = rng.uniform(-2, 2, target).astype(dtype)
        flat = gy.reshape(-1)
        at = rng.rand(flat.size) < [0, 0.2][rng.randint(2)]
        flat[at] = rng.choice(special, int(at.sum()))
        cases.append((tuple(small), target, gy))

    def fn():
        out = []
        with numpy.errstate(all=errstate):
            for small, target, gy in cases:
                x = chainer.Variable(numpy.ones(small, dtype))
                y = F.broadcast_to(x, target)
                y.grad = gy.copy()
                error = error_of(y.backward)
                g = x.grad
                out.append((error, g, None if g is None else (
                    g.flags.owndata, g.flags.c_contiguous, g.strides)))
        return out
    check_same(fn)
