"""The worker process: one JSON line per workload, as it finishes."""
import json
import os
import subprocess
import sys

from chainer_fastpath.bench import worker


def test_worker_prints_one_record_per_workload():
    out = subprocess.run(
        [sys.executable, '-m', 'chainer_fastpath.bench.worker', 'patched',
         '2', 'add:3', 'mlp_train:2'],
        env=dict(os.environ, CHAINER_FASTPATH='1'), check=True,
        stdout=subprocess.PIPE, text=True).stdout
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r['name'], r['mode']) for r in records] == [
        ('add', 'patched'), ('mlp_train', 'patched')]
    for r in records:
        assert len(r['times']) == 2 and isinstance(r['result'], float)


def test_skip_is_a_record(monkeypatch):
    monkeypatch.setitem(sys.modules, 'sklearn.datasets', None)
    record = worker.measure('digits_trainer', 'stock', 1, 1)
    assert record == {'name': 'digits_trainer', 'mode': 'stock',
                      'skipped': 'scikit-learn is not installed'}
