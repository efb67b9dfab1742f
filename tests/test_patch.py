"""enable()/disable(): idempotence, identity restore, all-or-nothing,
version gate, environment switches, threads."""
import logging
import subprocess
import sys
import threading

import pytest

import chainer

import chainer_fastpath
from chainer_fastpath import _patch


def _current(row):
    return row.owner.__dict__[row.attribute]


def test_table_rows_name_real_originals():
    for row in _patch.table():
        assert row.part in chainer_fastpath.PARTS
        assert row.replacement is not row.original
        assert _current(row) is row.original


def test_enable_twice_is_one_enable_and_disable_restores_identity():
    originals = {(r.owner, r.attribute): _current(r) for r in _patch.table()}
    assert chainer_fastpath.enable() is True
    patched = {k: k[0].__dict__[k[1]] for k in originals}
    assert chainer_fastpath.enable() is True
    for key, fn in patched.items():
        assert key[0].__dict__[key[1]] is fn
        assert fn is not originals[key]
    assert chainer_fastpath.is_enabled()
    chainer_fastpath.disable()
    chainer_fastpath.disable()
    for key, fn in originals.items():
        assert key[0].__dict__[key[1]] is fn
    assert not chainer_fastpath.is_enabled()


def test_function_node_apply_identity():
    original = chainer.FunctionNode.apply
    chainer_fastpath.enable()
    assert chainer.FunctionNode.apply is not original
    chainer_fastpath.disable()
    assert chainer.FunctionNode.apply is original


@pytest.mark.parametrize('part', chainer_fastpath.PARTS)
def test_enable_selects_parts(part):
    chainer_fastpath.enable(**{p: p == part for p in chainer_fastpath.PARTS})
    for row in _patch.table():
        expected = row.replacement if row.part == part else row.original
        assert _current(row) is expected


def test_enable_with_fewer_parts_restores_the_others():
    chainer_fastpath.enable()
    chainer_fastpath.enable(backward=False)
    for row in _patch.table():
        if row.part == 'backward':
            assert _current(row) is row.original


def test_enabled_context_manager_restores_previous_state():
    with chainer_fastpath.enabled() as on:
        assert on is True
        assert chainer_fastpath.is_enabled()
    assert not chainer_fastpath.is_enabled()
    chainer_fastpath.enable(forward=True, backward=False, optimizers=False)
    with chainer_fastpath.enabled():
        pass
    installed = {r.part for r in _patch.installed()}
    assert installed == {'forward'}


class _Refusing:
    """An owner whose attributes cannot be set, like a sealed type."""

    def __setattr__(self, name, value):
        raise RuntimeError('refused')


def test_row_names_are_the_stats_keys():
    chainer_fastpath.enable()
    names = [row.name for row in _patch.table()]
    assert len(set(names)) == len(names)
    assert 'FunctionNode.apply' in names
    assert 'utils.force_array' in names
    # Aliases of one stock function share one replacement, counted under
    # the name of the function's own row.
    # Two counters have no row: the backward engine's calls of compiled
    # backwards, and the applies of ``apply_new`` that made no node.
    counted = set(chainer_fastpath.stats()) - {
        'FunctionNode.backward', 'FunctionNode.apply, no node'}
    assert counted <= set(names)
    assert {'functions.add', 'Variable.__radd__'} <= set(names) - counted


def test_exclude_leaves_the_named_rows_stock():
    chainer_fastpath.enable(exclude=('Link.__call__', 'Variable.backward'))
    for row in _patch.table():
        excluded = row.name in ('Link.__call__', 'Variable.backward')
        assert (_current(row) is row.original) == excluded
    # A later enable() without exclude installs them.
    chainer_fastpath.enable()
    assert chainer.Link.__dict__['__call__'] is not _patch.get_original(
        chainer.Link, '__call__')


def test_exclude_of_an_unknown_row_raises_and_touches_nothing():
    with pytest.raises(ValueError, match='Link.__cal__'):
        chainer_fastpath.enable(exclude=('Link.__cal__',))
    assert not chainer_fastpath.is_enabled()


def test_get_original_is_the_stock_object_on_or_off():
    stock = chainer.FunctionNode.__dict__['apply']
    assert chainer_fastpath.get_original(chainer.FunctionNode, 'apply') \
        is stock
    chainer_fastpath.enable()
    assert chainer.FunctionNode.apply is not stock
    assert chainer_fastpath.get_original(chainer.FunctionNode, 'apply') \
        is stock
    with pytest.raises(KeyError, match='FunctionNode.forward'):
        chainer_fastpath.get_original(chainer.FunctionNode, 'forward')


def test_failure_half_way_restores_everything(monkeypatch):
    rows = _patch.table()
    broken = _patch.Patch('backward', '_Refusing.x', _Refusing(), 'x',
                          object(), object())
    monkeypatch.setattr(_patch, '_table', rows + (broken,))
    with pytest.raises(RuntimeError, match='refused'):
        chainer_fastpath.enable()
    for row in rows:
        assert _current(row) is row.original
    assert not chainer_fastpath.is_enabled()


def test_unsupported_version_is_logged_and_touches_nothing(
        monkeypatch, caplog):
    monkeypatch.setattr(chainer, '__version__', '6.7.0')
    with caplog.at_level(logging.WARNING, logger='chainer_fastpath'):
        assert chainer_fastpath.enable() is False
    assert 'not supported' in caplog.text
    for row in _patch.table():
        assert _current(row) is row.original


def test_env_switch_off_is_a_logged_noop(monkeypatch, caplog):
    monkeypatch.setenv('CHAINER_FASTPATH', '0')
    with caplog.at_level(logging.INFO, logger='chainer_fastpath'):
        assert chainer_fastpath.enable() is False
    assert 'CHAINER_FASTPATH=0' in caplog.text
    assert not chainer_fastpath.is_enabled()


def test_env_switch_off_in_a_fresh_process():
    # chainer_fastpath first: on Python 3.12 it is what lets Chainer import.
    code = ('import chainer_fastpath as f, chainer; '
            'o = chainer.FunctionNode.apply; '
            'assert f.enable() is False; '
            'assert chainer.FunctionNode.apply is o')
    env = {'CHAINER_FASTPATH': '0', 'PATH': ''}
    subprocess.run([sys.executable, '-c', code], env=env, check=True)


def test_enable_disable_from_many_threads_ends_consistent():
    errors = []

    def worker(i):
        try:
            for _ in range(200):
                if i % 2:
                    chainer_fastpath.enable()
                else:
                    chainer_fastpath.disable()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    state = [_current(r) is r.replacement for r in _patch.table()]
    assert all(state) or not any(state)
    assert all(state) == chainer_fastpath.is_enabled()
    chainer_fastpath.disable()
    for row in _patch.table():
        assert _current(row) is row.original
