import sys
import traceback
import warnings

import pytest

import chainer_fastpath
from chainer_fastpath import _patch
from chainer_fastpath._core import _objects

# As a program that calls enable() before it makes its Variables: the
# nodes of every graph in these tests keep their attributes in their values
# (tests/core/test_objects.py checks a late enable() too).
_objects.reserve_keys()


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


def _innermost_frame(error):
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return frame.filename, frame.lineno, frame.name


def floating_point_outcome(fn, warning_mode='always', errstate=None,
                           frames=True):
    """What ``fn(keep)`` does under ``numpy.errstate(**errstate)`` (with
    ``call``: a callback that records its arguments and its caller's file
    and line) and the warnings filter ``warning_mode``: 'always',
    'default' and 'once' (``fn`` runs twice, so the registries count),
    'module' (warnings from modules named ``chainer...`` ignored) or
    'error'. Returns its error (type, message, and with ``frames`` the
    innermost frame it was raised in), the warnings (category, message,
    file, line), the callback's calls, and the arrays and gradients of the
    Variables ``fn`` put in ``keep``."""
    import numpy

    calls = []

    def callback(kind, flag):
        caller = sys._getframe(1)
        calls.append((kind, flag, caller.f_code.co_filename,
                      caller.f_lineno))

    keep = []
    error = None
    with warnings.catch_warnings(record=True) as caught:
        if warning_mode == 'module':
            warnings.simplefilter('always')
            warnings.filterwarnings('ignore', module='chainer')
        else:
            warnings.simplefilter(warning_mode)
        with numpy.errstate(call=callback, **(errstate or {})):
            try:
                for _ in range(2 if warning_mode in ('default', 'once')
                               else 1):
                    fn(keep)
            except Exception as e:
                error = (type(e).__name__, str(e).split('\n')[0])
                if frames:
                    error += _innermost_frame(e)
    return {
        'error': error,
        'warnings': [(w.category.__name__, str(w.message), w.filename,
                      w.lineno) for w in caught],
        'calls': calls,
        'state': [(v.array, v.grad) for v in keep],
    }


@pytest.fixture
def fpe_outcome():
    """``floating_point_outcome`` (see there)."""
    return floating_point_outcome
