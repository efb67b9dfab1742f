"""F.logsumexp (``LogSumExp``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import logsumexp
from chainer.functions.math import basic_math
from chainer.functions.math import exponential

from chainer_fastpath.testing import (
    applied, gradients, check_error_same, check_same, error_of,
    strided_variable, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'all': lambda: (F.logsumexp, [_v(3, 4)]),
    'axis': lambda: (lambda a: F.logsumexp(a, axis=1), [_v(2, 3, 4)]),
    'large': lambda: (lambda a: F.logsumexp(a, axis=0),
                      [_v(3, 4, low=50, high=90)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'all': lambda d: applied(F.logsumexp, _v(3, 4, dtype=d)),
    'axis': lambda d: applied(lambda a: F.logsumexp(a, axis=1),
                              _v(2, 3, 4, dtype=d)),
    'axes': lambda d: applied(lambda a: F.logsumexp(a, axis=(2, -3)),
                              _v(2, 3, 4, dtype=d)),
    'size_one_axis': lambda d: applied(lambda a: F.logsumexp(a, axis=1),
                                       _v(3, 1, dtype=d)),
    'strided': lambda d: applied(lambda a: F.logsumexp(a, axis=-1),
                                 strided_variable(2, 3, dtype=d)),
    'empty_batch': lambda d: applied(lambda a: F.logsumexp(a, axis=1),
                                     _v(0, 3, dtype=d)),
    '0d': lambda d: applied(F.logsumexp, _v(dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['all', 'axis']))


def test_forward_is_compiled(compiled_instead):
    x = _v(3, 4)
    compiled_instead(lambda: F.logsumexp(x, axis=1),
                     logsumexp.LogSumExp.forward)


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('x,axis', [
    (numpy.arange(6).reshape(2, 3), 1),
    (numpy.zeros((2, 3), numpy.float32), 2),
    (numpy.zeros((0, 3), numpy.float32), 0),
], ids=['int', 'axis', 'empty_axis'])
def test_bad_input_same_error_as_stock(x, axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return F.logsumexp(x, axis=axis).array
    check_error_same(fn)


@pytest.mark.parametrize('grad', [
    numpy.ones((2,), numpy.float64),
    numpy.ones((3,), numpy.float32),
], ids=['dtype', 'shape'])
def test_bad_gradient_same_as_stock(grad, patched_stats):
    def fn():
        x = _v(2, 3)
        y = F.logsumexp(x, axis=1)
        y._set_grad_var_without_check(chainer.Variable(grad))
        y.backward()
        return x.grad
    check_error_same(fn)
    assert patched_stats(lambda: error_of(fn))['fallback'] == {
        'case left to stock: LogSumExp': 1}


def test_output_dropped_before_backward_same_as_stock():
    def fn():
        x = _v(2, 3)
        loss = F.sum(F.logsumexp(x, axis=1) * 2)
        loss.backward()
        return x.grad
    check_same(fn)


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 4)
    type_check_is_cached(logsumexp.LogSumExp,
                         lambda: F.logsumexp(x, axis=1))


@pytest.mark.parametrize('owner,name', [
    (logsumexp.LogSumExp, 'forward'),
    (logsumexp.LogSumExp, 'retain_outputs'),
    (F, 'expand_dims'),
    (F, 'broadcast_to'),
    (F, 'exp'),
    (basic_math.Sub, 'forward'),
    (basic_math.Mul, 'check_type_forward'),
    (exponential.Exp, 'forward_cpu'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['axis'], numpy.float32))


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('errstate', ['ignore', 'warn', 'raise'])
def test_random_edges_same_as_stock(dtype, errstate):
    # The largest items found in C (NumPy's where an item is a NaN or the
    # largest a zero) and the exponentials summed over a middle axis in C:
    # the same bits, warnings and errors as stock's NumPy calls.
    rng = numpy.random.RandomState(5)
    special = numpy.array([0.0, -0.0, 1e30, -1e30, numpy.inf, -numpy.inf,
                           numpy.nan], dtype)
    cases = []
    for _ in range(80):
        shape = tuple(rng.randint(1, 5, rng.randint(1, 4)))
        x = rng.uniform(-5, 5, shape).astype(dtype)
        flat = x.reshape(-1)
        at = rng.rand(flat.size) < [0, 0.1, 0.4][rng.randint(3)]
        flat[at] = rng.choice(special, int(at.sum()))
        nd = len(shape)
        axis = None if rng.rand() < 0.2 else int(rng.randint(-nd, nd))
        cases.append((x, axis))

    def fn():
        out = []
        with numpy.errstate(all=errstate):
            for x, axis in cases:
                v = chainer.Variable(x.copy())
                result = []

                def run():
                    y = F.logsumexp(v, axis=axis)
                    result.append(y.array)
                    y.grad = numpy.ones_like(y.array)
                    y.backward()
                out.append((warned(run), result, v.grad))
        return out
    check_same(fn)
