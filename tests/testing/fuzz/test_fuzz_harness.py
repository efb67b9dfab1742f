"""The fuzzer itself: it reports a planted difference and a planted crash,
keeps going after a crash, shrinks findings and writes runnable
reproducers."""
import io
import os
import subprocess
import sys

import numpy

from chainer_fastpath.testing.differential import NAN_BITS_REPRODUCIBLE
from chainer_fastpath.testing.fuzz import campaign
from chainer_fastpath.testing.fuzz import compare
from chainer_fastpath.testing.fuzz import grammar
from chainer_fastpath.testing.fuzz import program
from chainer_fastpath.testing.fuzz.worker import Worker

# Programs that behave differently only while the patch is on.
PATCHED = "__import__('chainer_fastpath').is_enabled()"
DIFFERENCE = 'v1 = Variable(arr((3,)))\nv2 = {}\n'.format(PATCHED)
CRASH = 'if {}:\n    __import__("os").abort()\n'.format(PATCHED)
AGREE = 'v1 = Variable(arr((2, 3)))\nv2 = F.sum(F.relu(v1) * v1)\n' \
        'v2.backward()\n'


def test_agreeing_program(worker):
    assert worker.check(program.Program(AGREE)) is None


def test_planted_difference_is_reported(worker):
    category, signature, detail = worker.check(program.Program(DIFFERENCE))
    assert category == 'new'
    assert "values['v2']" in detail and 'stock False | patched True' in \
        detail


def test_planted_crash_is_a_finding_and_the_next_case_runs(worker):
    category, signature, detail = worker.check(program.Program(CRASH))
    assert (category, signature) == ('crash', 'worker killed by SIGABRT')
    assert worker.check(program.Program(AGREE)) is None


def test_a_hang_is_a_finding():
    with Worker(timeout=2) as w:
        found = w.check(program.Program(
            "__import__('time').sleep(60)\n"))
        assert found[:2] == ('crash', 'worker hung')
        assert w.check(program.Program(AGREE)) is None


def test_numpy_scalars_compare_nans_as_nans_and_arrays_by_bits():
    neg_nan = -numpy.float64(numpy.nan)
    assert numpy.signbit(neg_nan)
    d = compare.describe
    assert d(neg_nan) == d(numpy.float64(numpy.nan))
    assert d(numpy.float32(numpy.nan)) != d(numpy.float64(numpy.nan))
    assert d(numpy.float64(-0.0)) != d(numpy.float64(0.0))
    if NAN_BITS_REPRODUCIBLE:
        assert d(numpy.array([neg_nan])) != d(numpy.array([numpy.nan]))


def test_exceptions_are_compared_by_type_and_message(worker):
    source = 'raise (TypeError if {} else ValueError)("m")\n'.format(
        PATCHED)
    found = worker.check(program.Program(source))
    assert found[0] == 'new' and "'ValueError' | patched 'TypeError'" in \
        found[2]
    source = 'raise ValueError(str({}))\n'.format(PATCHED)
    found = worker.check(program.Program(source))
    assert found[0] == 'new' and "'False' | patched 'True'" in found[2]


def test_warnings_are_compared(worker):
    source = ("if {}:\n    __import__('warnings').warn('w')\n"
              .format(PATCHED))
    found = worker.check(program.Program(source))
    assert found[0] == 'new' and found[1].startswith('warnings')


class _TanhWorker:
    """Stands for a worker on a build where F.tanh differs from stock."""

    deaths = 0
    cpu = 0.0

    def check(self, p, skip):
        if 'F.tanh(' in p.source:
            return 'new', 'values @ F.tanh', 'planted'
        return None


def test_campaign_shrinks_to_a_minimal_reproducer(tmp_path):
    c = campaign.Campaign(corpus=str(tmp_path), out=io.StringIO(),
                          worker=_TanhWorker())
    findings = c.run(programs=400, chunk=400, seed=1)
    assert [key for key, _, _ in findings] == [('new', 'values @ F.tanh')]
    (path,) = tmp_path.iterdir()
    found = program.load(path.read_text())
    # The input and the call: nothing else is needed to show it.
    assert found.source.count('\n') <= 2 and 'F.tanh(' in found.source
    assert found.config == program.DEFAULT_CONFIG
    # A second campaign knows it from the corpus.
    again = campaign.Campaign(corpus=str(tmp_path), worker=_TanhWorker(),
                              out=io.StringIO())
    assert again.run(programs=100, chunk=100, seed=2) == []


def test_reproducer_file_runs_and_round_trips(tmp_path):
    p = program.Program(DIFFERENCE, {'errstate': 'raise'})
    path = tmp_path / 'case.py'
    path.write_text(p.reproducer('category: new'))
    assert program.load(path.read_text()).message() == p.message()
    run = subprocess.run([sys.executable, str(path)], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=':'.join(
                             sys.path)))
    assert run.returncode == 1, run.stderr
    assert "values['v2']" in run.stdout
    path.write_text(program.Program(AGREE).reproducer())
    run = subprocess.run([sys.executable, str(path)], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=':'.join(
                             sys.path)))
    assert run.returncode == 0 and 'agree' in run.stdout, run.stderr


def test_reproducer_docstring_quotes_bytes_as_they_are():
    # A difference quotes arrays' bytes: backslashes, quotes, wrapped at
    # any character.
    comment = ('category: new\nsignature: values @ F.x\nv1: stock b"'
               + '\\x00\\xf8' * 20 + '" | patched b"\\x7f"""\\')
    text = program.Program(AGREE).reproducer(comment)
    assert program.load(text).message() == program.Program(AGREE).message()
    doc = program.docstring(text)
    assert 'signature: values @ F.x' in doc.splitlines()
    # textwrap breaks lines at the spaces.
    assert ''.join(doc.split()).endswith(
        ''.join(comment.splitlines()[-1].split()))


def test_skipped_categories_are_not_drawn():
    import random

    rng = random.Random(0)
    skip = frozenset({'hook-added-during-forward', 'node-arity',
                      'callable-metadata', 'warning-location',
                      'optimizer-fpe'})
    for _ in range(300):
        data = bytes(rng.getrandbits(8) for _ in range(grammar.SIZE))
        assert not (grammar.build(data, skip).features & skip)


def test_a_rule_class_attribute_a_program_leaves_is_removed():
    # A program may assign an update rule's inherited method to the rule's
    # class (its replacement's restore); the next program in the worker must
    # find the class as it was, or it would run stock's update patched.
    from chainer.optimizers import sgd

    from chainer_fastpath.testing.fuzz import execute
    from chainer_fastpath.testing.fuzz.program import DEFAULT_CONFIG

    assert 'update' not in vars(sgd.SGDRule)
    code = execute.compile_program(
        '_p = optimizers.sgd.SGDRule.update\n'
        'optimizers.sgd.SGDRule.update = _p\n')
    execute.run_once(code, DEFAULT_CONFIG)
    assert 'update' not in vars(sgd.SGDRule)
