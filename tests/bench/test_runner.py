"""The side-by-side runner: table, PyTorch column, --plot, exit status,
the same-result decision."""
import json
import os
import re

import numpy
import pytest

from chainer_fastpath import __main__ as cli
from chainer_fastpath.bench import runner, worker
from chainer_fastpath.bench.workloads import SECTIONS, WORKLOADS


def _results(torch=True):
    ms = 1e-3
    results = {
        'mlp_train': {'stock': [4 * ms, 5 * ms], 'patched': [ms, ms],
                      'result': {'stock': 'c0ffee', 'patched': 'c0ffee'},
                      'note': {}},
        'add': {'stock': [50e-6], 'patched': [10e-6],
                'result': {'stock': 'c0ffee', 'patched': 'decade'},
                'note': {}},
        'digits_trainer': {'skipped': 'scikit-learn is not installed',
                           'result': {}, 'note': {}},
        'tree_net': {'stock': [30 * ms], 'patched': [10 * ms],
                     'result': {'stock': 'facade', 'patched': 'facade'},
                     'note': {'stock': 'accuracy 0.9',
                              'patched': 'accuracy 0.9'}},
    }
    if torch:
        results['mlp_train']['torch'] = [2 * ms, 4 * ms]
    results['mlp_train']['arithmetic'] = 0.25
    return results


def _row(table, name):
    return next(line for line in table.splitlines()
                if line.startswith(name + ' '))


def test_table_with_torch_column():
    table = runner.format_table(_results(), with_torch=True)
    assert 'PyTorch' in table.splitlines()[0]
    row = _row(table, 'mlp_train').split()
    # 4.5 ms / 1 ms; patched 1 ms against PyTorch's 3 ms (pairs 1/2 and
    # 1/4), a quarter of it arithmetic: 0.25 ms against 3 ms.
    assert row[1:] == ['4.50', 'ms', '1.00', 'ms', '4.50x', '(4.00-5.00)',
                       'yes', '3.00', 'ms', '0.33', '(0.25-0.50)', '25%',
                       '0.08']
    # A workload without a PyTorch twin: dashes, not n/a; nor a floor.
    assert _row(table, 'add').split()[-4:] == ['-', '-', 'n/a', 'n/a']
    assert runner.NO_TORCH not in table


def test_table_without_torch_says_so():
    table = runner.format_table(_results(torch=False), with_torch=False)
    assert _row(table, 'mlp_train').split()[-4:] == [
        'n/a', 'n/a', '25%', 'n/a']
    assert runner.NO_TORCH in table.splitlines()


def test_table_marks_mismatch_skip_and_notes():
    table = runner.format_table(_results(), with_torch=True)
    assert 'NO' in _row(table, 'add').split()
    assert _row(table, 'digits_trainer').split(None, 1)[1] == (
        'skipped: scikit-learn is not installed')
    assert 'tree_net: accuracy 0.9' in table.splitlines()


class _FakeWorker:
    """Stands in for a worker process: logs each command it is asked."""
    log = []
    cpus = []

    def __init__(self, mode, cpu=None):
        self.mode = mode
        self.cpus.append(cpu)

    def answer(self):
        self.log.append((self.mode, 'ready'))
        return {'ready': True}

    def ask(self, command, *args):
        self.log.append((self.mode, command))
        if command == 'setup':
            return {'ready': True}
        if command == 'run':
            return {'time': float(len(self.log))}
        return {'result': 'c0ffee'}

    def close(self):
        self.log.append((self.mode, 'close'))


def test_repeats_alternate_modes_one_at_a_time(monkeypatch):
    monkeypatch.setattr(runner, 'Worker', _FakeWorker)
    _FakeWorker.log, _FakeWorker.cpus = [], []
    results = runner.measure_all(['digits_trainer', 'mlp_train'], rounds=2,
                                 repeats=3, with_torch=True)
    runs = [m for m, c in _FakeWorker.log if c == 'run']
    # digits_trainer has no PyTorch twin; mlp_train has. The order reverses
    # from one repeat to the next, and from one round to the next.
    assert runs == (
        ['stock', 'patched', 'patched', 'stock', 'stock', 'patched']
        + ['stock', 'patched', 'torch', 'torch', 'patched', 'stock',
           'stock', 'patched', 'torch']
        + ['patched', 'stock', 'stock', 'patched', 'patched', 'stock']
        + ['torch', 'patched', 'stock', 'stock', 'patched', 'torch',
           'torch', 'patched', 'stock'])
    # The k-th times of the modes were taken one after the other.
    for entry in results.values():
        for s, p in zip(entry['stock'], entry['patched']):
            assert abs(s - p) == 1
    assert len(results['mlp_train']['torch']) == 6
    assert 'torch' not in results['digits_trainer']
    assert [c for m, c in _FakeWorker.log].count('close') == 6
    # Each round waits for all its workers before the first setup.
    log = [c for m, c in _FakeWorker.log]
    first_setup = log.index('setup')
    assert log[:first_setup] == ['ready'] * 3
    # All on the same CPU.
    assert _FakeWorker.cpus == [runner.one_cpu()] * 6


@pytest.mark.skipif(runner.one_cpu() is None, reason='no CPU affinity here')
def test_worker_runs_on_the_cpu_given():
    cpu = runner.one_cpu()
    w = runner.Worker('stock', cpu)
    try:
        assert w.answer() == {'ready': True}
        assert os.sched_getaffinity(w.proc.pid) == {cpu}
    finally:
        w.close()


def test_table_names_the_cpu():
    table = runner.format_table(_results(), with_torch=True, cpu=1)
    assert 'Every process ran on CPU 1, one at a time.' in table.splitlines()
    assert 'Every process ran' not in runner.format_table(
        _results(), with_torch=True)


def test_speedup_pairs_neighbouring_measurements():
    entry = {'stock': [4.0, 8.0, 6.0], 'patched': [1.0, 4.0, 2.0]}
    assert runner.speedup(entry) == (3.0, 2.0, 4.0)


def test_plot_without_matplotlib_fails_before_running(monkeypatch, capsys):
    monkeypatch.setattr(runner, 'installed', lambda module: False)

    def never(*args, **kwargs):
        raise AssertionError('measured although --plot cannot work')

    monkeypatch.setattr(runner, 'measure_all', never)
    assert cli.main(['bench', '--plot', 'x.png', '--only', 'add']) == 2
    assert runner.NO_MATPLOTLIB in capsys.readouterr().err


def test_plot_writes_png(tmp_path):
    pytest.importorskip('matplotlib')
    path = tmp_path / 'bench.png'
    runner.plot(_results(), str(path))
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_bench_command_end_to_end(tmp_path, capsys):
    path = tmp_path / 'bench.json'
    assert cli.main(['bench', '--only', 'add', '--rounds', '1',
                     '--json', str(path)]) == 0
    row = _row(capsys.readouterr().out, 'add').split()
    assert row[7] == 'yes'
    assert path.exists()


@pytest.mark.parametrize('option', ['-h', '--help'])
def test_bench_help_is_the_runners(option, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(['bench', option])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith('usage: python -m chainer_fastpath bench [-h]')
    assert '--quick' in out and '--only NAME' in out


@pytest.mark.parametrize('command', ['bench', 'report'])
def test_unknown_option_is_refused(command, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main([command, '--bogus'])
    assert info.value.code == 2
    assert 'unrecognized arguments: --bogus' in capsys.readouterr().err


def _flip_last_mantissa_bit(a):
    out = a.copy()
    out.view(numpy.uint32)[1] ^= 1
    return out


W = numpy.array([0.25, -1.5, 3.0], numpy.float32)
LOSS = numpy.float32(2.0)

# Pairs of results (stock, patched) that differ in some bits. All but the
# flipped bit have equal sums of parameters plus loss, the float the table
# used to compare.
DIFFERENT = {
    'one mantissa bit': ({'/W': W, 'loss': LOSS},
                         {'/W': _flip_last_mantissa_bit(W), 'loss': LOSS}),
    'cancelling within a parameter': (
        {'/W': W, 'loss': LOSS},
        {'/W': W + numpy.float32([0.5, -0.5, 0]), 'loss': LOSS}),
    'cancelling between parameter and loss': (
        {'/W': W, 'loss': LOSS},
        {'/W': W + numpy.float32([1, 0, 0]), 'loss': LOSS - 1}),
    'signed zero': ({'/W': numpy.float32([0.0])},
                    {'/W': numpy.float32([-0.0])}),
    'dtype': ({'/W': W}, {'/W': W.astype(numpy.float64)}),
    'shape': ({'/W': numpy.zeros((2, 3), numpy.float32)},
              {'/W': numpy.zeros((3, 2), numpy.float32)}),
    'names swapped': ({'/a': W, '/b': W[::-1]}, {'/a': W[::-1], '/b': W}),
}
SAME = {
    'copies': ({'/W': W, 'loss': LOSS}, {'/W': W.copy(), 'loss': LOSS}),
    'names in another order': ({'/a': W, '/b': LOSS}, {'/b': LOSS, '/a': W}),
    'a non-contiguous view': ({'/W': W[::2]}, {'/W': W[::2].copy()}),
    'the same NaN': ({'loss': numpy.float32('nan')},
                     {'loss': numpy.float32('nan')}),
}


def _answer(monkeypatch, result):
    """What a worker answers ``result`` for a workload that leaves
    ``result``."""
    monkeypatch.setitem(SECTIONS, 'fake', 'workloads')
    monkeypatch.setitem(
        WORKLOADS, 'fake', (lambda seed: (lambda: None, lambda: result), 1))
    session = worker.Session('stock')
    assert session.setup('fake', 1) == {'ready': True}
    return session.result()['result']


def _bench_with_results(monkeypatch, capsys, stock, patched):
    """Runs ``bench`` on an entry whose workers answered for ``stock`` and
    ``patched``; returns (exit status, the row's same-result cell)."""
    entry = {'stock': [2e-3], 'patched': [1e-3], 'note': {},
             'result': {'stock': _answer(monkeypatch, stock),
                        'patched': _answer(monkeypatch, patched)}}
    monkeypatch.setattr(runner, 'installed', lambda module: False)
    monkeypatch.setattr(runner, 'measure_all',
                        lambda *args: {'fake': entry})
    # The floor is measured in a worker, where 'fake' is no workload.
    monkeypatch.setattr(runner, 'measure_floors', lambda names, results: None)
    status = runner.main([])
    return status, _row(capsys.readouterr().out, 'fake').split()[7]


@pytest.mark.parametrize('case', sorted(DIFFERENT))
def test_any_bit_of_difference_is_not_the_same(case, monkeypatch, capsys):
    stock, patched = DIFFERENT[case]
    assert _bench_with_results(monkeypatch, capsys, stock, patched) == (
        1, 'NO')


@pytest.mark.parametrize('case', sorted(SAME))
def test_bit_identical_results_are_the_same(case, monkeypatch, capsys):
    stock, patched = SAME[case]
    assert _bench_with_results(monkeypatch, capsys, stock, patched) == (
        0, 'yes')


def test_object_arrays_cannot_be_digested(monkeypatch):
    with pytest.raises(TypeError, match="'/W'"):
        _answer(monkeypatch, {'/W': None})


def _program_results():
    ms = 1e-3
    return {
        'dqn': {'stock': [4 * ms], 'patched': [2 * ms], 'arithmetic': 0.25,
                'kernel': 0.05, 'samples': 400, 'note': {},
                'split': {'arithmetic': 0.2, 'compiled': 0.3, 'numpy_c': 0.1,
                          'chainer': 0.05, 'numpy_python': 0.0,
                          'program': 0.3, 'gc': 0.01, 'imports': 0.0,
                          'other': 0.04},
                'split_chainer': [['Linear.forward (chainer/l.py)', 0.04],
                                  ['report (chainer/reporter.py)', 0.01]],
                'split_samples': 500,
                'result': {'stock': 'c0ffee', 'patched': 'c0ffee'}},
        'vae': {'stock': [4 * ms], 'patched': [2 * ms], 'note': {},
                'floor_skipped': 'perf is not installed',
                'split_skipped': 'py-spy is not installed',
                'result': {'stock': 'c0ffee', 'patched': 'c0ffee'}},
    }


def test_programs_table_has_the_arithmetic_and_split_columns():
    table = runner.format_table(_program_results(), with_torch=False)
    assert table.startswith('program ')
    assert re.split(r'\s{2,}', table.splitlines()[0])[-9:] == [
        'arithmetic', 'patched/floor', 'kernel', 'arith.', 'compiled',
        'NumPy C', 'Chainer Py', 'own Py', 'GC']
    # A quarter of the patched time is arithmetic: 4x the floor; then the
    # kernel's share, and py-spy's split.
    assert _row(table, 'dqn').split()[-9:] == [
        '25%', '4.00', '5%', '20%', '30%', '10%', '5%', '30%', '1%']
    assert _row(table, 'vae').split()[-9:] == ['n/a'] * 9
    lines = table.splitlines()
    assert 'arithmetic: n/a, perf is not installed' in lines
    assert 'split: n/a, py-spy is not installed' in lines
    assert ("dqn: Chainer's Python ran most in Linear.forward (chainer/l.py) "
            '(4.0%), report (chainer/reporter.py) (1.0%)') in lines
    # No PyTorch column, so no word about PyTorch missing.
    assert runner.NO_TORCH not in table


def test_sections_make_separate_tables():
    results = dict(_results(), **_program_results())
    lines = runner.format_table(results, with_torch=True).splitlines()
    headers = [i for i, line in enumerate(lines)
               if line.startswith(('workload ', 'program '))]
    assert [lines[i].split()[0] for i in headers] == ['workload', 'program']
    assert lines.index(_row('\n'.join(lines), 'dqn')) > headers[1]


def test_markdown_has_summary_then_every_table(tmp_path):
    results = dict(_results(), **_program_results())
    text = runner.format_markdown(results, with_torch=True)
    lines = text.splitlines()
    assert [line for line in lines if line.startswith('## ')] == [
        '## Summary', '## Workloads', '## Programs']
    # The summary: the SUMMARY rows that ran, PyTorch's time where a twin
    # ran, '-' where none did.
    summary = lines[lines.index('## Summary') + 2:lines.index('## Workloads')]
    assert summary[0] == '| workload | stock | patched | PyTorch | speedup |'
    assert summary[2] == '| `add` | 50.0 us | 10.0 us | - | 5.00x |'
    assert summary[3] == ('| `mlp_train` | 4.50 ms | 1.00 ms | 3.00 ms '
                          '| 4.50x |')
    assert not any('digits_trainer' in line for line in summary)
    # Every row of the text table is a row of the Markdown one.
    table = runner.format_table(results, with_torch=True)
    assert _row(table, 'dqn').split()[1:3] == ['4.00', 'ms']
    assert ('| `dqn` | 4.00 ms | 2.00 ms | 2.00x (2.00-2.00) | yes | 25% '
            '| 4.00 |') in text


def test_from_json_renders_without_measuring(tmp_path, monkeypatch, capsys):
    saved = tmp_path / 'bench.json'
    saved.write_text(json.dumps(_results()))

    def measure(*args):
        raise AssertionError('measured')
    monkeypatch.setattr(runner, 'measure_all', measure)
    markdown = tmp_path / 'bench.md'
    assert runner.main(['--from-json', str(saved),
                        '--markdown', str(markdown)]) == 1   # 'add' differs
    assert _row(capsys.readouterr().out, 'mlp_train')
    assert markdown.read_text() == runner.format_markdown(_results(), True)


def test_from_json_keeps_the_machine_and_fills_the_readme(tmp_path):
    saved = tmp_path / 'bench.json'
    saved.write_text(json.dumps(
        dict(_results(), _machine='CPU X, NumPy 1')))
    readme = tmp_path / 'README.md'
    readme.write_text('intro\n{}\nold table\n{}\nafter\n'.format(
        runner.README_START, runner.README_END))
    markdown = tmp_path / 'bench.md'
    runner.main(['--from-json', str(saved), '--markdown', str(markdown),
                 '--readme', str(readme), '--json', str(tmp_path / 'b.json')])
    text = readme.read_text()
    assert 'old table' not in text
    assert text.startswith('intro\n' + runner.README_START + '\n')
    assert text.endswith(runner.README_END + '\nafter\n')
    assert runner.summary_markdown(_results(), True) in text
    assert 'one thread, on CPU X, NumPy 1.' in text
    assert markdown.read_text().startswith('Measured on: CPU X, NumPy 1.\n')
    # Saved again, the machine is kept under its key, not as a workload.
    resaved = json.loads((tmp_path / 'b.json').read_text())
    assert resaved[runner.MACHINE] == 'CPU X, NumPy 1'
    assert set(resaved) - {runner.MACHINE} == set(_results())


def test_readme_without_markers_fails_before_measuring(tmp_path, monkeypatch):
    readme = tmp_path / 'README.md'
    readme.write_text('no block here\n')

    def measure(*args):
        raise AssertionError('measured')
    monkeypatch.setattr(runner, 'measure_all', measure)
    with pytest.raises(ValueError, match='bench-summary'):
        runner.main(['--only', 'add', '--readme', str(readme)])
    assert readme.read_text() == 'no block here\n'


def test_plot_has_a_pytorch_panel(tmp_path):
    pytest.importorskip('matplotlib')
    import matplotlib.pyplot as plt
    saved = plt.subplots
    panels = []

    def subplots(*args, **kwargs):
        panels.append(args[:2])
        return saved(*args, **kwargs)
    plt.subplots = subplots
    try:
        runner.plot(_results(), str(tmp_path / 'a.png'))
        runner.plot(_results(torch=False), str(tmp_path / 'b.png'))
    finally:
        plt.subplots = saved
    assert panels == [(1, 2), (1, 1)]
