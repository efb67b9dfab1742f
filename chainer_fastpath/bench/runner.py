"""``python -m chainer_fastpath bench``: every workload stock and patched
(and its PyTorch twin where torch is installed), in separate one-thread
processes taking turns, reported side by side.

One process per mode and round runs all selected workloads in sequence; the
modes alternate order from round to round, so drift hits them alike.
"""
import importlib.util
import json
import os
import statistics
import subprocess
import sys

from chainer_fastpath.bench.workloads import TORCH_TWINS, WORKLOADS

MODES = ('stock', 'patched')
TORCH = 'torch'
ONE_THREAD = {v: '1' for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS',
                               'MKL_NUM_THREADS')}
NO_TORCH = ('PyTorch: n/a, torch is not installed '
            '(`make bench` installs it, or pip install torch==2.13.0).')
NO_MATPLOTLIB = ('error: --plot needs matplotlib, which is not installed '
                 '(`make bench` installs it, or pip install matplotlib).')


def add_arguments(parser):
    parser.add_argument('--quick', action='store_true',
                        help='fewer rounds and repeats (what `make bench` '
                        'runs)')
    parser.add_argument('--only', nargs='+', metavar='NAME',
                        choices=sorted(WORKLOADS), help='run these only')
    parser.add_argument('--rounds', type=int, default=None,
                        help='processes per mode (default 3, quick 2)')
    parser.add_argument('--json', metavar='FILE',
                        help='write every measurement to FILE')
    parser.add_argument('--plot', metavar='FILE.png',
                        help='draw the speedups as a bar chart (matplotlib)')


def installed(module):
    """Whether ``module`` can be imported, without importing it here."""
    return importlib.util.find_spec(module) is not None


def _run_worker(mode, jobs, repeats, on_record):
    """Runs one worker process over ``jobs`` ((name, steps) pairs), calling
    ``on_record`` with each workload's record as it arrives."""
    env = dict(os.environ, CHAINER_FASTPATH='1', **ONE_THREAD)
    cmd = [sys.executable, '-m', 'chainer_fastpath.bench.worker', mode,
           str(repeats)] + ['{}:{}'.format(n, s) for n, s in jobs]
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                          text=True) as proc:
        for line in proc.stdout:
            if line.startswith('{'):
                on_record(json.loads(line))
    if proc.returncode:
        raise RuntimeError('the {} benchmark process failed (exit code {})'
                           .format(mode, proc.returncode))


def _progress(done, total, label, milestone=False):
    """Redraws the progress bar on a terminal at each step; elsewhere (a
    log) writes a line at milestones only."""
    tty = sys.stderr.isatty()
    if tty == milestone:
        return
    width = 30
    filled = width * done // total
    sys.stderr.write('{}[{}{}] {}/{} {:<32}'.format(
        '\r' if tty else '', '#' * filled, '.' * (width - filled), done,
        total, label))
    if done == total or not tty:
        sys.stderr.write('\n')
    sys.stderr.flush()


def _fmt_time(seconds):
    if seconds < 1e-3:
        return '{:.1f} us'.format(seconds * 1e6)
    if seconds < 1:
        return '{:.2f} ms'.format(seconds * 1e3)
    return '{:.2f} s'.format(seconds)


def measure_all(names, rounds, repeats, with_torch=False):
    """Returns ``{name: entry}``; an entry holds per-step seconds under each
    mode run (``stock``, ``patched``, ``torch``), ``result`` and ``note``
    by mode, or ``skipped`` with the reason."""
    jobs = {'stock': [(n, WORKLOADS[n][1]) for n in names]}
    jobs['patched'] = jobs['stock']
    if with_torch:
        jobs[TORCH] = [(n, s) for n, s in jobs['stock'] if n in TORCH_TWINS]
    modes = [m for m in jobs if jobs[m]]
    results = {n: {'result': {}, 'note': {}} for n in names}
    total = rounds * sum(len(jobs[m]) for m in modes)
    done = [0]

    def on_record(record):
        entry = results[record['name']]
        mode = record['mode']
        if 'skipped' in record:
            entry['skipped'] = record['skipped']
        else:
            entry.setdefault(mode, []).extend(record['times'])
            entry['result'].setdefault(mode, record['result'])
            if 'note' in record:
                entry['note'].setdefault(mode, record['note'])
        done[0] += 1
        _progress(done[0], total, '{} ({})'.format(record['name'], mode))

    for r in range(rounds):
        for mode in (modes if r % 2 == 0 else modes[::-1]):
            _run_worker(mode, jobs[mode], repeats, on_record)
            _progress(done[0], total, 'round {}/{}: {} done'.format(
                r + 1, rounds, mode), milestone=True)
    return results


def speedup(entry):
    """``(median ratio, min, max)`` of stock over patched time: the ratio of
    the medians, and the extremes over all pairs of measurements."""
    ratios = [s / p for s in entry['stock'] for p in entry['patched']]
    return (statistics.median(entry['stock'])
            / statistics.median(entry['patched']),
            min(ratios), max(ratios))


def same_result(entry):
    return entry['result']['stock'] == entry['result']['patched']


def format_table(results, with_torch):
    """The table, and lines under it: notes, and why PyTorch is n/a."""
    header = ('workload', 'stock', 'patched', 'speedup (min-max)',
              'same result', 'PyTorch', 'patched/PyTorch')
    rows, notes = [header], []
    for name, e in results.items():
        if 'skipped' in e:
            rows.append((name, 'skipped: ' + e['skipped']))
            continue
        patched = statistics.median(e['patched'])
        if not with_torch:
            torch_cells = ('n/a', 'n/a')
        elif TORCH in e:
            torch_time = statistics.median(e[TORCH])
            torch_cells = (_fmt_time(torch_time),
                           '{:.2f}'.format(patched / torch_time))
        else:
            torch_cells = ('-', '-')
        rows.append((name, _fmt_time(statistics.median(e['stock'])),
                     _fmt_time(patched),
                     '{:.2f}x ({:.2f}-{:.2f})'.format(*speedup(e)),
                     'yes' if same_result(e) else 'NO') + torch_cells)
        stock_note = e['note'].get('stock')
        if stock_note:
            patched_note = e['note'].get('patched')
            notes.append('{}: {}'.format(name, stock_note) if
                         patched_note == stock_note else
                         '{}: stock {}; patched {}'.format(
                             name, stock_note, patched_note))
    full = [r for r in rows if len(r) == len(header)]
    widths = [max(len(r[i]) for r in full) for i in range(len(header))]
    lines = []
    for i, r in enumerate(rows):
        lines.append('  '.join(c.ljust(w) if j == 0 else c.rjust(w)
                               for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            lines.append('  '.join('-' * w for w in widths))
    lines.append('')
    lines.append('speedup: stock/patched time, median (min-max over all '
                 'pairs); patched/PyTorch above 1: PyTorch eager is faster.')
    if not with_torch:
        lines.append(NO_TORCH)
    return '\n'.join(lines + notes)


def plot(results, path):
    """Writes a bar chart of the speedups (median, min-max error bars)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    names = [n for n, e in results.items() if 'skipped' not in e]
    stats = [speedup(results[n]) for n in names]
    fig, ax = plt.subplots(figsize=(7, 0.28 * len(names) + 1.2), dpi=80)
    y = range(len(names))
    ax.barh(y, [s[0] for s in stats], color='#4c72b0',
            xerr=[[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]],
            error_kw={'elinewidth': 1, 'capsize': 2})
    for i, s in enumerate(stats):
        ax.text(s[2], i, ' {:.2f}x'.format(s[0]), va='center', fontsize=7)
    ax.axvline(1.0, color='black', linewidth=0.8)
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel('speedup over stock Chainer (median, min-max)')
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(args):
    if args.plot and not installed('matplotlib'):
        print(NO_MATPLOTLIB, file=sys.stderr)
        return 2
    names = args.only or list(WORKLOADS)
    rounds = args.rounds or (2 if args.quick else 3)
    repeats = 3 if args.quick else 7
    with_torch = installed('torch')
    results = measure_all(names, rounds, repeats, with_torch)
    print(format_table(results, with_torch))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1)
    if args.plot:
        plot(results, args.plot)
    same = all(same_result(e) for e in results.values() if 'skipped' not in e)
    return 0 if same else 1
