"""Data-parallel training, patched, in which rank 1 raises at iteration 5.

Launched under ``mpiexec -n 2`` with an abort-on-exception launcher
(``python -m mpi4py``, or chainermn's global except hook), the whole job
must stop with the error on stderr and a nonzero status, while rank 0 waits
in the gradient all-reduce. Prints ``iteration <i> rank=<r>`` as it goes.
"""
import numpy

import chainer
import chainer.links as L

import chainer_fastpath
import mpi_common
from mpi_common import chainermn

FAIL_RANK, FAIL_AT = 1, 5


def main():
    chainer_fastpath.enable()      # already on under `chainer_fastpath run`
    comm = mpi_common.communicator()
    model = L.Classifier(L.Linear(8, 3))
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.Adam(), comm)
    optimizer.setup(model)
    x = numpy.random.randn(4, 8).astype(numpy.float32)
    t = numpy.random.randint(0, 3, 4).astype(numpy.int32)
    for i in range(1000):
        if comm.rank == FAIL_RANK and i == FAIL_AT:
            raise RuntimeError('deliberate failure on rank {} at iteration '
                               '{}'.format(comm.rank, i))
        optimizer.update(model, x, t)
        print('iteration {} rank={} fast={}'.format(
            i, comm.rank, chainer_fastpath.is_enabled()), flush=True)


if __name__ == '__main__':
    main()
