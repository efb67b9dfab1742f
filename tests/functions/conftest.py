"""Checks each compiled function's tests share: its compiled code is the
code that runs, and whatever a user or a test mocks is still called."""
import warnings

import numpy
import pytest

from chainer_fastpath.testing import check_same, error_of, gradients


@pytest.fixture
def compiled_backward_is_used(patched_stats):
    """``compiled_backward_is_used(build)``: asserts that backward from
    the output of ``build(float32)`` (a gradient case) takes a compiled
    backward and leaves nothing to stock."""
    def check(build):
        counts = patched_stats(lambda: gradients(build, numpy.float32))
        assert counts['fast'] >= 1
        assert counts['fallback'] == {}
    return check


@pytest.fixture
def compiled_instead(python_calls):
    """``compiled_instead(fn, function)``: asserts that ``fn()`` runs the
    Python code of ``function`` stock and never patched; returns how many
    times stock ran it."""
    import chainer_fastpath

    def check(fn, function):
        stock = python_calls(fn, function)
        assert stock >= 1
        with chainer_fastpath.enabled():
            assert python_calls(fn, function) == 0
        return stock
    return check


@pytest.fixture
def mock_is_called(spy, patched_stats):
    """``mock_is_called(owner, name, fn)``: spies on ``owner.name`` and
    asserts that ``fn()`` calls it, patched as often as stock; returns the
    patched run's backward fallbacks (reason -> count)."""
    def check(owner, name, fn):
        calls = spy(owner, name)
        fn()
        stock_calls = len(calls)
        del calls[:]
        reasons = patched_stats(fn)['fallback']
        assert stock_calls >= 1
        assert len(calls) == stock_calls
        return reasons
    return check


@pytest.fixture
def type_check_is_cached(python_calls):
    """``type_check_is_cached(cls, fn)``: asserts that ``fn()``, which
    applies a ``cls`` node, runs ``cls.check_type_forward`` every time
    stock, and patched not again once it passed for the same dtypes and
    shapes."""
    import chainer_fastpath
    from chainer_fastpath._core import _type_check

    def check(cls, fn):
        check_type_forward = cls.check_type_forward   # own or inherited
        assert python_calls(fn, check_type_forward) >= 1
        with chainer_fastpath.enabled():
            assert cls in _type_check.audited_classes()
            fn()
            assert python_calls(fn, check_type_forward) == 0
    return check


@pytest.fixture
def errstate_acts_as_stock():
    """``errstate_acts_as_stock(fn, mode)``: asserts that ``fn()``, which
    raises floating-point errors, under ``numpy.errstate`` of ``mode``
    ('raise', 'call' or 'warn') for all but underflow, raises, calls and
    warns as stock (category, message, file and line)."""
    def check(fn, mode):
        def run():
            calls = []
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter('always')
                with numpy.errstate(over=mode, under='ignore', invalid=mode,
                                    divide=mode):
                    old = numpy.seterrcall(lambda *a: calls.append(a))
                    try:
                        error = error_of(fn)
                    finally:
                        numpy.seterrcall(old)
            return (error, calls,
                    [(w.category, str(w.message), w.filename, w.lineno)
                     for w in caught])
        stock, _ = check_same(run)
        assert stock[0] or stock[1] or stock[2]
    return check
