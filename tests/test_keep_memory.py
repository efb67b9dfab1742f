"""enable(keep_memory=...): malloc serves large blocks from its heap while
the fast path is on, and takes its initial thresholds back after.

Each case runs in a fresh interpreter: how a block is served depends on
the heap's free chunks, which a long test session leaves anywhere.
"""
import ctypes
import ctypes.util
import json
import os
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.skipif(
        not hasattr(ctypes.CDLL(ctypes.util.find_library('c')), 'mallinfo2'),
        reason='needs glibc 2.33+ (mallinfo2)'),
    # `make test-asan` preloads the sanitizer, whose allocator replaces
    # glibc's malloc: its thresholds and statistics mean nothing there.
    pytest.mark.skipif('libasan' in os.environ.get('LD_PRELOAD', ''),
                       reason="the sanitizer's allocator replaces malloc"),
]

_PROBE = '''
import ctypes, ctypes.util, json, sys
import numpy
import chainer_fastpath
from chainer_fastpath import _memory

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        'arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks',
        'fsmblks', 'uordblks', 'fordblks', 'keepcost')]

libc = ctypes.CDLL(ctypes.util.find_library('c'))
libc.mallinfo2.restype = Mallinfo2


def mapped(nbytes):
    """Whether an array of ``nbytes`` more than the heap's free bytes (no
    free chunk can serve it) is a mapping of its own."""
    info = libc.mallinfo2()
    a = numpy.empty(info.fordblks + nbytes, numpy.uint8)
    during = libc.mallinfo2().hblks
    del a
    return during - info.hblks == 1


results = []
for step in json.loads(sys.argv[1]):
    if step[0] == 'call':
        name, kwargs = step[1], step[2]
        results.append(repr(getattr(chainer_fastpath, name)(**kwargs)))
    elif step[0] == 'mapped':
        results.append(mapped(step[1]))
    elif step[0] == 'installed':
        results.append(_memory.installed())
    elif step[0] == 'enabled':
        with chainer_fastpath.enabled(**step[1]):
            results.append([_memory.installed(), mapped(step[2])])
print(json.dumps(results))
'''

# Above the largest mmap threshold glibc sets itself (32 MiB), below the
# kept limit.
LARGE = 64 << 20


def _run(steps, env=None, log=False):
    """Runs ``steps`` in a fresh interpreter; returns their results (and
    its stderr where ``log``)."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith('MALLOC_') and k != 'GLIBC_TUNABLES'
               and k != 'CHAINER_FASTPATH_KEEP_MEMORY'}
    environ.update(env or {})
    if log:
        environ['CHAINER_FASTPATH_VERBOSE'] = '1'
    done = subprocess.run(
        [sys.executable, '-c', _PROBE, json.dumps(steps)], env=environ,
        capture_output=True, text=True, check=True)
    results = json.loads(done.stdout)
    return (results, done.stderr) if log else results


def test_large_block_from_the_heap_while_enabled():
    assert _run([['mapped', LARGE], ['call', 'enable', {}], ['installed'],
                 ['mapped', LARGE]]) == [True, 'True', True, False]


def test_large_block_mapped_after_disable():
    assert _run([['call', 'enable', {}], ['call', 'disable', {}],
                 ['installed'], ['mapped', LARGE]]) == [
        'True', 'None', False, True]


@pytest.mark.parametrize('kwargs,env', [
    ({'keep_memory': False}, {}),
    ({}, {'CHAINER_FASTPATH_KEEP_MEMORY': '0'}),
    ({}, {'CHAINER_FASTPATH_KEEP_MEMORY': 'off'}),
])
def test_turned_off(kwargs, env):
    assert _run([['call', 'enable', kwargs], ['call', 'is_enabled', {}],
                 ['installed'], ['mapped', LARGE]], env) == [
        'True', 'True', False, True]


def test_limit_from_the_environment():
    assert _run([['call', 'enable', {}], ['installed'], ['mapped', LARGE],
                 ['mapped', 600 << 20]],
                {'CHAINER_FASTPATH_KEEP_MEMORY': '512'}) == [
        'True', True, False, True]


@pytest.mark.parametrize('variable,value', [
    ('MALLOC_TRIM_THRESHOLD_', '1000000'),
    ('GLIBC_TUNABLES', 'glibc.malloc.trim_threshold=1000000'),
])
def test_malloc_tuned_by_the_environment_is_left_alone(variable, value):
    results, log = _run([['call', 'enable', {}], ['installed']],
                        {variable: value}, log=True)
    assert results == ['True', False]
    assert ('freed memory is not kept: the environment tunes malloc '
            '({})'.format(variable)) in log


def test_enabled_context_restores_the_thresholds():
    assert _run([['enabled', {}, LARGE], ['installed'], ['mapped', LARGE],
                 ['call', 'enable', {}],
                 ['enabled', {'keep_memory': False}, LARGE],
                 ['installed']]) == [
        [True, False], False, True, 'True', [False, True], True]


def test_not_a_number_warns_and_keeps_the_default():
    results, log = _run([['call', 'enable', {}], ['installed']],
                        {'CHAINER_FASTPATH_KEEP_MEMORY': 'lots'}, log=True)
    assert results == ['True', True]
    assert "CHAINER_FASTPATH_KEEP_MEMORY='lots' is not a number" in log
