"""``bench.split``: only the samples of the timed steps count, and the
workload's own code is the program's."""
import pytest

from chainer_fastpath.bench import split

STEPS = 'Session.run (chainer_fastpath/bench/worker.py:55)'
MAIN = 'thread (7): MainThread'
ROOT = '<module> (chainer_fastpath/bench/worker.py:120)'


def test_only_the_steps_count():
    stacks = [
        # start-up and the model's construction: not counted
        ([MAIN, ROOT, '_find_and_load (<frozen importlib._bootstrap>:1)'],
         50),
        ([MAIN, ROOT, 'setup (chainer_fastpath/bench/worker.py:40)',
          'apply (chainer/function_node.py:300)'], 20),
        # the steps
        ([MAIN, ROOT, STEPS,
          'step (chainer_fastpath/bench/programs/dqn.py:60)'], 2),
        ([MAIN, ROOT, STEPS,
          'step (chainer_fastpath/bench/programs/dqn.py:61)',
          'apply (chainer/function_node.py:300)'], 1),
        ([MAIN, ROOT, STEPS, 'x (chainer_fastpath/_fast_call.pyx:3)'], 1),
        # a BLAS thread waiting: not the program's
        (['thread (8)', 'sched_yield (libc.so.6)'], 30),
    ]
    shares, chainer, samples = split.steps_split(stacks)
    assert samples == 4
    assert shares['program'] == pytest.approx(0.5)
    assert shares['chainer'] == pytest.approx(0.25)
    assert shares['compiled'] == pytest.approx(0.25)
    assert chainer == [['apply (chainer/function_node.py)', 0.25]]


def test_no_samples_in_the_steps():
    assert split.steps_split([([MAIN, ROOT], 3)]) == ({}, [], 0)


def test_columns_name_categories_of_the_profile():
    from chainer_fastpath import _profile
    assert {c for c, _ in split.COLUMNS} <= set(_profile.CATEGORIES)
