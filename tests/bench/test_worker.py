"""The worker process: one JSON answer per command line."""
import io
import json
import os
import re
import subprocess
import sys

import pytest

from chainer_fastpath.bench import worker


def test_worker_answers_each_command():
    commands = ['setup add 3', 'run', 'run', 'result',
                'setup mlp_train 2', 'run', 'result']
    out = subprocess.run(
        [sys.executable, '-m', 'chainer_fastpath.bench.worker', 'patched'],
        env=dict(os.environ, CHAINER_FASTPATH='1'), check=True,
        input='\n'.join(commands) + '\n', stdout=subprocess.PIPE,
        text=True).stdout
    hello, *answers = [json.loads(line) for line in out.splitlines()]
    assert hello == {'ready': True}
    assert len(answers) == len(commands)
    assert answers[0] == answers[4] == {'ready': True}
    for i in (1, 2, 5):
        assert answers[i]['time'] > 0
    for i in (3, 6):
        assert re.fullmatch('[0-9a-f]{64}', answers[i]['result'])


def test_skip_is_an_answer(monkeypatch):
    monkeypatch.setitem(sys.modules, 'sklearn.datasets', None)
    answer = worker.Session('stock').setup('digits_trainer', 1)
    assert answer == {'skipped': 'scikit-learn is not installed'}


def test_unknown_command_is_refused():
    out = io.StringIO()
    with pytest.raises(ValueError, match='unknown command'):
        worker.serve(worker.Session('stock'), ['__init__ stock'], out)
    assert out.getvalue() == '{"ready": true}\n'
