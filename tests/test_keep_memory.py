"""enable(keep_memory=...): malloc serves large blocks from its heap while
the fast path is on, and takes its initial thresholds back after."""
import ctypes
import ctypes.util
import os

import numpy
import pytest

import chainer_fastpath
from chainer_fastpath import _memory

_libc = ctypes.CDLL(ctypes.util.find_library('c'))
pytestmark = pytest.mark.skipif(
    not hasattr(_libc, 'mallinfo2'), reason='needs glibc 2.33+ (mallinfo2)')

# Above the largest mmap threshold glibc sets itself (32 MiB), below the
# kept limit.
LARGE = 64 << 20


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        'arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks',
        'fsmblks', 'uordblks', 'fordblks', 'keepcost')]


def _mapped_blocks_while_allocated(nbytes):
    """How many more blocks malloc holds as their own mappings while an
    array of ``nbytes`` more than the heap's free bytes lives (so that no
    free chunk of the heap can serve it)."""
    _libc.mallinfo2.restype = _Mallinfo2
    info = _libc.mallinfo2()
    before = info.hblks
    a = numpy.empty(info.fordblks + nbytes, numpy.uint8)
    during = _libc.mallinfo2().hblks
    del a
    return during - before


@pytest.fixture(autouse=True)
def _restore(monkeypatch):
    for name in ('CHAINER_FASTPATH_KEEP_MEMORY', 'GLIBC_TUNABLES') + tuple(
            _memory._TUNING_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    was = chainer_fastpath.is_enabled()
    yield
    if not was:
        chainer_fastpath.disable()


def test_large_block_from_the_heap_while_enabled():
    chainer_fastpath.enable()
    assert _memory.installed()
    assert _mapped_blocks_while_allocated(LARGE) == 0


def test_large_block_mapped_after_disable():
    chainer_fastpath.enable()
    chainer_fastpath.disable()
    assert not _memory.installed()
    assert _mapped_blocks_while_allocated(LARGE) == 1


@pytest.mark.parametrize('how', ['argument', 'environment zero',
                                 'environment off'])
def test_turned_off(monkeypatch, how):
    chainer_fastpath.disable()
    if how == 'argument':
        chainer_fastpath.enable(keep_memory=False)
    else:
        monkeypatch.setenv('CHAINER_FASTPATH_KEEP_MEMORY',
                           '0' if how == 'environment zero' else 'off')
        chainer_fastpath.enable()
    assert chainer_fastpath.is_enabled()
    assert not _memory.installed()
    assert _mapped_blocks_while_allocated(LARGE) == 1


def test_limit_from_the_environment(monkeypatch):
    chainer_fastpath.disable()
    monkeypatch.setenv('CHAINER_FASTPATH_KEEP_MEMORY', '512')   # MiB
    chainer_fastpath.enable()
    assert _memory.installed()
    assert _mapped_blocks_while_allocated(LARGE) == 0
    assert _mapped_blocks_while_allocated(600 << 20) == 1


@pytest.mark.parametrize('variable', ['MALLOC_TRIM_THRESHOLD_',
                                      'GLIBC_TUNABLES'])
def test_malloc_tuned_by_the_environment_is_left_alone(
        monkeypatch, caplog, variable):
    chainer_fastpath.disable()
    monkeypatch.setenv(variable, 'glibc.malloc.trim_threshold=1000000'
                       if variable == 'GLIBC_TUNABLES' else '1000000')
    with caplog.at_level('INFO', logger='chainer_fastpath'):
        assert chainer_fastpath.enable()
    assert not _memory.installed()
    assert 'freed memory is not kept: the environment tunes malloc ({})' \
        .format(variable) in caplog.text


def test_enabled_context_restores_the_thresholds():
    chainer_fastpath.disable()
    with chainer_fastpath.enabled():
        assert _memory.installed()
        assert _mapped_blocks_while_allocated(LARGE) == 0
    assert not _memory.installed()
    assert _mapped_blocks_while_allocated(LARGE) == 1
    chainer_fastpath.enable()
    with chainer_fastpath.enabled(keep_memory=False):
        assert not _memory.installed()
    assert _memory.installed()


def test_not_a_number_warns_and_keeps_the_default(monkeypatch, caplog):
    chainer_fastpath.disable()
    monkeypatch.setenv('CHAINER_FASTPATH_KEEP_MEMORY', 'lots')
    with caplog.at_level('WARNING', logger='chainer_fastpath'):
        chainer_fastpath.enable()
    assert _memory.installed()
    assert "CHAINER_FASTPATH_KEEP_MEMORY='lots' is not a number" in caplog.text


def test_unrelated_environment_is_not_tuning():
    assert os.environ.get('GLIBC_TUNABLES') is None
    assert _memory.install(1 << 30) is None
    _memory.uninstall()
