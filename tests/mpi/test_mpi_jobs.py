"""ChainerMN data-parallel jobs under ``mpiexec -n 2``: each worker script
compares stock and patched bit for bit on every rank and prints ``OK <case>
rank=<r>``; here we check that every case passed on every rank.

The timeouts only keep a hung job from hanging the suite.
"""
import re

import pytest

JOB_TIMEOUT = 600


def _check_job(mpi, script, cases):
    res = mpi.mpiexec(['-m', 'mpi4py', script], timeout=JOB_TIMEOUT)
    assert res.returncode == 0, res.stdout + res.stderr
    for case in cases:
        for rank in range(mpi.RANKS):
            assert 'OK {} rank={} '.format(case, rank) in res.stdout, (
                '{} did not pass on rank {}:\n{}{}'.format(
                    case, rank, res.stdout, res.stderr))


def test_training_mlp_and_lstm_bit_identical(mpi):
    _check_job(mpi, 'run_training.py',
               ['cpu-unsupported', 'mlp-zero-fill', 'mlp-no-zero-fill',
                'lstm-lm'])


def test_chainermn_functions_bit_identical(mpi):
    _check_job(mpi, 'run_functions.py',
               ['send-recv-pseudo-connect', 'allgather', 'alltoall', 'bcast',
                'gather', 'scatter'])


def test_evaluator_and_multi_node_batch_norm_bit_identical(mpi):
    _check_job(mpi, 'run_evaluator_bn.py', ['evaluator-mnbn'])


LAUNCHERS = {
    'mpi4py': (['-m', 'mpi4py', 'run_failure.py'], {}),
    'mpi4py-fastpath-run': (
        ['-m', 'mpi4py', '-m', 'chainer_fastpath', 'run', 'run_failure.py'],
        {}),
    'chainermn-except-hook': (
        ['-m', 'chainer_fastpath', 'run', 'run_failure.py'],
        {'CHAINERMN_FORCE_ABORT_ON_EXCEPTION': '1'}),
}


# mpiexec prints its abort notice, a block between two rules of dashes, into
# the same stderr as the failing rank's traceback, and it may land between
# two writes of the traceback's last line.
_MPI_NOTICE = re.compile(r'-{20,}\n.*?-{20,}\n', re.S)


@pytest.mark.parametrize('launcher', sorted(LAUNCHERS))
def test_failing_worker_aborts_the_job(mpi, launcher):
    args, env = LAUNCHERS[launcher]
    res = mpi.mpiexec(args, timeout=120, env=env)
    assert res.returncode != 0, res.stdout + res.stderr
    assert ('RuntimeError: deliberate failure on rank 1 at iteration 5'
            in _MPI_NOTICE.sub('', res.stderr)), res.stderr
    # Both ranks trained patched until rank 1 failed; rank 0 then waited
    # in the all-reduce of iteration 5 until the abort.
    assert 'iteration 4 rank=0 fast=True' in res.stdout, res.stdout
    assert 'iteration 4 rank=1 fast=True' in res.stdout, res.stdout
    assert 'iteration 5 rank=0' not in res.stdout, res.stdout
