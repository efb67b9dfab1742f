"""One benchmark process: ``python -m chainer_fastpath.bench.worker MODE
REPEATS NAME:STEPS...``, MODE one of stock, patched, torch.

Runs the named workloads one after another (their PyTorch twins in torch
mode) and prints one JSON line per workload as soon as it is done: per-step
seconds of each repeat and the result, or why it was skipped.
"""
import gc
import json
import sys
import time


def _make(name, mode):
    from chainer_fastpath.bench.workloads import TORCH_TWINS, WORKLOADS
    if mode == 'torch':
        return TORCH_TWINS[name](seed=0)
    return WORKLOADS[name][0](seed=0)


def measure(name, mode, steps, repeats, warmup=1):
    """Times ``repeats`` runs of ``steps`` steps after ``warmup`` steps
    (first calls fill caches; one step does that) and returns the record."""
    from chainer_fastpath.bench.workloads import Skip
    try:
        made = _make(name, mode)
    except Skip as e:
        return {'name': name, 'mode': mode, 'skipped': str(e)}
    step, result = made[:2]
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - t0) / steps)
    record = {'name': name, 'mode': mode, 'times': times, 'result': result()}
    if len(made) > 2:
        record['note'] = made[2]()
    return record


def main(argv):
    mode, repeats, *jobs = argv
    if mode == 'patched':
        import chainer_fastpath
        if not chainer_fastpath.enable():
            raise RuntimeError('the fast path could not be enabled')
    for job in jobs:
        name, steps = job.rsplit(':', 1)
        print(json.dumps(measure(name, mode, int(steps), int(repeats))),
              flush=True)
        # What one workload leaves behind must not slow the next.
        gc.collect()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
