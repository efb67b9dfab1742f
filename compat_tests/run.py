"""Chainer's upstream test suite, stock vs patched.

    python compat_tests/run.py --chainer-tests CHECKOUT/tests [FILES...] \
        [-k EXPR]
    python compat_tests/run.py --mpi 2 --chainer-tests CHECKOUT/tests


``CHECKOUT`` is a checkout of chainer/chainer at tag v7.8.1 (not part of this
project). The CPU suite runs twice, stock and with
``-p chainer_fastpath.testing.pytest_plugin``, sharded by file over the cores
(test ids with memory addresses and import-time random parameterizations rule
out pytest-xdist). The stock run is cached, so a rerun only runs the patched
side. Exit status 1 on any regression: a test that passes stock and does not
pass patched.

With ``--mpi N`` it runs ChainerMN's tests (default ``chainermn_tests``)
instead, one file per ``mpiexec -n N`` job as upstream's CI does; a test
counts as passed when it passed on every rank (see mpi_mode.py).
"""
import argparse
import collections
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import mpi_mode

HERE = os.path.dirname(os.path.abspath(__file__))
INI = os.path.join(HERE, 'pytest.ini')
DESELECT = ('gpu', 'cudnn', 'slow', 'chainerx', 'ideep', 'theano',
            'multi_gpu')
PATCH_PLUGIN = 'chainer_fastpath.testing.pytest_plugin'
CHUNK_SECONDS_LIMIT = 1800


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--chainer-tests', required=True, metavar='DIR',
                   help="the tests/ folder of a chainer v7.8.1 checkout")
    p.add_argument('paths', nargs='*', metavar='FILE',
                   help='test files or folders, relative to DIR '
                   '(default: chainer_tests, or chainermn_tests with --mpi)')
    p.add_argument('-k', dest='keyword', help="pytest's -k expression")
    p.add_argument('-j', '--jobs', type=int,
                   help='pytest processes (or MPI jobs) at a time '
                   '(default: the cores, divided by the ranks with --mpi)')
    p.add_argument('--chunk-files', type=int,
                   help='test files per pytest process (default 8, '
                   'or 1 with --mpi)')
    p.add_argument('--mpi', type=int, metavar='N',
                   help='run each chunk under mpiexec -n N (ChainerMN)')
    p.add_argument('--timeout', type=int, help='seconds a chunk may take '
                   '(default {}, or {} with --mpi)'.format(
                       CHUNK_SECONDS_LIMIT, mpi_mode.CHUNK_SECONDS_LIMIT))
    p.add_argument('--cache-dir', default=os.path.join(
        os.path.dirname(HERE), '.compat-cache'))
    p.add_argument('--no-cache', action='store_true',
                   help='run the stock side even if cached')
    p.add_argument('--only', choices=('stock', 'patched'),
                   help='run one side only (no comparison)')
    p.add_argument('--show', type=int, default=50,
                   help='list at most this many regressions (default 50)')
    args = p.parse_args(argv)
    cores = os.cpu_count() or 1
    if args.jobs is None:
        args.jobs = max(1, cores // args.mpi) if args.mpi else cores
    if args.chunk_files is None:
        args.chunk_files = 1 if args.mpi else 8
    if args.timeout is None:
        args.timeout = (mpi_mode.CHUNK_SECONDS_LIMIT if args.mpi
                        else CHUNK_SECONDS_LIMIT)
    return args


def find_files(tests_dir, paths, default):
    files = []
    for p in paths or [default]:
        full = p if os.path.isabs(p) else os.path.join(tests_dir, p)
        if os.path.isfile(full):
            files.append(os.path.abspath(full))
            continue
        if not os.path.isdir(full):
            sys.exit('compat: no such test file or folder: {}'.format(full))
        for root, dirs, names in os.walk(full):
            dirs.sort()
            files.extend(os.path.join(root, n) for n in sorted(names)
                         if n.startswith('test_') and n.endswith('.py'))
    return files


def make_chunks(files, size):
    return [files[i:i + size] for i in range(0, len(files), size)]


def run_chunk(mode, chunk, args, workdir, index):
    out = os.path.join(workdir, '{}-{:04d}{}.jsonl'.format(
        mode, index, '-{rank}' if args.mpi else ''))
    rootdir = os.path.dirname(os.path.abspath(args.chainer_tests))
    cmd = ['-c', INI, '--rootdir', rootdir,
           '-p', 'no:cacheprovider', '-p', 'outcomes', '-q', '-rN',
           '--tb=no', '-m', ' and '.join('not ' + m for m in DESELECT)]
    if args.keyword:
        cmd += ['-k', args.keyword]
    if mode == 'patched':
        cmd += ['-p', PATCH_PLUGIN]
    cmd += chunk
    # The checkout's own package before an installed one: run from a git
    # worktree, the patched side tests the worktree's code.
    env = dict(os.environ, CHAINER_COMPAT_OUTCOMES=out, PYTHONHASHSEED='0',
               OMP_NUM_THREADS='1', CHAINER_FASTPATH='1',
               PYTHONPATH=os.pathsep.join(
                   [HERE, os.path.dirname(HERE)]
                   + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    env.pop('CHAINER_FASTPATH_VERBOSE', None)
    if args.mpi:
        cmd = mpi_mode.command(args.mpi, cmd, args.chainer_tests, rootdir)
        env = mpi_mode.environment(env)
    else:
        cmd = [sys.executable, '-m', 'pytest'] + cmd
    from chainer_fastpath.testing import mpi
    try:
        log = mpi.run(cmd, args.timeout, env=env, cwd=workdir,
                      stderr=subprocess.STDOUT).stdout
    except subprocess.TimeoutExpired as e:
        log = (e.stdout or '') + '\ncompat: chunk timed out'
    outcomes, complete = [], True
    for rank in range(args.mpi or 1):
        path = mpi_mode.outcome_file(out, rank)
        if not os.path.exists(path):
            complete = False
            continue
        with open(path) as f:
            outcomes += [tuple(json.loads(line)) for line in f]
    if not complete:
        # A process died before writing: count its files as failed. (An
        # empty file is a run whose tests were all deselected.)
        outcomes += [(path + '::<process>', 'failed') for path in chunk]
        with open(os.path.join(workdir, '{}-{:04d}.log'.format(
                mode, index)), 'w') as f:
            f.write(log)
    return outcomes


def run_side(mode, chunks, args):
    workdir = tempfile.mkdtemp(prefix='chainer-compat-{}-'.format(mode))
    results = []
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_chunk, mode, c, args, workdir, i)
                   for i, c in enumerate(chunks)]
        for done, fut in enumerate(
                concurrent.futures.as_completed(futures), 1):
            results.extend(fut.result())
            sys.stderr.write(
                '\r{:>7}: {}/{} chunks, {} tests, {:.0f} s'.format(
                    mode, done, len(chunks), len(results),
                    time.time() - start))
            sys.stderr.flush()
    sys.stderr.write('\n')
    return results


_ADDRESS = re.compile(r'0x[0-9a-fA-F]+')


def by_test(outcomes):
    """Groups outcomes by test id with memory addresses masked out, and a
    replaced function's repr (``<cyfunction sigmoid at ...>`` in a
    parameter) read as stock's (``<function sigmoid at ...>``)."""
    grouped = collections.defaultdict(list)
    for nodeid, outcome in outcomes:
        nodeid = _ADDRESS.sub('0x?', nodeid).replace('<cyfunction ',
                                                     '<function ')
        grouped[nodeid].append(outcome)
    return {k: sorted(v) for k, v in grouped.items()}


def cache_key(files, args):
    from importlib import metadata

    def version(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return 'absent'

    # The optional packages some upstream tests skip without (Pillow's
    # image datasets, matplotlib's plots, h5py's serializers): installing
    # one changes stock's outcomes.
    versions = [version(d) for d in (
        'chainer', 'numpy', 'scipy', 'setuptools', 'pytest',
        'pillow', 'matplotlib', 'h5py')]
    h = hashlib.sha256()
    parts = [sys.version] + versions + [
        args.keyword or '', str(args.chunk_files)] + files
    extra_files = []
    if args.mpi:
        # only in MPI mode, so the keys of the plain runs stay as they were
        parts += ['mpi', str(args.mpi), version('mpi4py')]
        extra_files = [mpi_mode.__file__]
    for part in parts:
        h.update(part.encode() + b'\0')
    for f in [INI, os.path.join(HERE, 'outcomes.py')] + extra_files + files:
        h.update(str(os.path.getmtime(f)).encode())
    return h.hexdigest()[:16]


def stock_side(files, chunks, args):
    path = os.path.join(args.cache_dir,
                        'stock-{}.json'.format(cache_key(files, args)))
    if not args.no_cache and os.path.exists(path):
        sys.stderr.write('  stock: cached ({})\n'.format(path))
        with open(path) as f:
            return [tuple(x) for x in json.load(f)]
    outcomes = run_side('stock', chunks, args)
    os.makedirs(args.cache_dir, exist_ok=True)
    with open(path, 'w') as f:
        json.dump(outcomes, f)
    return outcomes


def summarize(stock, patched, show):
    s, p = by_test(stock), by_test(patched)
    counts = collections.Counter()
    regressions, fixed = [], []
    for test in sorted(set(s) | set(p)):
        a, b = s.get(test), p.get(test)
        if a is None or b is None:
            counts['only stock' if b is None else 'only patched'] += 1
            if b is None and 'passed' in a:
                regressions.append((test, 'missing when patched'))
            continue
        counts['run'] += 1
        if a == b:
            counts[{'passed': 'passed on both', 'failed': 'failed on both',
                    'skipped': 'skipped on both'}.get(a[0], 'mixed')
                   if len(set(a)) == 1 else 'mixed on both'] += 1
        elif a.count('passed') > b.count('passed'):
            regressions.append((test, '{} -> {}'.format(a, b)))
        else:
            fixed.append(test)
    lines = ['tests run: {}'.format(counts['run'])]
    for key in ('passed on both', 'failed on both', 'skipped on both',
                'mixed on both', 'only stock', 'only patched'):
        if counts[key]:
            lines.append('{}: {}'.format(key, counts[key]))
    lines.append('regressions (pass stock, fail patched): {}'.format(
        len(regressions)))
    lines.append('fixed (fail stock, pass patched): {}'.format(len(fixed)))
    for test, why in regressions[:show]:
        lines.append('  REGRESSION {}  [{}]'.format(test, why))
    if len(regressions) > show:
        lines.append('  ... and {} more'.format(len(regressions) - show))
    return '\n'.join(lines), regressions


def main(argv=None):
    args = parse_args(argv)
    files = find_files(args.chainer_tests, args.paths,
                       mpi_mode.DEFAULT_PATH if args.mpi else 'chainer_tests')
    chunks = make_chunks(files, args.chunk_files)
    sys.stderr.write('compat: {} files in {} chunks, {} jobs\n'.format(
        len(files), len(chunks), args.jobs))
    if args.only:
        outcomes = run_side(args.only, chunks, args)
        print(dict(collections.Counter(o for _, o in outcomes)))
        return 0
    stock = stock_side(files, chunks, args)
    patched = run_side('patched', chunks, args)
    text, regressions = summarize(stock, patched, args.show)
    print(text)
    return 1 if regressions else 0


if __name__ == '__main__':
    sys.exit(main())
