"""The compat runner's MPI mode (``run.py --mpi N``): ChainerMN's upstream
tests, each chunk one ``mpiexec -n N`` job, as upstream's CI runs them.

Run as a script, this is one rank of such a job: pytest, with its outcomes
written to ``CHAINER_COMPAT_OUTCOMES`` with ``{rank}`` replaced by the rank.
"""
import os
import sys

# Upstream tests that cannot pass here on stock either, and that would hang
# their file if run: rank 0 fails and the other ranks wait forever.
DESELECT = [
    # downloads MNIST (no network here)
    'chainermn_tests/extensions_tests/test_multi_node_snapshot.py'
    '::test_multinode_autoload',
]
# A test that fails on one rank leaves the others waiting in a collective:
# environment warnings that hit one rank only must not be errors, or the
# whole file times out. The same on stock and patched.
# (pytest's -W takes the message literally, not as a regex.)
WARNINGS = [
    # NumPy >= 1.25 (Chainer 7.8.1 predates it): _MultiNodeIteratorSlave
    # does int() of a 1-element array, on the slave ranks only.
    'ignore:Conversion of an array with ndim > 0 to a scalar'
    ':DeprecationWarning',
    # Python >= 3.10: MultiprocessIterator calls Thread.setDaemon, on the
    # rank that iterates (the master of a multi-node iterator) only.
    'ignore:setDaemon() is deprecated:DeprecationWarning',
]
DEFAULT_PATH = 'chainermn_tests'
CHUNK_SECONDS_LIMIT = 300


def command(ranks, pytest_args, tests_dir, rootdir):
    """The ``mpiexec`` command running ``pytest pytest_args`` on each rank,
    with :data:`WARNINGS` and :data:`DESELECT` (paths relative to
    ``tests_dir``; pytest wants node ids relative to ``rootdir``)."""
    from chainer_fastpath.testing import mpi

    extra = []
    for w in WARNINGS:
        extra += ['-W', w]
    for test in DESELECT:
        extra += ['--deselect', os.path.relpath(
            os.path.join(tests_dir, test), rootdir)]
    return mpi.command(ranks, [os.path.abspath(__file__)] + extra
                       + list(pytest_args))


def environment(env):
    from chainer_fastpath.testing import mpi

    return dict(env, **mpi.ENV)


def outcome_file(template, rank):
    return template.replace('{rank}', str(rank))


def _rank():
    for name in ('OMPI_COMM_WORLD_RANK', 'PMI_RANK', 'PMIX_RANK'):
        if name in os.environ:
            return int(os.environ[name])
    from mpi4py import MPI
    return MPI.COMM_WORLD.rank


def main(argv):
    import pytest

    os.environ['CHAINER_COMPAT_OUTCOMES'] = outcome_file(
        os.environ['CHAINER_COMPAT_OUTCOMES'], _rank())
    return pytest.main(argv)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
