"""The optimizers part's replacements look like the stock functions they
replace, as ``functools.wraps`` makes them: introspection, ``inspect`` and
pickling by name see stock's."""
import inspect
import pickle

import pytest

import chainer_fastpath
from chainer_fastpath import _patch

ROWS = [r for r in _patch.table() if r.part == 'optimizers']


@pytest.mark.parametrize('row', ROWS, ids=lambda r: r.name)
def test_replacement_looks_like_the_original(row):
    new, old = row.replacement, row.original
    for attribute in ('__module__', '__name__', '__qualname__', '__doc__',
                      '__annotations__'):
        assert getattr(new, attribute) == getattr(old, attribute), attribute
    assert new.__wrapped__ is old
    assert inspect.signature(new) == inspect.signature(old)


@pytest.mark.parametrize('row', ROWS, ids=lambda r: r.name)
def test_replacement_pickles_by_stocks_name(row):
    with chainer_fastpath.enabled(forward=False, backward=False,
                                  optimizers=True):
        patched = getattr(row.owner, row.attribute)
        assert patched is row.replacement
        data = pickle.dumps(patched)
        assert b'chainer_fastpath' not in data
        assert pickle.loads(data) is patched
    assert pickle.loads(data) is row.original
