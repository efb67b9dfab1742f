"""One benchmark process, ``python -m chainer_fastpath.bench.worker MODE``
(MODE one of stock, patched, torch): once imported it says
``{"ready": true}``, then it is driven one command per line on stdin and
answers each with one JSON line on stdout:

- ``setup NAME STEPS``: builds workload NAME (its PyTorch twin in torch
  mode) and runs one warm-up step; answers ``{"ready": true}``, or
  ``{"skipped": why}`` when the workload cannot run here;
- ``run``: times STEPS steps; answers ``{"time": seconds per step}``;
- ``result``: answers ``{"result": digest}``, the digest of what the steps
  left (see :func:`.workloads.digest`), and ``"note"`` where the workload
  has one; drops the workload.

The runner asks one process at a time, so no two ever compete for the CPU,
and interleaves the modes' repeats of a workload.
"""
import gc
import json
import sys
import time

COMMANDS = ('setup', 'run', 'result')


def _make(name, mode):
    from chainer_fastpath.bench.workloads import TORCH_TWINS, WORKLOADS
    if mode == 'torch':
        return TORCH_TWINS[name](seed=0)
    return WORKLOADS[name][0](seed=0)


class Session:
    """The workload a worker holds between ``setup`` and ``result``."""

    def __init__(self, mode):
        self.mode = mode
        self.made = None
        self.steps = 0

    def setup(self, name, steps, warmup=1):
        """Builds ``name`` and runs ``warmup`` steps (first calls fill
        caches; one step does that)."""
        from chainer_fastpath.bench.workloads import Skip
        try:
            self.made = _make(name, self.mode)
        except Skip as e:
            return {'skipped': str(e)}
        self.steps = int(steps)
        for _ in range(warmup):
            self.made[0]()
        return {'ready': True}

    def run(self):
        step, steps = self.made[0], self.steps
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        return {'time': (time.perf_counter() - t0) / steps}

    def result(self):
        from chainer_fastpath.bench.workloads import digest
        reply = {'result': digest(self.made[1]())}
        if len(self.made) > 2:
            reply['note'] = self.made[2]()
        self.made = None
        # What one workload leaves behind must not slow the next.
        gc.collect()
        return reply


def _send(out, answer):
    out.write(json.dumps(answer) + '\n')
    out.flush()


def serve(session, commands, out):
    """Says it is ready on ``out``, then answers each line of ``commands``
    until they end."""
    _send(out, {'ready': True})
    for line in commands:
        command, *args = line.split()
        if command not in COMMANDS:
            raise ValueError('unknown command: {!r}'.format(line))
        _send(out, getattr(session, command)(*args))


def main(argv):
    mode, = argv
    if mode == 'patched':
        import chainer_fastpath
        if not chainer_fastpath.enable():
            raise RuntimeError('the fast path could not be enabled')
    # Imported before saying ready: what the first setup would import.
    import chainer_fastpath.bench.workloads  # NOQA
    serve(Session(mode), sys.stdin, sys.stdout)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
