"""``run --profile``: py-spy's stacks split by whose work they are, the
program's stdout and exit status kept, one line where py-spy is missing."""
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from chainer_fastpath import _profile

PY = 'numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so'
BLAS = 'libopenblas64_p-r0-0cf96a72.3.23.dev.so'
ROOT = '<module> (train.py:12)'

CASES = [
    # the innermost frame first decides where it is arithmetic
    ([ROOT, 'array_dot ({})'.format(PY), 'sgemm_kernel_HASWELL ({})'.format(
        BLAS)], 'arithmetic'),
    ([ROOT, 'sched_yield (libc.so.6)'], 'program'),
    ([ROOT, 'exec_blas ({})'.format(BLAS), 'sched_yield (libc.so.6)'],
     'arithmetic'),
    ([ROOT, 'FLOAT_add_AVX2 ({})'.format(PY)], 'arithmetic'),
    ([ROOT, '__memmove_avx_unaligned_erms (libc.so.6)'], 'arithmetic'),
    # this project's loop in a header, in a libc frame py-spy cannot name
    ([ROOT, '_rows_of (chainer_fastpath/functions/connection/embed_id.pyx:98)',
      'cfp_gather_rows_fi (chainer_fastpath/_core/_rows.h:146)',
      '0x7fa9eef8b82a (libc.so.6)'], 'arithmetic'),
    ([ROOT, 'apply (chainer_fastpath/_fast_call.pyx:120)',
      'cfp_getattr (chainer_fastpath/_core/_attrs.h:345)'], 'compiled'),
    # then the collector, wherever it runs
    ([ROOT, 'forward (chainer/function_node.py:1)',
      'gc_collect_main (libpython3.11.so.1.0)',
      'visit_decref (libpython3.11.so.1.0)'], 'gc'),
    # then the import system
    ([ROOT, '_find_and_load (<frozen importlib._bootstrap>:1176)',
      '<module> (chainer/__init__.py:3)'], 'imports'),
    # then the innermost frame that owns the work, past CPython and libc
    ([ROOT, 'apply (chainer_fastpath/_fast_call.pyx:120)',
      'Py_DECREF (object.h:537)', '_PyObject_Free (libpython3.11.so.1.0)'],
     'compiled'),
    ([ROOT, 'x (chainer_fastpath/_fast_call.cpython-311-x86_64-linux-gnu.so)'],
     'compiled'),
    ([ROOT, 'apply (chainer/function_node.py:300)',
      'PyArray_NewFromDescr_int ({})'.format(PY), 'malloc (libc.so.6)'],
     'numpy_c'),
    ([ROOT, 'apply (chainer/function_node.py:300)',
      '_PyEval_EvalFrameDefault (libpython3.11.so.1.0)'], 'chainer'),
    ([ROOT, 'update (chainermn/optimizers.py:5)'], 'chainer'),
    ([ROOT, 'forward (chainer/functions/pad.py:90)',
      'pad (numpy/lib/arraypad.py:700)'], 'numpy_python'),
    # NumPy the program calls itself is the program's work; NumPy that
    # Chainer or the fast path calls is NumPy's
    ([ROOT, 'update (dqn.py:70)',
      'PyArray_FromAny_int ({})'.format(PY),
      'PyArray_DiscoverDTypeAndShape ({})'.format(PY)], 'program'),
    ([ROOT, 'update (dqn.py:70)', 'mean (numpy/core/fromnumeric.py:3504)',
      '_mean (numpy/core/_methods.py:118)',
      'PyUFunc_Reduce ({})'.format(PY)], 'program'),
    ([ROOT, 'update (dqn.py:70)', 'mean (numpy/core/fromnumeric.py:3504)'],
     'program'),
    ([ROOT, 'update (dqn.py:70)', 'select_item (chainer/functions/a.py:9)',
      'PyArray_FromAny_int ({})'.format(PY)], 'numpy_c'),
    ([ROOT, 'update (dqn.py:70)',
      'apply (chainer_fastpath/_fast_call.pyx:120)',
      'PyArray_FromAny_int ({})'.format(PY)], 'numpy_c'),
    ([ROOT, 'update (dqn.py:70)',
      'apply (chainer_fastpath/_fast_call.pyx:120)',
      '_mean (numpy/core/_methods.py:118)'], 'numpy_python'),
    ([ROOT, 'helper (/home/me/chainer_models/net.py:5)'], 'program'),
    ([ROOT], 'program'),
    ([ROOT, 'foo (libssl.so.3)'], 'other'),
    ([], 'other'),
]


@pytest.mark.parametrize('frames, category', CASES)
def test_classify(frames, category):
    assert _profile.classify(frames) == category


def test_split_counts_threads_that_run_python():
    stacks = [
        (['thread (11): MainThread', ROOT,
          'apply (chainer/function_node.py:300)'], 3),
        (['thread (12): MainThread', ROOT], 1),
        (['thread (13)', 'blas_thread_server ({})'.format(BLAS),
          'sched_yield (libc.so.6)'], 50),
        (['thread (14): Thread-1', 'run (threading.py:1)'], 2),
    ]
    shares, chainer = _profile.split(stacks)
    assert list(shares) == list(_profile.CATEGORIES)
    assert shares['chainer'] == 3 and shares['program'] == 3
    assert sum(shares.values()) == 6
    assert chainer == {'apply (chainer/function_node.py)': 3}
    lines = _profile.format_split(shares, chainer, 250)
    assert lines[0].startswith('chainer_fastpath profile: 6 samples at 250')
    assert "Chainer's Python" in lines[4] and lines[4].endswith(' 50.0%')
    assert lines[-1] == '   50.0%  apply (chainer/function_node.py)'


def test_read_raw(tmp_path):
    raw = tmp_path / 'raw.txt'
    raw.write_text('a (x.py:1);b (y.py:2) 7\nc (libc.so.6) 1\n')
    assert _profile.read_raw(str(raw)) == [
        (['a (x.py:1)', 'b (y.py:2)'], 7), (['c (libc.so.6)'], 1)]


SCRIPT = '''\
import sys
print('out of the script')
sys.exit(int(sys.argv[1]))
'''

# Does what ``py-spy record ... -o FILE -- CMD`` does here: runs CMD with
# py-spy's stdout and every descriptor it inherited, says so on that stdout,
# writes one stack to FILE.
FAKE_PY_SPY = '''\
#!{python}
import subprocess, sys
argv = sys.argv[1:]
out = argv[argv.index('-o') + 1]
print('py-spy> Sampling process')
status = subprocess.call(argv[argv.index('--') + 1:], close_fds=False)
print('py-spy> Stopped sampling')
with open(out, 'w') as f:
    f.write('thread (1): MainThread;<module> (s.py:1) 4\\n')
sys.exit(0)
'''


def _run(tmp_path, status, path=None):
    script = tmp_path / 'script.py'
    script.write_text(SCRIPT)
    env = dict(os.environ, PATH=path or os.environ['PATH'])
    return subprocess.run(
        [sys.executable, '-m', 'chainer_fastpath', 'run', '--profile',
         str(script), str(status)],
        env=env, capture_output=True, text=True, cwd=str(tmp_path))


@pytest.mark.parametrize('status', [0, 3])
def test_profile_keeps_stdout_and_exit_status(tmp_path, status):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    fake = bin_dir / 'py-spy'
    fake.write_text(FAKE_PY_SPY.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    # The parent process finds it on PATH, before one beside Python.
    result = _run(tmp_path, status,
                  path=str(bin_dir) + os.pathsep + os.environ['PATH'])
    assert result.returncode == status
    assert result.stdout == 'out of the script\n'
    assert "the program's own Python" in result.stderr
    assert 'chainer_fastpath profile: 4 samples' in result.stderr


def test_profile_without_py_spy_says_so_and_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(_profile, 'py_spy', lambda: None)
    lines = []
    monkeypatch.setattr(_profile.subprocess, 'call',
                        lambda argv: lines.append(argv) or 5)
    assert _profile.run(lambda status_file: ['cmd', str(status_file)]) == 5
    assert lines == [['cmd', 'None']]


def test_real_py_spy_splits_a_chainer_program(tmp_path):
    if _profile.py_spy() is None:
        pytest.skip('py-spy is not installed (the bench extra has it)')
    script = tmp_path / 'train.py'
    script.write_text(textwrap.dedent('''\
        import time, numpy, chainer, chainer.functions as F
        x = chainer.Variable(numpy.ones((64, 64), numpy.float32))
        # Long enough for the sampler to see every kind of work (3,000
        # steps took a tenth of a second: a few samples, sometimes none
        # in the compiled code).
        start = time.perf_counter()
        while time.perf_counter() - start < 1.5:
            F.sum(F.relu(F.linear(x, x))).backward()
        print('done')
    '''))
    result = subprocess.run(
        [sys.executable, '-m', 'chainer_fastpath', 'run', '--profile',
         str(script)], capture_output=True, text=True,
        env=dict(os.environ, OPENBLAS_NUM_THREADS='1'))
    assert result.returncode == 0, result.stderr
    assert result.stdout == 'done\n'
    shares = {}
    for line in result.stderr.splitlines():
        for key, label in _profile.CATEGORIES.items():
            if line.startswith('  ' + label + ' '):
                shares[key] = float(line.split()[-1].rstrip('%'))
    assert set(shares) == set(_profile.CATEGORIES)
    assert shares['compiled'] > 0 and shares['arithmetic'] > 0
    assert abs(sum(shares.values()) - 100) < 0.5
