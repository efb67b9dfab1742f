"""The grammar's training machinery (fuzz/machinery.py): its programs run
every compiled entry point of chainer_fastpath/machinery, reach the edges
users hit and the branches that hand calls to stock, and agree stock vs
patched."""
import random

from chainer_fastpath.testing.fuzz import coverage
from chainer_fastpath.testing.fuzz import grammar
from chainer_fastpath.testing.fuzz import machinery
from chainer_fastpath.testing.fuzz import program

# The compiled machinery's entry points (chainer_fastpath.stats() names).
ENTRIES = (
    'TupleDataset.__getitem__', 'TupleDataset.__len__',
    'DictDataset.__getitem__', 'DictDataset.__len__',
    'SerialIterator.__next__', 'ShuffleOrderSampler.__call__',
    '_ArbitraryCallableConverter.__call__', 'Reporter.report',
    'reporter.report', 'Summary.add', 'DictSummary.add',
    'Classifier.forward', 'StandardUpdater.update',
    'StandardUpdater.update_core', 'LogReport.__call__',
)


def _programs(category, n, seed):
    rng = random.Random(seed)
    operations = grammar.CATEGORY_OPERATIONS[category]
    for _ in range(n):
        data = bytes(rng.getrandbits(8) for _ in range(grammar.SIZE))
        yield grammar.build(data, operations=operations)


def test_machinery_runs_every_compiled_entry_at_its_edges():
    result = coverage.reach('machinery', programs=200)
    assert [e for e in ENTRIES if not result['entries'][e]] == []
    lines = coverage.entries_report(result, ENTRIES)
    assert lines[0] == 'compiled entry points reached: {0}/{0}'.format(
        len(ENTRIES))
    # Stock's errors at the edges: out of range, mismatched lengths, an
    # exhausted iterator, an unknown observer, an empty batch.
    assert {'IndexError', 'ValueError', 'StopIteration', 'KeyError',
            'ZeroDivisionError'} <= set(result['raised'])
    reasons = result['fallbacks']['_ArbitraryCallableConverter.__call__']
    assert {'not concat_examples', 'device not None, -1 or the CPU'} <= \
        set(reasons)
    assert 'SerialIterator subclass overrides epoch_detail' in \
        result['fallbacks']['SerialIterator.__next__']
    text = '\n'.join(result['sources'])
    for edge in ('padding=', 'repeat=False', 'order_sampler=Reversed()',
                 'ShuffleOrderSampler(numpy.random.RandomState(3))',
                 '.reset()', 'reloaded(', 'DictDataset(', 'MyTupleDataset(',
                 'label_key=', 'loss_func=', 'mock.MagicMock(wraps=',
                 'train(', 'Stand(', 'compute_mean()', 'make_statistics()'):
        assert edge in text, edge


def test_replaced_machinery_is_called_and_goes_to_stock():
    result = coverage.reach('replaced-machinery', programs=300)
    called = {what for kind, what in result['events'] if kind == 'call'}
    labels = {'{}.{}'.format(owner.rsplit('.', 1)[-1], method)
              for owner, method, _ in machinery.REPLACED}
    assert labels - called == set()
    reasons = {reason for entry in ENTRIES
               for reason in result['fallbacks'][entry]}
    assert {'SerialIterator methods replaced', '_statemachine replaced',
            'convert callees replaced', 'device methods replaced',
            'chainer.reporter helper replaced', 'Link methods replaced',
            'LogReport methods replaced'} <= reasons


def test_compiled_machinery_is_not_autospecced():
    # autospec makes a MagicMock, not a method, of a compiled function
    # (README section 6): the compiled entries are replaced the other ways.
    for p in _programs('replaced-machinery', 300, 1):
        for owner, method in machinery.COMPILED:
            assert 'patch.object({}, {!r}, autospec'.format(
                owner, method) not in p.source


def test_machinery_programs_agree(worker):
    for category, seed in (('machinery', 2), ('replaced-machinery', 3)):
        for p in _programs(category, 60, seed):
            assert worker.check(p) is None, p.source


def test_machinery_is_drawn_among_all_operations():
    assert machinery.machinery in grammar.OPERATIONS
    rng = random.Random(0)
    sources = [grammar.build(bytes(rng.getrandbits(8)
                                   for _ in range(grammar.SIZE))).source
               for _ in range(500)]
    assert any('chainer.iterators.SerialIterator(' in s for s in sources)
    assert program.Program(sources[0]).source == sources[0]
