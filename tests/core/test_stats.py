"""Counters, the report, and the verbose fallback log."""
import io
import logging

import numpy
import pytest

import chainer
import chainer.functions as F

import chainer_fastpath
from chainer_fastpath._core import _stats


@pytest.fixture(autouse=True)
def _made_up_entries_are_dropped(monkeypatch):
    """The entries a test here makes up ('test.entry', ...) are gone after
    it: the tests run later see only the patch's own in ``stats()``."""
    monkeypatch.setattr(_stats, '_registry', dict(_stats._registry))


def test_stats_count_calls_through_each_entry_point():
    chainer_fastpath.enable()
    x = chainer.Variable(numpy.ones((2,), numpy.float32))
    y = F.sum(x * 2)
    y.backward()
    s = chainer_fastpath.stats()
    apply_calls = s['FunctionNode.apply']
    assert apply_calls['fast'] + sum(apply_calls['fallback'].values()) >= 2
    backward_calls = s['Variable.backward']
    assert backward_calls['fast'] + sum(
        backward_calls['fallback'].values()) == 1


def test_stock_calls_are_not_counted():
    x = chainer.Variable(numpy.ones((2,), numpy.float32))
    F.sum(x).backward()
    for entry in chainer_fastpath.stats().values():
        assert entry['fast'] == 0 and entry['fallback'] == {}


def test_reset_stats():
    e = _stats.entry('test.entry')
    e.fast += 3
    e.fallback('why')
    chainer_fastpath.reset_stats()
    assert chainer_fastpath.stats()['test.entry'] == {'fast': 0,
                                                      'fallback': {}}


def test_report_lists_every_reason_with_its_count():
    e = _stats.entry('test.report')
    e.fast += 5
    e.fallback('reason one')
    e.fallback('reason two')
    e.fallback('reason two')
    buf = io.StringIO()
    chainer_fastpath.report(file=buf)
    text = buf.getvalue()
    line = next(ln for ln in text.splitlines() if 'test.report' in ln)
    assert line.split()[1:3] == ['5', '3']
    assert 'reason two (2)' in text and 'reason one (1)' in text


def test_verbose_logs_each_reason_once(caplog, monkeypatch):
    monkeypatch.setenv('CHAINER_FASTPATH_VERBOSE', '1')
    chainer_fastpath.enable()
    e = _stats.entry('test.verbose')
    with caplog.at_level(logging.INFO, logger='chainer_fastpath'):
        for _ in range(3):
            e.fallback('some reason')
        e.fallback('other reason')
    messages = [r.getMessage() for r in caplog.records
                if 'test.verbose' in r.getMessage()]
    assert len(messages) == 2
    assert any('some reason' in m for m in messages)
    _stats.set_verbose(False)
