"""Every workload gives the same result stock and patched from the same
seed; the PyTorch twins run. No timing here: benchmarks measure, tests
assert behaviour."""
import sys

import numpy
import pytest

from chainer_fastpath.bench.workloads import (
    Skip, TORCH_TWINS, WORKLOADS, digest)
from chainer_fastpath.testing import check_same

# Steps per check: enough for an optimizer update to feed the next step.
STEPS = {'large_mlp': 1, 'digits_trainer': 1, 'mnist_trainer': 1,
         'ptb_lstm': 1, 'seq2seq': 1, 'cifar_convnet': 1, 'dcgan': 1,
         'text_cnn': 1, 'rnn_classifier': 1, 'resnet_trainer': 1}
NEEDS = {'digits_trainer': 'sklearn'}


def _run(make, steps):
    made = make(seed=0)
    for _ in range(steps):
        made[0]()
    return made[1]()


def _assert_digestible(result):
    """A result is ``{name: array}`` of finite floats, which the worker can
    digest."""
    assert result
    for a in result.values():
        a = numpy.asarray(a)
        assert a.dtype.kind == 'f' and numpy.isfinite(a).all()
    digest(result)


@pytest.mark.parametrize('name', list(WORKLOADS))
def test_same_result_stock_and_patched(name):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    make, _ = WORKLOADS[name]
    stock, _ = check_same(lambda: _run(make, STEPS.get(name, 2)))
    _assert_digestible(stock)


def test_digits_reports_accuracy():
    pytest.importorskip('sklearn')
    step, _, note = WORKLOADS['digits_trainer'][0](seed=0)
    step()
    assert note().startswith('test accuracy 0.')


def test_large_optimizer_rows_report_their_bound():
    import re
    step, _, note = WORKLOADS['sgd_1x10M'][0](seed=0)
    step()
    assert re.fullmatch(
        r'120 MB a step; triad [0-9.]+ GB/s; bound [0-9.]+ ms; '
        r'step [0-9.]+ ms = [0-9.]+x bound', note()), note()


def test_digits_without_sklearn_skips(monkeypatch):
    # A None entry in sys.modules makes the import raise ImportError.
    monkeypatch.setitem(sys.modules, 'sklearn.datasets', None)
    with pytest.raises(Skip, match='scikit-learn is not installed'):
        WORKLOADS['digits_trainer'][0](seed=0)


@pytest.mark.parametrize('name', list(TORCH_TWINS))
def test_torch_twin_runs(name):
    torch = pytest.importorskip('torch')
    threads = torch.get_num_threads()
    try:
        result = _run(TORCH_TWINS[name], STEPS.get(name, 2))
    finally:
        torch.set_num_threads(threads)
    _assert_digestible(result)


def test_every_twin_has_a_workload():
    assert set(TORCH_TWINS) <= set(WORKLOADS)
