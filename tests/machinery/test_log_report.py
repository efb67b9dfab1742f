"""``LogReport.__call__`` (``machinery/log_report.pyx``), stock vs patched:
the same log entries, the same file, the same calls of the summary,
trigger, postprocess and file functions in the same order, the same
errors; a subclass and replaced methods run stock's code, counted."""
import json
import os
from unittest import mock

import numpy
import pytest

import chainer
from chainer.training.extensions import log_report as log_report_module

import chainer_fastpath
from chainer_fastpath.testing import check_same, error_of


class Updater:
    def __init__(self):
        self.epoch = 0
        self.iteration = 0
        self.epoch_detail = 0.0
        self.previous_epoch_detail = 0.0
        self.is_new_epoch = False


class Trainer:
    """What LogReport reads of a trainer, driven by hand."""

    def __init__(self, out):
        self.updater = Updater()
        self.observation = {}
        self.out = out
        self.is_before_training = False
        self.elapsed_time = 0.0

    def step(self, observation, per_epoch=4):
        u = self.updater
        u.iteration += 1
        u.previous_epoch_detail = u.epoch_detail
        u.epoch_detail = u.iteration / per_epoch
        u.is_new_epoch = u.iteration % per_epoch == 0
        u.epoch = u.iteration // per_epoch
        self.observation = observation
        self.elapsed_time = 0.5 * u.iteration


def _observation(i):
    v = numpy.float32(1.0 / (i + 1))
    return {'main/loss': v,
            'main/accuracy': numpy.array(0.25 * (i % 4), numpy.float32),
            'main/var': chainer.Variable(numpy.array(v * 2)),
            'main/weighted': (v, 2),
            'main/vector': numpy.ones(2, numpy.float32)}


def _run(tmp_path, steps=9, before=False, **kwargs):
    out = str(tmp_path / ('patched' if chainer_fastpath.is_enabled()
                          else 'stock'))
    os.makedirs(out, exist_ok=True)
    trainer = Trainer(out)
    log = log_report_module.LogReport(**kwargs)
    if before:
        trainer.is_before_training = True
        log(trainer)
        trainer.is_before_training = False
    for i in range(steps):
        trainer.step(_observation(i))
        log(trainer)
    files = {}
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name)) as f:
            files[name] = json.load(f)
    return log.log, files, log._summary.compute_mean()


@pytest.mark.parametrize('kwargs', [
    {},
    {'trigger': (1, 'iteration')},
    {'trigger': (3, 'iteration'), 'keys': ['main/loss', 'main/var', 'x']},
    {'trigger': (2, 'iteration'), 'filename': 'log_{iteration}_{epoch}'},
    {'trigger': (1, 'epoch'), 'filename': None},
    {'trigger': (2, 'iteration'),
     'postprocess': lambda stats: stats.update(extra=len(stats))},
])
@pytest.mark.parametrize('before', [False, True])
def test_same_as_stock(tmp_path, kwargs, before):
    check_same(lambda: _run(tmp_path, before=before, **kwargs))


def test_calls_in_stock_order(tmp_path):
    def fn():
        calls = []
        module = log_report_module
        with mock.patch.object(module.json, 'dump',
                               wraps=module.json.dump) as dump, \
                mock.patch.object(module.shutil, 'move',
                                  wraps=module.shutil.move) as move, \
                mock.patch.object(chainer.reporter.DictSummary, 'add',
                                  lambda self, d: calls.append(
                                      ('add', sorted(d)))), \
                mock.patch.object(module.LogReport, '_init_summary',
                                  autospec=True) as init:
            dump.side_effect = lambda *a, **k: calls.append(('dump', k))
            move.side_effect = lambda src, dst: calls.append(
                ('move', os.path.basename(src), os.path.basename(dst)))
            init.side_effect = lambda self: (
                calls.append('init'),
                setattr(self, '_summary', chainer.reporter.DictSummary()))
            _run(tmp_path, steps=3, trigger=(2, 'iteration'))
        return calls
    stock, _ = check_same(fn)
    assert [c if isinstance(c, str) else c[0] for c in stock] == [
        'init', 'add', 'add', 'dump', 'move', 'init', 'add']


def test_trigger_and_postprocess_see_what_stock_gives(tmp_path):
    def fn():
        seen = []

        def trigger(trainer):
            seen.append(('trigger', trainer.updater.iteration))
            return trainer.updater.iteration % 2 == 0

        def postprocess(stats):
            seen.append(('post', sorted(stats)))
        _run(tmp_path, steps=4, trigger=trigger, postprocess=postprocess)
        return seen
    check_same(fn)


def test_errors_as_stock(tmp_path):
    def fn():
        trainer = Trainer(str(tmp_path))
        log = log_report_module.LogReport(trigger=(1, 'iteration'),
                                          filename='log_{missing}')
        trainer.step(_observation(0))
        errors = [error_of(lambda: log(trainer)), error_of(lambda: log()),
                  error_of(lambda: log(trainer, 1))]
        bad = log_report_module.LogReport()
        trainer.step({'s': 'text'})
        errors.append(error_of(lambda: bad(trainer)))
        return errors, log.log
    check_same(fn)


class MyLogReport(log_report_module.LogReport):
    def _init_summary(self):
        super()._init_summary()
        self.inits = getattr(self, 'inits', 0) + 1


def test_subclass_and_replaced_methods_run_stock(tmp_path):
    def fn():
        log = MyLogReport(trigger=(1, 'iteration'), filename=None)
        trainer = Trainer(str(tmp_path))
        for i in range(3):
            trainer.step(_observation(i))
            log(trainer)
        plain = log_report_module.LogReport(trigger=(1, 'iteration'),
                                            filename=None)
        inits = []
        original = plain._init_summary
        plain._init_summary = lambda: (inits.append(1), original())
        plain(trainer)
        return log.inits, log.log, inits
    stock, _ = check_same(fn)
    assert stock[0] == 4 and stock[2] == [1]
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        fn()
        assert chainer_fastpath.stats()['LogReport.__call__'] == {
            'fast': 0, 'fallback': {'not a LogReport': 3,
                                    'LogReport methods replaced': 1}}


def test_fast_path_is_counted(tmp_path):
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _run(tmp_path, steps=3)
        assert chainer_fastpath.stats()['LogReport.__call__'] == {
            'fast': 3, 'fallback': {}}
