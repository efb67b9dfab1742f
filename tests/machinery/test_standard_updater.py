"""``StandardUpdater.update`` / ``update_core``
(``machinery/standard_updater.pyx``), and whole Trainer runs through the
compiled machinery, stock vs patched: the same parameters, optimizer state,
reports, LogReport entries and file, PrintReport output; the same calls of
the iterator, converter and optimizer, in the same order; the same
errors."""
import io
import json
import os
from unittest import mock

import numpy
import pytest

import chainer
import chainer.links as L
from chainer import iterators, optimizers, training
from chainer.dataset import convert
from chainer.training import extensions

import chainer_fastpath
from chainer_fastpath.testing import check_same, error_of


class MLP(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(4, 5)
            self.l2 = L.Linear(5, 3)

    def forward(self, x):
        return self.l2(chainer.functions.relu(self.l1(x)))


def _dataset(n=24):
    x = numpy.random.uniform(-1, 1, (n, 4)).astype(numpy.float32)
    t = numpy.random.randint(0, 3, n).astype(numpy.int32)
    return chainer.datasets.TupleDataset(x, t)


def _state(model, optimizer):
    params = {k: (p.array, p.grad) for k, p in model.namedparams()}
    states = {k: dict(p.update_rule.state) for k, p in model.namedparams()}
    return params, states, optimizer.t, optimizer.epoch


def _without_time(entries):
    return [{k: v for k, v in e.items() if k != 'elapsed_time'}
            for e in entries]


@pytest.mark.parametrize('optimizer_name', ['SGD', 'Adam', 'MomentumSGD'])
@pytest.mark.parametrize('shuffle', [False, True])
def test_trainer_run_same_as_stock(tmp_path, optimizer_name, shuffle):
    def fn():
        out = str(tmp_path / ('patched' if chainer_fastpath.is_enabled()
                              else 'stock'))
        model = L.Classifier(MLP())
        optimizer = getattr(optimizers, optimizer_name)()
        optimizer.setup(model)
        train = iterators.SerialIterator(_dataset(), 5, shuffle=shuffle)
        test = iterators.SerialIterator(_dataset(10), 4, repeat=False,
                                        shuffle=False)
        updater = training.updaters.StandardUpdater(train, optimizer)
        trainer = training.Trainer(updater, (3, 'epoch'), out=out)
        trainer.extend(extensions.Evaluator(test, model))
        log = extensions.LogReport(trigger=(2, 'iteration'))
        trainer.extend(log)
        printed = io.StringIO()
        trainer.extend(extensions.PrintReport(
            ['epoch', 'iteration', 'main/loss', 'main/accuracy',
             'validation/main/loss', 'validation/main/accuracy'],
            out=printed))
        trainer.run()
        with open(os.path.join(out, 'log')) as f:
            written = json.load(f)
        return (_state(model, optimizer), _without_time(log.log),
                _without_time(written), printed.getvalue(),
                updater.iteration, updater.epoch)
    check_same(fn)


def test_custom_loss_func_and_dict_batches(tmp_path):
    def fn():
        model = MLP()
        calls = []

        def loss_func(x, t):
            calls.append((x.shape, t.shape))
            loss = chainer.functions.softmax_cross_entropy(model(x), t)
            chainer.report({'loss': loss}, model)
            return loss

        def to_dict(batch, device=None):
            x, t = convert.concat_examples(batch, device)
            return {'x': x, 't': t}
        optimizer = optimizers.SGD()
        optimizer.setup(model)
        it = iterators.SerialIterator(_dataset(), 6)
        updater = training.updaters.StandardUpdater(
            it, optimizer, converter=to_dict, loss_func=loss_func)
        trainer = training.Trainer(updater, (5, 'iteration'),
                                   out=str(tmp_path))
        log = extensions.LogReport(trigger=(1, 'iteration'))
        trainer.extend(log)
        trainer.run()
        return calls, _state(model, optimizer), _without_time(log.log)
    check_same(fn)


def _custom_loop():
    model = L.Classifier(MLP())
    optimizer = optimizers.Adam()
    optimizer.setup(model)
    it = iterators.SerialIterator(_dataset(), 5)
    updater = training.updaters.StandardUpdater(it, optimizer)
    reports = []
    r = chainer.Reporter()
    r.add_observer('main', model)
    while it.epoch < 2:
        observation = {}
        with r.scope(observation):
            updater.update()
        reports.append({k: v.array for k, v in observation.items()})
    return _state(model, optimizer), reports, updater.iteration


def test_custom_loop_same_as_stock():
    check_same(_custom_loop)


@pytest.mark.parametrize('arrays', ['tuple', 'dict', 'single'])
def test_calls_in_stock_order(arrays):
    def fn():
        calls = []
        batch = [(numpy.ones(2, numpy.float32),)] * 2

        class Iterator(chainer.dataset.Iterator):
            is_new_epoch = True

            def next(self):
                calls.append('next')
                return batch

        def converter(b, device):
            calls.append(('convert', b is batch, device))
            x = numpy.ones((2, 2), numpy.float32)
            return {'tuple': (x, x), 'dict': {'a': x},
                    'single': x}[arrays]

        optimizer = mock.MagicMock()
        updater = training.updaters.StandardUpdater(
            Iterator(), optimizer, converter=converter,
            loss_func=lambda *a, **k: None)
        updater.update()
        for c in optimizer.mock_calls:
            if c[0] == 'update':
                calls.append(('update', len(c.args),
                              sorted(c.kwargs)))
            elif c[0] in ('new_epoch', 'target'):
                calls.append((c[0], c.kwargs))
        return calls, updater.iteration
    stock, _ = check_same(fn)
    assert stock[0][0] == 'next'
    assert stock[0][-1] == ('new_epoch', {'auto': True})


def test_update_calls_a_replaced_update_core():
    def fn():
        updater = training.updaters.StandardUpdater(
            iterators.SerialIterator(_dataset(), 4), optimizers.SGD())
        calls = []
        with mock.patch.object(training.updaters.StandardUpdater,
                               'update_core', lambda self: calls.append(1)):
            updater.update()
        updater.update_core = lambda: calls.append(2)
        updater.update()
        return calls, updater.iteration
    assert check_same(fn)[0] == ([1, 2], 2)


def test_converter_helper_replaced_is_called():
    def fn():
        model = L.Classifier(MLP())
        optimizer = optimizers.SGD()
        optimizer.setup(model)
        updater = training.updaters.StandardUpdater(
            iterators.SerialIterator(_dataset(), 4), optimizer)
        with mock.patch.object(convert, '_call_converter',
                               wraps=convert._call_converter) as m:
            updater.update()
        return [(len(c.args[1]), c.args[2]) for c in m.call_args_list]
    assert check_same(fn)[0] == [(4, None)]


def test_bad_calls_raise_as_stock():
    def fn():
        updater = training.updaters.StandardUpdater(
            iterators.SerialIterator(_dataset(), 4), optimizers.SGD())
        return [error_of(lambda: updater.update(1)),
                error_of(lambda: updater.update_core(x=1)),
                error_of(lambda: updater.update()),   # no target set up
                updater.iteration]
    check_same(fn)


def test_fast_path_is_counted(tmp_path):
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _custom_loop()
        stats = chainer_fastpath.stats()
        assert stats['StandardUpdater.update']['fallback'] == {}
        assert stats['StandardUpdater.update_core']['fast'] == (
            stats['StandardUpdater.update']['fast'])
        assert stats['Classifier.forward']['fallback'] == {}
