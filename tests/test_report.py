"""``report()`` and ``run --report``: what ran compiled and what ran as
stock's Python, per entry point and per FunctionNode class."""
import io
import json
import subprocess
import sys
import textwrap

import pytest

import chainer_fastpath


_PROGRAM = textwrap.dedent('''
    import sys
    import numpy
    import chainer
    import chainer.functions as F
    import chainer.links as L

    class MLP(chainer.Chain):
        def __init__(self):
            super().__init__()
            with self.init_scope():
                self.l1 = L.Linear(4, 8)
                self.l2 = L.Linear(8, 3)

        def forward(self, x):
            return self.l2(F.relu(self.l1(x)))

    class LSTMNet(chainer.Chain):
        def __init__(self):
            super().__init__()
            with self.init_scope():
                self.lstm = L.LSTM(4, 4)
                self.out = L.Linear(4, 3)

        def forward(self, x):
            return self.out(F.dropout(self.lstm(x)))

    numpy.random.seed(0)
    model = LSTMNet() if sys.argv[1] == 'lstm' else MLP()
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    x = numpy.random.rand(5, 4).astype(numpy.float32)
    t = numpy.array([0, 1, 2, 0, 1], numpy.int32)
    for _ in range(4):
        y = model(x)
        loss = F.softmax_cross_entropy(y, t)
        if sys.argv[1] == 'lstm':
            F.elu(y)
        model.cleargrads()
        loss.backward()
        optimizer.update()
''')


def _run_report(tmp_path, model):
    script = tmp_path / 'train.py'
    script.write_text(_PROGRAM)
    path = tmp_path / 'report.json'
    res = subprocess.run(
        [sys.executable, '-m', 'chainer_fastpath', 'run', '--report',
         '--report-json', str(path), str(script), model],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert res.returncode == 0, res.stderr
    return res.stderr, json.loads(path.read_text())


def _function_rows(text):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.split()[:2] == ['function', 'node'])
    return {line.split()[0]: line.split()[1:] for line in lines[start + 1:]
            if line.startswith('  ') and not line.startswith('   ')}


def _entry_rows(text):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.split()[:2] == ['entry', 'point'])
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if not line.startswith('   '):     # not a further reason's line
            rows.append(line.split())
    return rows


def test_mlp_with_adam_prints_no_zero_row(tmp_path):
    text, report = _run_report(tmp_path, 'mlp')
    rows = _entry_rows(text)
    assert len(rows) >= 5
    for row in rows:
        # name ... fast fallback [reasons]: the first two numbers.
        numbers = [int(c.replace(',', '')) for c in row
                   if c.replace(',', '').isdigit()][:2]
        assert sum(numbers) > 0, row
    assert all(s['fast'] or s['fallback']
               for s in report['entry_points'].values())
    # Every node of the MLP with Adam ran compiled, forward and backward.
    rows = _function_rows(text)
    assert rows['LinearFunction'][:3] == ['8', 'compiled', 'compiled']
    assert rows['ReLU'][:3] == ['4', 'compiled', 'compiled']
    assert rows['SoftmaxCrossEntropy'][1:3] == ['compiled', 'compiled']
    assert 'stock Python ran: nothing' in report['headline']
    assert report['headline'] in text


def test_lstm_with_dropout_and_elu_names_elu_as_python(tmp_path):
    text, report = _run_report(tmp_path, 'lstm')
    rows = _function_rows(text)
    assert rows['ELU'][:3] == ['4', 'Python', '-']
    assert rows['Dropout'][:3] == ['4', 'compiled', 'compiled']
    assert rows['LSTM'][1:3] == ['compiled', 'compiled']
    assert 'stock Python ran: ELU (forward)' in report['headline']
    elu = next(f for f in report['functions'].values() if f['name'] == 'ELU')
    assert elu['forward'] == {'compiled': 0, 'python': 4,
                              'reasons': {'not compiled': 4}}
    dropout = next(f for f in report['functions'].values()
                   if f['name'] == 'Dropout')
    assert dropout['forward'] == {'compiled': 4, 'python': 0, 'reasons': {}}
    assert dropout['backward']['python'] == 0


@pytest.mark.parametrize('mock_forward', [False, True])
def test_a_mocked_forward_is_reported_as_python(monkeypatch, mock_forward):
    import chainer.functions as F
    from chainer.functions.activation import relu
    from chainer_fastpath.testing import variable

    if mock_forward:
        original = relu.ReLU.forward
        monkeypatch.setattr(relu.ReLU, 'forward',
                            lambda self, x: original(self, x))
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        F.relu(variable(2, 3))
        relu_row = chainer_fastpath.function_stats()[
            'chainer.functions.activation.relu.ReLU']
    if mock_forward:
        assert relu_row['forward'] == {
            'compiled': 0, 'python': 1,
            'reasons': {'patched or mocked method': 1}}
    else:
        assert relu_row['forward'] == {'compiled': 1, 'python': 0,
                                       'reasons': {}}


def test_reset_stats_zeroes_the_per_class_counts():
    import chainer.functions as F
    from chainer_fastpath.testing import variable

    with chainer_fastpath.enabled():
        F.dropout(F.relu(variable(2, 3)))
        assert chainer_fastpath.function_stats()
        chainer_fastpath.reset_stats()
        assert chainer_fastpath.function_stats() == {}
        buf = io.StringIO()
        chainer_fastpath.report(file=buf)
    assert 'function node' not in buf.getvalue()
