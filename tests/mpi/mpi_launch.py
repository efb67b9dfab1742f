"""Running a worker script of tests/mpi under ``mpiexec``."""
import os

from chainer_fastpath.testing import mpi

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 2
missing = mpi.missing


def mpiexec(args, timeout, env=None, ranks=RANKS):
    """Runs ``mpiexec -n ranks python ARGS`` in tests/mpi; returns the
    CompletedProcess, or raises ``subprocess.TimeoutExpired`` after killing
    the whole job."""
    return mpi.run(mpi.command(ranks, args), timeout,
                   env=mpi.environment(env), cwd=HERE)
