"""Where a program's patched time goes, measured with py-spy: the split of
``run --profile`` (:mod:`chainer_fastpath._profile`) over the samples taken
while a patched worker runs the program's timed steps.

The worker runs under ``py-spy record --native``; of its samples only those
inside the worker's step loop (``Session.run``) count, so that start-up,
building the model and the warm-up step do not. The workload's own code
(under ``chainer_fastpath/bench``) is the program's own Python.
"""
import os
import tempfile
import time

from chainer_fastpath import _profile

#: The columns of the programs table, in order: category, header.
COLUMNS = (('arithmetic', 'arith.'), ('compiled', 'compiled'),
           ('numpy_c', 'NumPy C'), ('chainer', 'Chainer Py'),
           ('program', 'own Py'), ('gc', 'GC'))


def available():
    """None when py-spy can sample here, else why not."""
    return None if _profile.py_spy() else 'py-spy is not installed'


def _in_steps(frames):
    for i, frame in enumerate(frames):
        if frame.startswith('Session.run (') and 'bench/worker.py' in frame:
            return frames[i:]
    return None


def steps_split(stacks, top=3):
    """``({category: share}, [[Chainer function, share], ...], samples)``
    over the stacks inside the step loop, the ``top`` functions where
    Chainer's Python ran most; ``stacks`` as :func:`_profile.read_raw`
    reads them."""
    inside = []
    for frames, count in stacks:
        frames = _in_steps(frames)
        if frames is not None:
            inside.append((frames, count))
    counts, chainer = _profile.split(inside)
    total = sum(counts.values())
    if not total:
        return {}, [], 0
    return ({c: n / total for c, n in counts.items()},
            [[where, n / total] for where, n in chainer.most_common(top)],
            total)


def measure(worker_class, name, steps, cpu=None, seconds=2.0, rate=250):
    """Runs workload ``name`` in a patched ``worker_class`` (the runner's
    Worker) under py-spy for at least ``seconds`` of steps; returns
    :func:`steps_split` of its samples."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, 'stacks.txt')
        prefix = (_profile.py_spy(), 'record', '--native', '--threads',
                  '--rate', str(rate), '--format', 'raw', '-o', raw, '--')
        worker = worker_class('patched', cpu, prefix=prefix)
        try:
            worker.answer()
            worker.ask('setup', name, steps)
            start = time.perf_counter()
            worker.ask('run')
            while time.perf_counter() - start < seconds:
                worker.ask('run')
            worker.ask('result')
        finally:
            worker.close()
        if not os.path.exists(raw):
            return {}, [], 0
        return steps_split(_profile.read_raw(raw))
