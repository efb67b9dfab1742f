"""``chainermn.functions`` forward and backward under ``mpiexec -n 2``,
stock vs patched: point-to-point send/recv across the two ranks with
delegate variables and ``pseudo_connect``, and the collectives (allgather,
alltoall, bcast, gather, scatter), one at a time. Outputs and every
gradient must be bitwise identical stock vs patched.
"""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

import mpi_common
from mpi_common import chainermn

MN = chainermn.functions


def _input(shape=(3, 4)):
    return chainer.Variable(
        numpy.random.randn(*shape).astype(numpy.float32))


def _grads(link, *variables):
    out = {name: p.grad for name, p in sorted(link.namedparams())}
    out.update(('input{}'.format(i), v.grad) for i, v in enumerate(variables))
    return out


def point_to_point(comm):
    """Rank 0 -> rank 1 -> rank 0 pipeline; rank 0 also sends a second
    message, tied into its graph with pseudo_connect."""
    numpy.random.seed(comm.rank)
    link = L.Linear(4, 4)
    x = _input()
    if comm.rank == 0:
        phi = MN.send(F.tanh(link(x)), comm, rank=1)
        y = MN.recv(comm, rank=1, delegate_variable=phi)
        phi2 = MN.send(y * 2, comm, rank=1, tag=7)
        z, = MN.pseudo_connect(phi2, y)
        loss = F.sum(z * z)
        loss.backward()
        result = {'y': y.array, 'loss': loss.array}
    else:
        h = MN.recv(comm, rank=0)
        phi = MN.send(link(h) + x, comm, rank=0)
        w = MN.recv(comm, rank=0, delegate_variable=phi, tag=7)
        loss = F.sum(w)
        loss.backward()
        result = {'h': h.array, 'h.grad': h.grad, 'w': w.array}
    result['grads'] = _grads(link, x)
    return result


def _outputs(ys):
    return ys if isinstance(ys, (tuple, list)) else (ys,)


# One collective each, between a Linear and a loss, so that every rank
# runs the same communications in the same order in backward too.
COLLECTIVES = {
    'allgather': lambda comm, h, parts: MN.allgather(comm, h),
    'alltoall': lambda comm, h, parts: MN.alltoall(comm, parts),
    'bcast': lambda comm, h, parts: MN.bcast(comm, h, root=0),
    'gather': lambda comm, h, parts: MN.gather(comm, h, root=0),
    'scatter': lambda comm, h, parts: MN.scatter(
        comm, parts if comm.rank == 0 else None, root=0),
}


def collective(comm, name):
    """Forward and backward through one collective; outputs and grads."""
    numpy.random.seed(comm.rank)
    link = L.Linear(4, 4)
    x = _input((comm.size, 4))
    h = F.tanh(link(x))
    parts = F.split_axis(h, comm.size, axis=0)
    ys = _outputs(COLLECTIVES[name](comm, h, parts))
    loss = sum(F.sum(y * y) * (i + 1) for i, y in enumerate(ys))
    loss.backward()
    return {'loss': loss.array, 'grads': _grads(link, x),
            'outputs': [y.array for y in ys]}


def check(comm, case, fn):
    stock, patched, stats = mpi_common.run_stock_and_patched(fn)
    mpi_common.differential.assert_same(stock, patched, case)
    mpi_common.assert_fast_paths_taken(
        stats, ('FunctionNode.apply', 'Variable.backward'))
    mpi_common.passed(comm, case, fallbacks=mpi_common.fallbacks(stats))


def main():
    comm = mpi_common.communicator()
    if comm.size != 2:
        raise SystemExit('run_functions.py needs exactly 2 ranks')
    check(comm, 'send-recv-pseudo-connect', lambda: point_to_point(comm))
    for name in sorted(COLLECTIVES):
        check(comm, name, lambda: collective(comm, name))


if __name__ == '__main__':
    main()
