"""Differential testing: the same callable stock and patched, compared bit
for bit."""
import contextlib
import math
import random

import numpy

import chainer


@contextlib.contextmanager
def _mode(patched, enable_kwargs):
    import chainer_fastpath
    from chainer_fastpath import _patch

    previous = _patch.installed()
    try:
        if patched:
            if not chainer_fastpath.enable(**enable_kwargs):
                raise RuntimeError('chainer_fastpath could not be enabled')
        else:
            chainer_fastpath.disable()
        yield
    finally:
        _patch.install(previous)


def run_both(fn, seed=0, **enable_kwargs):
    """Runs ``fn()`` stock, then patched, from the same random seeds.

    ``fn`` must build everything it uses (models, inputs, optimizers) so the
    two runs share nothing. Returns ``(stock_result, patched_result)``.
    ``enable_kwargs`` select the patched parts, as in ``enable()``.
    """
    results = []
    for patched in (False, True):
        with _mode(patched, enable_kwargs):
            numpy.random.seed(seed)
            random.seed(seed)
            results.append(fn())
    return tuple(results)


def assert_same(expected, actual, path='result'):
    """Asserts two results are identical: arrays by dtype, shape and bytes,
    Variables by array and grad, containers element by element."""
    if isinstance(expected, chainer.Variable):
        assert isinstance(actual, chainer.Variable), (
            '{}: {!r} is not a Variable'.format(path, type(actual)))
        assert_same(expected.array, actual.array, path + '.array')
        assert_same(expected.grad, actual.grad, path + '.grad')
        return
    if isinstance(expected, numpy.ndarray) or isinstance(
            actual, numpy.ndarray):
        assert type(actual) is type(expected), '{}: {} vs {}'.format(
            path, type(expected), type(actual))
        assert expected.dtype == actual.dtype, '{}: dtype {} vs {}'.format(
            path, expected.dtype, actual.dtype)
        assert expected.shape == actual.shape, '{}: shape {} vs {}'.format(
            path, expected.shape, actual.shape)
        if expected.tobytes() != actual.tobytes():
            diff = numpy.argwhere(expected != actual)
            raise AssertionError('{}: arrays differ at {} places, first {}:'
                                 ' {!r} vs {!r}'.format(
                                     path, len(diff), tuple(diff[0]),
                                     expected[tuple(diff[0])],
                                     actual[tuple(diff[0])])
                                 if len(diff) else
                                 '{}: arrays differ bitwise'.format(path))
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and expected.keys() == actual.keys(), (
            '{}: keys {} vs {}'.format(path, sorted(expected),
                                       sorted(actual)))
        for k in expected:
            assert_same(expected[k], actual[k], '{}[{!r}]'.format(path, k))
        return
    if isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(
            expected), '{}: {!r} vs {!r}'.format(path, expected, actual)
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, '{}[{}]'.format(path, i))
        return
    if isinstance(expected, float) and math.isnan(expected):
        assert isinstance(actual, float) and math.isnan(actual), (
            '{}: nan vs {!r}'.format(path, actual))
        return
    assert type(expected) is type(actual) and expected == actual, (
        '{}: {!r} vs {!r}'.format(path, expected, actual))


def check_same(fn, seed=0, **enable_kwargs):
    """Runs ``fn`` stock and patched and asserts identical results."""
    stock, patched = run_both(fn, seed=seed, **enable_kwargs)
    assert_same(stock, patched)
    return stock, patched
