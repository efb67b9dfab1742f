import sys

import pytest

import chainer_fastpath
from chainer_fastpath import _patch


@pytest.fixture(autouse=True)
def _restore_patch_state():
    """Every test starts stock with zeroed counters, and leaves it so."""
    chainer_fastpath.disable()
    chainer_fastpath.reset_stats()
    yield
    _patch.install(())
    chainer_fastpath.reset_stats()


@pytest.fixture
def spy(monkeypatch):
    """``spy(owner, name)`` replaces ``owner.name`` (until the test ends)
    with a wrapper that calls the original and records each call's
    positional arguments in the list it returns."""
    def install(owner, name):
        calls = []
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls.append(args)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)
        return calls
    return install


@pytest.fixture
def python_calls():
    """``python_calls(fn, function)``: how many times ``fn()`` runs the
    Python code of ``function`` (0 where compiled code stands for it)."""
    def count(fn, function):
        code = function.__code__
        calls = []

        def profile(frame, event, arg):
            if event == 'call' and frame.f_code is code:
                calls.append(1)

        sys.setprofile(profile)
        try:
            fn()
        finally:
            sys.setprofile(None)
        return len(calls)
    return count


@pytest.fixture
def patched_stats():
    """``patched_stats(fn, entry='FunctionNode.backward')``: runs ``fn()``
    patched from zeroed counters; returns the counts of ``entry`` (``fast``,
    ``fallback``: reason -> count)."""
    def run(fn, entry='FunctionNode.backward'):
        with chainer_fastpath.enabled():
            chainer_fastpath.reset_stats()
            fn()
            return chainer_fastpath.stats()[entry]
    return run
