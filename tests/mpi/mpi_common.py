"""Helpers shared by the MPI worker scripts of tests/mpi (run under
``mpiexec -n 2``, not collected by pytest).

Each worker script runs every case stock and then patched in the same
process, compares the two bit for bit, checks that all ranks agree, and
prints one ``OK <case> rank=<r>`` line per passed case. Any mismatch raises;
the scripts are launched with ``python -m mpi4py`` so that an exception on
one rank aborts the whole job instead of hanging it.
"""
import json
import warnings

import numpy

import chainer
import chainer_fastpath
from chainer_fastpath.testing import differential

# chainermn.functions are marked experimental: each call warns.
warnings.filterwarnings('ignore', category=FutureWarning)

import chainermn  # noqa: E402  (after the filter above)

_comm = None


def communicator():
    """The job's 'naive' communicator (the CPU one), created once."""
    global _comm
    if _comm is None:
        _comm = chainermn.create_communicator('naive')
    return _comm


def scattered_classification(comm, n, features, classes, seed):
    """A random classification dataset made on rank 0 and split over the
    ranks by ``scatter_dataset`` (shuffled with ``seed``)."""
    data = None
    if comm.rank == 0:
        x = numpy.random.randn(n, features).astype(numpy.float32)
        t = numpy.random.randint(0, classes, n).astype(numpy.int32)
        data = chainer.datasets.TupleDataset(x, t)
    return chainermn.scatter_dataset(data, comm, shuffle=True, seed=seed)


def snapshot(link):
    """``{path: array}`` of everything ``link`` serializes (parameters and
    persistent values such as BatchNormalization's averages): what must
    match between runs and between ranks."""
    out = {}
    chainer.serializers.DictionarySerializer(out).save(link)
    return {k: numpy.array(v, copy=True) for k, v in out.items()}


def run_stock_and_patched(fn):
    """Runs ``fn()`` stock, then patched, from the same seeds; returns
    ``(stock, patched, patched_stats)``.

    ``patched_stats`` are the fast-path counters of the patched run only.
    """
    def counted():
        chainer_fastpath.reset_stats()
        result = fn()
        return result, chainer_fastpath.stats()

    (stock, _), (patched, stats) = differential.run_both(counted)
    return stock, patched, stats


def raised(fn):
    """``(type name, message)`` of what ``fn()`` raises, or None."""
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e)
    return None


def assert_same_on_all_ranks(comm, value, what):
    """Raises unless ``value`` (arrays, dicts, lists) is bitwise the same on
    every rank of ``comm``."""
    gathered = comm.mpi_comm.allgather(value)
    for rank, other in enumerate(gathered):
        differential.assert_same(gathered[0], other,
                                 '{} rank 0 vs rank {}'.format(what, rank))


def assert_fast_paths_taken(stats, entries):
    """Raises unless each named entry point took its fast path at least
    once: a comparison that never ran patched code would prove nothing."""
    for name in entries:
        if stats.get(name, {}).get('fast', 0) <= 0:
            raise AssertionError('{} never took its fast path: {}'.format(
                name, json.dumps(stats.get(name))))


def assert_no_fallback(stats, entries):
    """Raises if any named entry point fell back to stock code."""
    for name in entries:
        taken = stats.get(name, {}).get('fallback')
        if taken:
            raise AssertionError('{} fell back: {}'.format(name, taken))


def fallbacks(stats):
    """``{entry: {reason: n}}`` of the fallbacks that happened."""
    return {name: s['fallback'] for name, s in stats.items()
            if s['fallback']}


def passed(comm, case, **info):
    """Prints the line the pytest side looks for, with facts to report."""
    print('OK {} rank={} {}'.format(case, comm.rank, json.dumps(
        info, sort_keys=True)), flush=True)
