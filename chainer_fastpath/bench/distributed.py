"""``python -m chainer_fastpath.bench.distributed``: one data-parallel
training step under ChainerMN, 2 MPI processes, stock vs patched.

The workload: a tiny MLP (32-32-32-10), batch 1 per worker, Adam, through
``create_multi_node_optimizer`` over the 'naive' communicator, one thread
per process. Each round launches one ``mpiexec -n 2`` job per mode (the
modes alternate order from round to round); each job times several repeats
of a block of steps after warm-up, the ranks starting every repeat together.
The table shows the median per-iteration time over all repeats of all
rounds, and the speedup's min-max over all pairs of repeats. Open MPI's
ranks yield the core while they wait (``mpi_yield_when_idle``; ``--busy-wait``
turns that off): where the two ranks share cores with anything else, a rank
spinning in the all-reduce takes the core from its peer and the times
measure the scheduler, not the step. Needs Open MPI and mpi4py
(``make test-mpi`` installs them).
"""
import argparse
import json
import statistics
import sys
import time

MODES = ('stock', 'patched')
RANKS = 2
ONE_THREAD = {v: '1' for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS',
                               'MKL_NUM_THREADS')}


def _step_fn(seed):
    """Builds the model and returns ``step()`` (one training iteration)."""
    import warnings

    import numpy
    import chainer
    import chainer.functions as F
    import chainer.links as L
    import chainermn

    warnings.filterwarnings('ignore', category=FutureWarning)
    comm = chainermn.create_communicator('naive')
    numpy.random.seed(seed + comm.rank)
    model = L.Classifier(chainer.Sequential(
        L.Linear(32, 32), F.relu, L.Linear(32, 32), F.relu,
        L.Linear(32, 10)))
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.Adam(), comm)
    optimizer.setup(model)
    x = numpy.random.randn(1, 32).astype(numpy.float32)
    t = numpy.random.randint(0, 10, 1).astype(numpy.int32)

    def step():
        optimizer.update(model, x, t)
    return comm, step


def worker(mode, steps, repeats, warmup):
    """One rank of a job: prints (rank 0) the per-step seconds of each
    repeat as one JSON line."""
    if mode == 'patched':
        import chainer_fastpath
        if not chainer_fastpath.enable():
            raise RuntimeError('the fast path could not be enabled')
    comm, step = _step_fn(seed=0)
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        comm.mpi_comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - t0) / steps)
    # the slower rank sets the pace of a synchronous step
    times = [max(ts) for ts in zip(*comm.mpi_comm.allgather(times))]
    if comm.rank == 0:
        print(json.dumps({'mode': mode, 'times': times}), flush=True)


def _job(mode, args):
    from chainer_fastpath.testing import mpi

    cmd = mpi.command(RANKS, [
        '-m', 'mpi4py', '-m', 'chainer_fastpath.bench.distributed',
        '--worker', mode, '--steps', str(args.steps),
        '--repeats', str(args.repeats), '--warmup', str(args.warmup)])
    env = dict(ONE_THREAD, CHAINER_FASTPATH='1')
    if not args.busy_wait:
        env['OMPI_MCA_mpi_yield_when_idle'] = '1'
    res = mpi.run(cmd, args.timeout, env=mpi.environment(env))
    if res.returncode != 0:
        raise RuntimeError('{} job failed:\n{}'.format(mode, res.stderr))
    return json.loads(res.stdout.strip().splitlines()[-1])['times']


def table(times):
    """The result lines: per-iteration medians and the speedup."""
    med = {m: statistics.median(times[m]) for m in MODES}
    ratios = [s / p for s in times['stock'] for p in times['patched']]
    rows = [('workload', 'stock us/iter', 'patched us/iter', 'speedup',
             '(min-max)'),
            ('MLP 32-32-32-10, batch 1/worker, Adam, 2 ranks (naive)',
             '{:.1f}'.format(med['stock'] * 1e6),
             '{:.1f}'.format(med['patched'] * 1e6),
             '{:.2f}x'.format(med['stock'] / med['patched']),
             '({:.2f}-{:.2f})'.format(min(ratios), max(ratios)))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ['  '.join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(row, widths)))
            for row in rows]


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog='python -m chainer_fastpath.bench.distributed',
        description=__doc__.split('\n\n')[0])
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--repeats', type=int, default=5)
    p.add_argument('--steps', type=int, default=200)
    p.add_argument('--warmup', type=int, default=20)
    p.add_argument('--timeout', type=int, default=600,
                   help='seconds one mpiexec job may take')
    p.add_argument('--busy-wait', action='store_true',
                   help="leave Open MPI's busy polling on")
    p.add_argument('--json', metavar='FILE', help='write every time to FILE')
    p.add_argument('--worker', choices=MODES, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        worker(args.worker, args.steps, args.repeats, args.warmup)
        return 0
    from chainer_fastpath.testing import mpi
    why = mpi.missing()
    if why:
        print('error: ' + why, file=sys.stderr)
        return 2
    times = {m: [] for m in MODES}
    for r in range(args.rounds):
        for mode in (MODES if r % 2 == 0 else MODES[::-1]):
            times[mode] += _job(mode, args)
            sys.stderr.write('round {}/{}: {} done\n'.format(
                r + 1, args.rounds, mode))
    print('\n'.join(table(times)))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(times, f)
    return 0


if __name__ == '__main__':
    sys.exit(main())
