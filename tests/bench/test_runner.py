"""The side-by-side runner: table, PyTorch column, --plot, exit status."""
import pytest

from chainer_fastpath import __main__ as cli
from chainer_fastpath.bench import runner


def _results(torch=True):
    ms = 1e-3
    results = {
        'mlp_train': {'stock': [4 * ms, 5 * ms], 'patched': [ms, ms],
                      'result': {'stock': 1.5, 'patched': 1.5}, 'note': {}},
        'add': {'stock': [50e-6], 'patched': [10e-6],
                'result': {'stock': 2.0, 'patched': 2.5}, 'note': {}},
        'digits_trainer': {'skipped': 'scikit-learn is not installed',
                           'result': {}, 'note': {}},
        'tree_net': {'stock': [30 * ms], 'patched': [10 * ms],
                     'result': {'stock': 0.5, 'patched': 0.5},
                     'note': {'stock': 'accuracy 0.9',
                              'patched': 'accuracy 0.9'}},
    }
    if torch:
        results['mlp_train']['torch'] = [2 * ms]
    return results


def _row(table, name):
    return next(line for line in table.splitlines()
                if line.startswith(name + ' '))


def test_table_with_torch_column():
    table = runner.format_table(_results(), with_torch=True)
    assert 'PyTorch' in table.splitlines()[0]
    row = _row(table, 'mlp_train').split()
    # 4.5 ms / 1 ms; patched 1 ms against PyTorch's 2 ms.
    assert row[1:] == ['4.50', 'ms', '1.00', 'ms', '4.50x', '(4.00-5.00)',
                       'yes', '2.00', 'ms', '0.50']
    # A workload without a PyTorch twin: dashes, not n/a.
    assert _row(table, 'add').split()[-2:] == ['-', '-']
    assert runner.NO_TORCH not in table


def test_table_without_torch_says_so():
    table = runner.format_table(_results(torch=False), with_torch=False)
    assert _row(table, 'mlp_train').split()[-2:] == ['n/a', 'n/a']
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

    def __init__(self, mode):
        self.mode = mode

    def answer(self):
        self.log.append((self.mode, 'ready'))
        return {'ready': True}

    def ask(self, command, *args):
        self.log.append((self.mode, command))
        if command == 'setup':
            return {'ready': True}
        if command == 'run':
            return {'time': float(len(self.log))}
        return {'result': 1.0}

    def close(self):
        self.log.append((self.mode, 'close'))


def test_repeats_alternate_modes_one_at_a_time(monkeypatch):
    monkeypatch.setattr(runner, 'Worker', _FakeWorker)
    _FakeWorker.log = []
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
