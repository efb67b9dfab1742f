"""``python -m chainer_fastpath bench``: every workload stock and patched, in
separate one-thread processes taking turns, reported side by side."""
import json
import os
import statistics
import subprocess
import sys

from chainer_fastpath.bench.workloads import WORKLOADS

MODES = ('stock', 'patched')
ONE_THREAD = {v: '1' for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS',
                               'MKL_NUM_THREADS')}


def add_arguments(parser):
    parser.add_argument('--quick', action='store_true',
                        help='fewer rounds (what `make bench` runs)')
    parser.add_argument('--only', nargs='+', metavar='NAME',
                        choices=sorted(WORKLOADS), help='run these only')
    parser.add_argument('--rounds', type=int, default=None,
                        help='processes per mode (default 3, quick 2)')
    parser.add_argument('--json', metavar='FILE',
                        help='write every measurement to FILE')


def _run_worker(name, mode, steps, repeats):
    env = dict(os.environ, CHAINER_FASTPATH='1', **ONE_THREAD)
    out = subprocess.run(
        [sys.executable, '-m', 'chainer_fastpath.bench.worker',
         name, mode, str(steps), str(repeats)],
        env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _progress(done, total, label):
    width = 30
    filled = width * done // total
    sys.stderr.write('\r[{}{}] {}/{} {:<24}'.format(
        '#' * filled, '.' * (width - filled), done, total, label))
    if done == total:
        sys.stderr.write('\n')
    sys.stderr.flush()


def _fmt_time(seconds):
    if seconds < 1e-3:
        return '{:.1f} us'.format(seconds * 1e6)
    if seconds < 1:
        return '{:.2f} ms'.format(seconds * 1e3)
    return '{:.2f} s'.format(seconds)


def measure_all(names, rounds, repeats):
    """Returns ``{name: {mode: [per-step seconds...], 'result': {mode: x}}}``."""
    results = {}
    total = len(names) * rounds * len(MODES)
    done = 0
    for name in names:
        _, steps = WORKLOADS[name]
        entry = {m: [] for m in MODES}
        entry['result'] = {}
        for r in range(rounds):
            # Alternate which mode goes first, so drift hits both alike.
            order = MODES if r % 2 == 0 else MODES[::-1]
            for mode in order:
                _progress(done, total, '{} ({})'.format(name, mode))
                m = _run_worker(name, mode, steps, repeats)
                entry[mode].extend(m['times'])
                entry['result'].setdefault(mode, m['result'])
                done += 1
        results[name] = entry
    _progress(done, total, 'done')
    return results


def format_table(results):
    header = ('workload', 'stock', 'patched', 'speedup (min-max)',
              'same result')
    rows = [header]
    for name, e in results.items():
        stock = statistics.median(e['stock'])
        patched = statistics.median(e['patched'])
        ratios = [s / p for s in e['stock'] for p in e['patched']]
        same = e['result']['stock'] == e['result']['patched']
        rows.append((name, _fmt_time(stock), _fmt_time(patched),
                     '{:.2f}x ({:.2f}-{:.2f})'.format(
                         stock / patched, min(ratios), max(ratios)),
                     'yes' if same else 'NO'))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for i, r in enumerate(rows):
        lines.append('  '.join(c.ljust(w) if j == 0 else c.rjust(w)
                               for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            lines.append('  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def main(args):
    names = args.only or list(WORKLOADS)
    rounds = args.rounds or (2 if args.quick else 3)
    repeats = 5 if args.quick else 9
    results = measure_all(names, rounds, repeats)
    print(format_table(results))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1)
    same = all(e['result']['stock'] == e['result']['patched']
               for e in results.values())
    return 0 if same else 1
