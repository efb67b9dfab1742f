"""``python -m chainer_fastpath bench``: every workload stock and patched
(and its PyTorch twin where torch is installed), in separate one-thread
processes taking turns, reported side by side.

Each mode's repeats of a workload alternate with the other modes', so that
drift on the machine hits them alike, and only one process runs at a time,
always on the same CPU.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

from chainer_fastpath import _doctor
from chainer_fastpath.bench import floor, split
from chainer_fastpath.bench.workloads import SECTIONS, TORCH_TWINS, WORKLOADS

MODES = ('stock', 'patched')
TORCH = 'torch'
# The key under which --json keeps what the run measured on (_doctor.machine).
MACHINE = '_machine'
ONE_THREAD = {v: '1' for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS',
                               'MKL_NUM_THREADS')}
NO_TORCH = ('PyTorch: n/a, torch is not installed '
            '(`make bench` installs it, or pip install torch==2.13.0).')
NO_MATPLOTLIB = ('error: --plot needs matplotlib, which is not installed '
                 '(`make bench` installs it, or pip install matplotlib).')


def parse_args(argv):
    """Parses ``bench``'s options (``-h`` prints their help and exits)."""
    parser = argparse.ArgumentParser(prog='python -m chainer_fastpath bench')
    parser.add_argument('--quick', action='store_true',
                        help='fewer rounds and repeats (what `make bench` '
                        'runs)')
    parser.add_argument('--only', nargs='+', metavar='NAME',
                        choices=sorted(WORKLOADS), help='run these only')
    parser.add_argument('--section', choices=sorted(set(SECTIONS.values())),
                        help='run this table only')
    parser.add_argument('--rounds', type=int, default=None,
                        help='processes per mode (default 3, quick 2)')
    parser.add_argument('--json', metavar='FILE',
                        help='write every measurement to FILE')
    parser.add_argument('--plot', metavar='FILE.png',
                        help='draw the speedups as a bar chart (matplotlib)')
    parser.add_argument('--markdown', metavar='FILE',
                        help='write the tables to FILE in Markdown, the '
                        'summary table first')
    parser.add_argument('--readme', metavar='FILE',
                        help='replace the summary table of FILE (between '
                        'its bench-summary markers) with this run\'s')
    parser.add_argument('--from-json', metavar='FILE',
                        help='measure nothing: the tables (and --markdown, '
                        '--plot) of the results saved in FILE by --json')
    return parser.parse_args(argv)


def installed(module):
    """Whether ``module`` can be imported, without importing it here."""
    return importlib.util.find_spec(module) is not None


def one_cpu():
    """The CPU the benchmark processes run on: the last one this process
    may use; None where processes cannot be pinned (not Linux).

    On one CPU the pairs compare like with like: a virtual machine's CPUs
    can differ in speed for seconds at a time (another guest's load on a
    sibling thread), and a process tends to stay on the CPU it ran on, so
    that two unpinned processes measured a millisecond apart can be on a
    fast and a slow one."""
    if not hasattr(os, 'sched_getaffinity'):
        return None
    return max(os.sched_getaffinity(0))


class Worker:
    """A running worker process of one mode (see :mod:`.worker`), pinned
    to ``cpu`` unless it is None."""

    def __init__(self, mode, cpu=None, prefix=()):
        self.mode = mode
        env = dict(os.environ, CHAINER_FASTPATH='1', **ONE_THREAD)
        # prefix: a command that runs the worker (a sampler), whose own
        # lines on stdout ``answer`` skips.
        self.proc = subprocess.Popen(
            list(prefix)
            + [sys.executable, '-m', 'chainer_fastpath.bench.worker', mode],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)
        if cpu is not None:
            os.sched_setaffinity(self.proc.pid, {cpu})

    def ask(self, *command):
        """Sends one command and returns the worker's answer."""
        try:
            self.proc.stdin.write(' '.join(map(str, command)) + '\n')
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        return self.answer()

    def answer(self):
        """Waits for the worker's next answer and returns it."""
        line = self.proc.stdout.readline()
        while line and not line.startswith('{'):
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(
                'the {} benchmark process failed (exit code {})'.format(
                    self.mode, self.proc.wait()))
        return json.loads(line)

    def close(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait()
        self.proc.stdout.close()


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
    mode run (``stock``, ``patched``, ``torch``), ``result`` (the digest)
    and ``note`` by mode, or ``skipped`` with the reason.

    Each round starts one worker per mode, all on one CPU
    (:func:`one_cpu`). Workload by workload, the
    workers build it, then take turns running one repeat each, in an order
    that reverses from repeat to repeat; the k-th times of the modes were
    measured next to each other, so drift on the machine hits them alike.
    """
    modes = list(MODES) + ([TORCH] if with_torch else [])
    results = {n: {'result': {}, 'note': {}} for n in names}
    total, done = rounds * len(names) * repeats, 0
    cpu = one_cpu()
    for r in range(rounds):
        workers = {m: Worker(m, cpu) for m in modes}
        try:
            # Started together, they must all have finished importing
            # before the first timing.
            for worker in workers.values():
                worker.answer()
            for name in names:
                entry, steps = results[name], WORKLOADS[name][1]
                here = [m for m in modes if m != TORCH or name in TORCH_TWINS]
                for mode in (here if r % 2 == 0 else here[::-1]):
                    answer = workers[mode].ask('setup', name, steps)
                    if 'skipped' in answer:
                        entry['skipped'] = answer['skipped']
                ready = [] if 'skipped' in entry else here
                for i in range(repeats):
                    for mode in (ready if (r + i) % 2 == 0 else ready[::-1]):
                        entry.setdefault(mode, []).append(
                            workers[mode].ask('run')['time'])
                    done += 1
                    _progress(done, total, '{} (round {}/{})'.format(
                        name, r + 1, rounds))
                for mode in ready:
                    answer = workers[mode].ask('result')
                    entry['result'].setdefault(mode, answer['result'])
                    if 'note' in answer:
                        entry['note'].setdefault(mode, answer['note'])
        finally:
            for worker in workers.values():
                worker.close()
        _progress(done, total, 'round {}/{} done'.format(r + 1, rounds),
                  milestone=True)
    return results


def measure_floors(names, results):
    """Adds ``arithmetic`` and ``kernel`` (the shares of patched time spent
    in arithmetic and in the kernel, see :mod:`.floor`) and ``samples`` to
    the entries of ``names`` that ran, or ``floor_skipped`` with why they
    could not be measured; and to the programs among them, ``split`` (the
    shares of :mod:`.split`) or ``split_skipped``."""
    why = floor.available()
    why_split = split.available()
    names = [n for n in names if 'skipped' not in results[n]]
    for done, name in enumerate(names, 1):
        entry = results[name]
        if why:
            entry['floor_skipped'] = why
        else:
            worker = Worker('patched', one_cpu())
            try:
                worker.answer()
                worker.ask('setup', name, WORKLOADS[name][1])
                (entry['arithmetic'], entry['kernel'],
                 entry['samples']) = floor.shares(worker)
                worker.ask('result')
            finally:
                worker.close()
        if SECTIONS[name] == 'programs':
            if why_split:
                entry['split_skipped'] = why_split
            else:
                (entry['split'], entry['split_chainer'],
                 entry['split_samples']) = split.measure(
                    Worker, name, WORKLOADS[name][1], one_cpu())
        _progress(done, len(names), name + ' (where the time goes)')


def speedup(entry):
    """``(median, min, max)`` of stock over patched time, over the pairs of
    measurements taken next to each other."""
    ratios = [s / p for s, p in zip(entry['stock'], entry['patched'])]
    return statistics.median(ratios), min(ratios), max(ratios)


def same_result(entry):
    """Whether stock and patched left bit-identical results: the workers'
    digests of them are equal."""
    return entry['result']['stock'] == entry['result']['patched']


def _render(rows, header):
    """Lines of a table: the header, a rule, then ``rows``; a row shorter
    than the header (a skipped workload) runs on past the columns."""
    full = [r for r in rows if len(r) == len(header)] + [header]
    widths = [max(len(r[i]) for r in full) for i in range(len(header))]
    lines = []
    for i, r in enumerate([header] + rows):
        lines.append('  '.join(c.ljust(w) if j == 0 else c.rjust(w)
                               for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            lines.append('  '.join('-' * w for w in widths))
    return lines


def _timing_cells(e):
    return (_fmt_time(statistics.median(e['stock'])),
            _fmt_time(statistics.median(e['patched'])),
            '{:.2f}x ({:.2f}-{:.2f})'.format(*speedup(e)),
            'yes' if same_result(e) else 'NO')


def _torch_cells(e, with_torch):
    if not with_torch:
        return ('n/a', 'n/a')
    if TORCH not in e:
        return ('-', '-')
    torch_time = statistics.median(e[TORCH])
    # The range over the pairs measured one after the other: how far one
    # repeat's ratio strays from the ratio of the medians.
    pairs = [p / t for p, t in zip(e['patched'], e[TORCH])]
    return (_fmt_time(torch_time), '{:.2f} ({:.2f}-{:.2f})'.format(
        statistics.median(e['patched']) / torch_time, min(pairs),
        max(pairs)))


def _floor_cells(e):
    if 'arithmetic' not in e:
        return ('n/a', 'n/a')
    share = e['arithmetic']
    return ('{:.0%}'.format(share),
            '{:.2f}'.format(1 / share) if share else 'inf')


def _split_cells(e):
    # The kernel's share (perf), then where py-spy saw the time go.
    kernel = '{:.0%}'.format(e['kernel']) if 'kernel' in e else 'n/a'
    shares = e.get('split') or {}
    return (kernel,) + tuple(
        '{:.0%}'.format(shares[c]) if c in shares else 'n/a'
        for c, _ in split.COLUMNS)


def _torch_floor_cells(e, with_torch):
    # The arithmetic share, and patched/PyTorch were the patched time its
    # arithmetic alone.
    if 'arithmetic' not in e:
        return ('n/a', 'n/a')
    share = '{:.0%}'.format(e['arithmetic'])
    if not with_torch or TORCH not in e:
        return (share, 'n/a' if not with_torch else '-')
    return (share, '{:.2f}'.format(
        e['arithmetic'] * statistics.median(e['patched'])
        / statistics.median(e[TORCH])))


def _notes(results):
    notes = []
    for name, e in results.items():
        if e.get('split_chainer'):
            notes.append("{}: Chainer's Python ran most in {}".format(
                name, ', '.join('{} ({:.1%})'.format(where, share)
                                for where, share in e['split_chainer'])))
        stock_note = e['note'].get('stock')
        if stock_note:
            patched_note = e['note'].get('patched')
            notes.append('{}: {}'.format(name, stock_note) if
                         patched_note == stock_note else
                         '{}: stock {}; patched {}'.format(
                             name, stock_note, patched_note))
    return notes


def _tables(results, with_torch):
    """``[(header, rows)]``: the workloads' table, then the programs'."""
    timing = ('stock', 'patched', 'speedup (min-max)', 'same result')
    sections = {}
    for name, e in results.items():
        sections.setdefault(SECTIONS[name], []).append(name)
    tables = []
    if 'workloads' in sections:
        rows = [(n, 'skipped: ' + results[n]['skipped'])
                if 'skipped' in results[n] else
                (n,) + _timing_cells(results[n])
                + _torch_cells(results[n], with_torch)
                + _torch_floor_cells(results[n], with_torch)
                for n in sections['workloads']]
        tables.append((('workload',) + timing
                       + ('PyTorch', 'patched/PyTorch (min-max)',
                          'arithmetic', 'floor/PyTorch'), rows))
    if 'programs' in sections:
        rows = [(n, 'skipped: ' + results[n]['skipped'])
                if 'skipped' in results[n] else
                (n,) + _timing_cells(results[n]) + _floor_cells(results[n])
                + _split_cells(results[n])
                for n in sections['programs']]
        tables.append((('program',) + timing
                       + ('arithmetic', 'patched/floor', 'kernel')
                       + tuple(h for _, h in split.COLUMNS), rows))
    return tables


def format_table(results, with_torch, cpu=None):
    """The tables (workloads, then programs), and lines under them: what
    the columns mean, the CPU the processes ran on, notes, and why PyTorch
    or the floor is n/a."""
    lines = []
    tables = _tables(results, with_torch)
    for header, rows in tables:
        lines += _render(rows, header) + ['']
    sections = {header[0] for header, _ in tables}
    lines.append('speedup: stock/patched time, median (min-max) over the '
                 'pairs measured one after the other.')
    if cpu is not None:
        lines.append('Every process ran on CPU {}, one at a time.'.format(cpu))
    if 'workload' in sections:
        lines.append('patched/PyTorch above 1: PyTorch eager is faster; '
                     'median patched time over median PyTorch time (min-max '
                     'over the pairs measured one after the other); '
                     'floor/PyTorch: the same were the patched time its '
                     'arithmetic alone, the least the row can reach without '
                     'other arithmetic.')
    lines.append('same result: stock and patched left bit-identical '
                 'parameters (or outputs, gradients) and loss: the sha256 of '
                 'their names, dtypes, shapes and bytes is equal.')
    lines.append('arithmetic: the share of patched time in BLAS, '
                 "NumPy's inner loops, copies and random numbers (perf "
                 'samples).')
    if 'program' in sections:
        lines.append('patched/floor: patched time over its arithmetic time, '
                     '1.00 = no overhead left.')
        lines.append('kernel: the share of patched time in the kernel (perf '
                     "samples); arith. to GC: the shares py-spy's samples of "
                     "the patched steps give arithmetic, the compiled fast "
                     "path, NumPy's C code, Chainer's Python, the program's "
                     'own Python (with the NumPy calls it makes itself) and '
                     "the cyclic GC (the rest: NumPy's Python, other native "
                     'code).')
        lines += sorted({'split: n/a, ' + e['split_skipped']
                         for e in results.values() if 'split_skipped' in e})
    skipped = {e['floor_skipped'] for e in results.values()
               if 'floor_skipped' in e}
    lines += ['arithmetic: n/a, ' + why for why in sorted(skipped)]
    if not with_torch and 'workload' in sections:
        lines.append(NO_TORCH)
    return '\n'.join(lines + _notes(results))


#: The rows of the summary table: a few workloads, from one op to
#: a large network, and a few whole programs.
SUMMARY = ('add', 'linear', 'mlp_train', 'seq_labeler', 'lstm_lm',
           'tree_net', 'large_mlp', 'mnist_trainer', 'ptb_lstm',
           'word2vec_hsm', 'dqn', 'cifar_convnet')


def _markdown(header, rows):
    """A Markdown table; numbers right-aligned, the first column code."""
    def cells(row):
        return '| ' + ' | '.join(row) + ' |'
    lines = [cells(header),
             '| --- |' + ' ---: |' * (len(header) - 1)]
    for row in rows:
        row = ('`{}`'.format(row[0]),) + tuple(row[1:])
        lines.append(cells(row + ('',) * (len(header) - len(row))))
    return lines


def summary_markdown(results, with_torch):
    """The summary table in Markdown: for the rows of ``SUMMARY`` that ran,
    the median step time stock, patched and PyTorch (``-`` without a twin)
    and the speedup."""
    rows = []
    for name in SUMMARY:
        e = results.get(name)
        if e is None or 'skipped' in e:
            continue
        stock, patched, ratio, _ = _timing_cells(e)
        torch_time = _torch_cells(e, with_torch)[0]
        rows.append((name, stock, patched,
                     torch_time if torch_time != 'n/a' else '-',
                     ratio.split()[0]))
    return '\n'.join(_markdown(
        ('workload', 'stock', 'patched', 'PyTorch', 'speedup'), rows))


def format_markdown(results, with_torch, machine=None):
    """The summary table, then every table of ``format_table``, in
    Markdown; first the ``machine`` they were measured on, if known."""
    parts = ['Measured on: {}.'.format(machine), ''] if machine else []
    parts += ['## Summary', '', summary_markdown(results, with_torch)]
    for header, rows in _tables(results, with_torch):
        parts += ['', '## {}s'.format(header[0].capitalize()), '',
                  '\n'.join(_markdown(header, rows))]
    notes = _notes(results)
    if notes:
        parts += [''] + ['- ' + note for note in notes]
    return '\n'.join(parts) + '\n'


README_START = '<!-- bench-summary: made by `make bench-docs` -->'
README_END = '<!-- /bench-summary -->'


def readme_summary(results, with_torch, machine=None):
    """What ``--readme`` puts between the markers: the summary table and
    the line saying what it was measured on."""
    lines = [summary_markdown(results, with_torch), '',
             'Median time per step, one thread{}.'.format(
                 ', on ' + machine if machine else '')]
    return '\n'.join(lines)


def replace_readme_summary(text, summary):
    """``text`` with what lies between the markers replaced by
    ``summary``; ValueError where the markers are missing."""
    start = text.find(README_START)
    end = text.find(README_END, start)
    if start < 0 or end < 0:
        raise ValueError('no {} ... {} block'.format(README_START,
                                                    README_END))
    return (text[:start + len(README_START)] + '\n' + summary + '\n'
            + text[end:])


def has_torch(results):
    """Whether ``results`` (as saved by ``--json``) were measured with
    PyTorch."""
    return any(TORCH in e for e in results.values())


def plot(results, path):
    """Writes a bar chart of the speedups (median, min-max error bars),
    and beside it, where PyTorch ran, patched time over PyTorch's."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    names = [n for n, e in results.items() if 'skipped' not in e]
    stats = [speedup(results[n]) for n in names]
    versus = [statistics.median(results[n]['patched'])
              / statistics.median(results[n][TORCH])
              if TORCH in results[n] else None for n in names]
    panels = 2 if any(v is not None for v in versus) else 1
    fig, axes = plt.subplots(1, panels, sharey=True, squeeze=False,
                             figsize=(7 if panels == 1 else 11,
                                      0.28 * len(names) + 1.2), dpi=80)
    ax = axes[0][0]
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
    if panels == 2:
        ax = axes[0][1]
        for i, v in enumerate(versus):
            if v is None:
                continue
            ax.barh(i, v, color='#55a868' if v <= 1 else '#c44e52')
            ax.text(v, i, ' {:.2f}'.format(v), va='center', fontsize=7)
        ax.axvline(1.0, color='black', linewidth=0.8)
        ax.set_xlabel('patched time / PyTorch eager time (below 1: '
                      'patched faster)')
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv):
    """Runs ``bench`` with options ``argv``; returns the exit status (1 when
    a result differs stock vs patched)."""
    args = parse_args(argv)
    if args.plot and not installed('matplotlib'):
        print(NO_MATPLOTLIB, file=sys.stderr)
        return 2
    if args.readme:
        # Before measuring: a missing block fails now, not minutes later.
        with open(args.readme) as f:
            replace_readme_summary(f.read(), '')
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
        machine = results.pop(MACHINE, None)
        with_torch = has_torch(results)
        print(format_table(results, with_torch))
    else:
        names = args.only or [n for n in WORKLOADS
                               if args.section in (None, SECTIONS[n])]
        rounds = args.rounds or (2 if args.quick else 3)
        repeats = 3 if args.quick else 7
        with_torch = installed('torch')
        results = measure_all(names, rounds, repeats, with_torch)
        measure_floors(list(results), results)
        machine = _doctor.machine()
        print(format_table(results, with_torch, one_cpu()))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(dict(results, **{MACHINE: machine}), f, indent=1)
    if args.markdown:
        with open(args.markdown, 'w') as f:
            f.write(format_markdown(results, with_torch, machine))
    if args.readme:
        with open(args.readme) as f:
            text = f.read()
        with open(args.readme, 'w') as f:
            f.write(replace_readme_summary(
                text, readme_summary(results, with_torch, machine)))
    if args.plot:
        plot(results, args.plot)
    same = all(same_result(e) for e in results.values() if 'skipped' not in e)
    return 0 if same else 1
