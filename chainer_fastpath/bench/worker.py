"""One benchmark process: ``python -m chainer_fastpath.bench.worker NAME
MODE STEPS REPEATS``; prints one JSON line with per-step seconds."""
import json
import sys
import time


def measure(name, mode, steps, repeats, warmup=1):
    if mode == 'patched':
        import chainer_fastpath
        if not chainer_fastpath.enable():
            raise RuntimeError('the fast path could not be enabled')
    from chainer_fastpath.bench.workloads import WORKLOADS

    make, _ = WORKLOADS[name]
    step, result = make(seed=0)
    for _ in range(warmup * steps):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - t0) / steps)
    return {'name': name, 'mode': mode, 'times': times, 'result': result()}


def main(argv):
    name, mode, steps, repeats = argv
    print(json.dumps(measure(name, mode, int(steps), int(repeats))))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
