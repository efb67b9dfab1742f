"""Bernoulli's log_prob (``BernoulliLogProb``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.distributions as D
from chainer.distributions import bernoulli

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, run_both, variable as _v)
from chainer_fastpath.testing.cases import function_tests

f16, f32, f64 = numpy.float16, numpy.float32, numpy.float64


def _binary(*shape, dtype=f32):
    return numpy.asarray(numpy.random.uniform(size=shape) > 0.5, dtype)


def _log_prob(x, binary_check=False):
    return lambda logit: D.Bernoulli(
        logit=logit, binary_check=binary_check).log_prob(x)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'log_prob': lambda: (_log_prob(_binary(3, 4)), [_v(3, 4, low=-5,
                                                       high=5)]),
    'float16': lambda: (_log_prob(_binary(5, dtype=f16)),
                        [_v(5, low=-5, high=5, dtype=f16)]),
    'float64': lambda: (_log_prob(_binary(5, dtype=f64)),
                        [_v(5, low=-5, high=5, dtype=f64)]),
    '0d': lambda: (_log_prob(_binary(dtype=f32)), [_v(low=-5, high=5)]),
    'empty': lambda: (_log_prob(_binary(0, 3)), [_v(0, 3)]),
    'broadcast': lambda: (_log_prob(_binary(2, 3, 4)), [_v(3, 4)]),
    'variable_x': lambda: (
        lambda logit: D.Bernoulli(logit=logit).log_prob(
            chainer.Variable(_binary(4))), [_v(4)]),
    'binary_check': lambda: (
        _log_prob(numpy.array([0.0, 1.0, 0.5, -0.0], f32), True), [_v(4)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'log_prob': lambda d: applied(_log_prob(_binary(3, 4, dtype=d)),
                                  _v(3, 4, low=-5, high=5, dtype=d)),
    'binary_check': lambda d: applied(
        _log_prob(numpy.array([0.0, 1.0, 0.5, -0.0], d), True),
        _v(4, dtype=d)),
    'transposed': lambda d: applied(
        _log_prob(_binary(4, 3, dtype=d).T),
        chainer.Variable(_v(4, 3, low=-5, high=5, dtype=d).array.T)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['log_prob'],
    compiled_forward=dict.fromkeys(
        ['log_prob', 'float16', '0d', 'broadcast', 'binary_check'],
        bernoulli.BernoulliLogProb.forward)))


def _extreme_logits(dtype):
    # Infinite logits, where the log-probability is log(x) or log(1 - x);
    # NaNs; logits whose exp(-logit) overflows.
    logit = chainer.Variable(numpy.array(
        [numpy.inf, numpy.inf, -numpy.inf, -numpy.inf, numpy.nan, 1.0,
         -200.0, -200.0], dtype))
    x = numpy.array([0.0, 1.0, 0.0, 1.0, 1.0, numpy.nan, 0.0, 1.0], dtype)
    return logit, x


@pytest.mark.parametrize('dtype', [f16, f32, f64])
@pytest.mark.parametrize('binary_check', [False, True])
def test_extreme_logits_same_as_stock(dtype, binary_check):
    def fn():
        logit, x = _extreme_logits(dtype)
        with numpy.errstate(all='ignore'):
            y = D.Bernoulli(logit=logit,
                            binary_check=binary_check).log_prob(x)
            chainer.functions.sum(y).backward()
        return y.array, logit.grad
    check_same(fn)


def test_extreme_logits_ignored_are_compiled(compiled_instead):
    logit, x = _extreme_logits(f32)

    def fn():
        with numpy.errstate(all='ignore'):
            return D.Bernoulli(logit=logit).log_prob(x)
    compiled_instead(fn, bernoulli.BernoulliLogProb.forward)


@pytest.mark.parametrize('errstate', [{}, {'all': 'raise'}, {'all': 'warn'},
                                      {'divide': 'raise'}])
@pytest.mark.parametrize('x', [[0.5, -1.0], [2.0, 1.0], [0.0, 1.0]])
def test_x_outside_zero_one_same_as_stock(x, errstate):
    # log(x) and log(1 - x) run under errstate(divide='ignore',
    # invalid='raise'): stock raises on a negative.
    def fn():
        with numpy.errstate(**errstate):
            return D.Bernoulli(logit=_v(2)).log_prob(
                numpy.array(x, f32)).array
    check_error_same(fn)


def test_mixed_dtypes_same_as_stock():
    check_error_same(lambda: D.Bernoulli(logit=_v(3)).log_prob(
        _binary(3, dtype=f64)).array)


def test_node_attributes_same_as_stock():
    def fn():
        logit = chainer.Variable(numpy.array([numpy.inf, -numpy.inf, 1.0],
                                             f32))
        with numpy.errstate(all='ignore'):
            y = bernoulli._bernoulli_log_prob(
                logit, numpy.array([1.0, 0.5, 0.0], f32), True)
        node = y.creator
        return (node.logit_ispinf, node.logit_isminf, node.invalid,
                node._input_indexes_to_retain)
    check_same(fn)


def test_overflow_in_exp_same_as_stock():
    # exp(-logit) overflows float32: stock warns from its line.
    def fn():
        y = D.Bernoulli(logit=_v(3, low=-100, high=-90)).log_prob(
            _binary(3))
        return y.array
    stock, patched = run_both(lambda: _warned(fn))
    assert stock == patched


def _warned(fn):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        out = fn()
    return out.tobytes(), [(w.category, str(w.message), w.filename,
                            w.lineno) for w in caught]


@pytest.mark.parametrize('case', ['broadcast', '0d', 'variable_x',
                                  'mixed_dtypes'])
def test_backward_of_other_operands_same_as_stock(case):
    # Operands the compiled backward leaves to stock (a broadcast x, a 0-d
    # logit) and ones it takes (x a Variable): the same gradients, or
    # stock's error for x of another dtype.
    def fn():
        logit = _v(3, 4)
        x = {'broadcast': _binary(2, 3, 4), '0d': None,
             'variable_x': chainer.Variable(_binary(3, 4)),
             'mixed_dtypes': _binary(3, 4, dtype=f64)}[case]
        if case == '0d':
            logit, x = _v(), _binary(dtype=f32)
        y = D.Bernoulli(logit=logit).log_prob(x)
        chainer.functions.sum(y).backward()
        gx = x.grad if isinstance(x, chainer.Variable) else None
        return logit.grad, gx
    check_error_same(fn)


@pytest.mark.parametrize('errstate', [{}, {'all': 'raise'}, {'all': 'warn'},
                                      {'all': 'call'}])
def test_overflow_in_the_backward_same_as_stock(errstate):
    # exp(-logit) overflows in the backward's Exp node, and gy * dlogit in
    # its Mul: stock's nodes warn, raise or call back from their lines.
    def fn():
        calls = []
        logit = _v(3, low=-100, high=-90)
        with numpy.errstate(all='ignore'):
            y = D.Bernoulli(logit=logit).log_prob(_binary(3))
        y.grad = numpy.full(3, 3e38, f32)
        with numpy.errstate(**errstate):
            old = numpy.seterrcall(lambda *a: calls.append(a))
            try:
                error = _warned_error(y.backward)
            finally:
                numpy.seterrcall(old)
        return error, calls, logit.grad
    stock, _ = check_same(fn)
    (error, warned), calls, _ = stock
    assert error or warned or calls


def _warned_error(fn):
    import warnings
    from chainer_fastpath.testing import error_of
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        error = error_of(fn)
    return error, [(w.category, str(w.message), w.filename, w.lineno)
                   for w in caught]


@pytest.mark.parametrize('owner,name', [
    (bernoulli.BernoulliLogProb, 'backward'),
    (chainer.functions.math.exponential, 'exp'),
    (chainer.functions.array.where, 'where'),
    (chainer.functions.math.basic_math.Sub, 'forward'),
    (chainer.functions.math.sum, 'sum_to')])
def test_mock_in_the_backward_is_called(mock_is_called, owner, name):
    def fn():
        logit = _v(3, 4)
        y = D.Bernoulli(logit=logit).log_prob(_binary(3, 4))
        chainer.functions.sum(y).backward()
    mock_is_called(owner, name, fn)
