"""``SerialIterator.__next__`` and ``ShuffleOrderSampler.__call__``
(``machinery/serial_iterator.pyx``), stock vs patched: the same batches,
state, epoch bookkeeping, random state after, errors, and the same calls
of what a user can replace."""
import unittest
from unittest import mock

import numpy
import pytest

import chainer
from chainer import testing
from chainer.datasets import DictDataset
from chainer.datasets import TupleDataset
from chainer.iterators import _statemachine
from chainer.iterators import SerialIterator
from chainer.iterators import ShuffleOrderSampler
from chainer import serializers

import chainer_fastpath
from chainer_fastpath.testing import check_same

from machinery_cases import described, outcome


class _Dataset(object):
    """A dataset of user code: records every call."""

    def __init__(self, n, calls):
        self.n = n
        self.calls = calls

    def __len__(self):
        self.calls.append(('len',))
        return self.n

    def __getitem__(self, index):
        self.calls.append(('getitem', type(index), int(index)))
        return index * 2


class _Sampler(object):
    """An order sampler of user code, from its own generator."""

    def __init__(self, calls):
        self.calls = calls
        self.random = numpy.random.RandomState(3)

    def __call__(self, order, position):
        self.calls.append(('sample', len(order), position))
        return self.random.permutation(len(order)).astype(numpy.int32)


DATASETS = {
    'tuples': lambda n, calls: TupleDataset(
        numpy.random.rand(n, 3).astype(numpy.float32),
        numpy.arange(n, dtype=numpy.int32)),
    'tuple_of_lists': lambda n, calls: TupleDataset(
        list(range(n)), [str(k) for k in range(n)]),
    'dicts': lambda n, calls: DictDataset(
        x=numpy.random.rand(n, 2), y=numpy.arange(n)),
    'array': lambda n, calls: numpy.arange(n * 2).reshape(n, 2),
    'list': lambda n, calls: list(range(n)),
    'user': lambda n, calls: _Dataset(n, calls),
}


@testing.parameterize(*testing.product({
    'dataset': sorted(DATASETS),
    'n': [10, 1],
    'batch_size': [3, 4, 10, 13],
    'repeat': [True, False],
    'order': ['shuffle', 'no_shuffle', 'sampler', 'seeded'],
}))
class TestSerialIterator(unittest.TestCase):

    def test_same_as_stock(self):
        def run():
            calls = []
            dataset = DATASETS[self.dataset](self.n, calls)
            kwargs = {'shuffle': True, 'no_shuffle': False,
                      'sampler': None, 'seeded': None}
            kwargs = {'shuffle': kwargs[self.order]}
            if self.order == 'sampler':
                kwargs['order_sampler'] = _Sampler(calls)
            elif self.order == 'seeded':
                kwargs['order_sampler'] = ShuffleOrderSampler(
                    numpy.random.RandomState(7))
            it = SerialIterator(dataset, self.batch_size,
                                repeat=self.repeat, **kwargs)
            out = []
            for _ in range(9):
                out.append(outcome(lambda: it.next()))
                out.append((it.epoch, it.epoch_detail, it.is_new_epoch,
                            it.current_position, it.previous_epoch_detail,
                            described(it._state.order)))
            it.reset()
            out.append(outcome(lambda: next(it)))
            out.append(calls)
            out.append(numpy.random.rand())
            return out
        stock, patched = check_same(run)
        assert stock == patched


def _mnist_like():
    return TupleDataset(numpy.random.rand(25, 4).astype(numpy.float32),
                        numpy.random.randint(0, 3, 25).astype(numpy.int32))


def test_the_fast_path_is_taken():
    with chainer_fastpath.enabled():
        it = SerialIterator(_mnist_like(), 10)
        for _ in range(5):
            it.next()
    stats = chainer_fastpath.stats()
    assert stats['SerialIterator.__next__'] == {'fast': 5, 'fallback': {}}
    assert stats['ShuffleOrderSampler.__call__']['fast'] == 3


def test_the_batch_is_the_datasets_rows():
    with chainer_fastpath.enabled():
        dataset = _mnist_like()
        it = SerialIterator(dataset, 4, shuffle=False)
        batch = it.next()
    x, y = dataset._datasets
    for k, (row, label) in enumerate(batch):
        assert row.base is x and not row.flags.owndata
        assert type(label) is numpy.int32 and label == y[k]


def test_serialized_state_as_stock():
    def run():
        it = SerialIterator(_mnist_like(), 7)
        for _ in range(5):
            it.next()
        target = {}
        it.serialize(serializers.DictionarySerializer(target))
        again = SerialIterator(_mnist_like(), 7)
        again.serialize(serializers.NpzDeserializer(target))
        return (sorted((k, described(numpy.asarray(v)))
                       for k, v in target.items()),
                [outcome(again.next) for _ in range(4)],
                again.epoch_detail, again.previous_epoch_detail)
    stock, patched = check_same(run)
    assert stock == patched


class _Subclass(SerialIterator):
    @property
    def epoch_detail(self):
        self.seen = getattr(self, 'seen', 0) + 1
        return 0.5


class _Plain(SerialIterator):
    pass


def test_a_subclass_overriding_a_property_goes_to_stock():
    def run():
        it = _Subclass(_mnist_like(), 10)
        batches = [outcome(it.next) for _ in range(3)]
        return batches, it.seen, it.previous_epoch_detail
    stock, patched = check_same(run)
    assert stock == patched
    counts = chainer_fastpath.stats()['SerialIterator.__next__']
    assert counts['fallback'] == {
        'SerialIterator subclass overrides epoch_detail': 3}


def test_a_plain_subclass_takes_the_fast_path():
    def run():
        it = _Plain(_mnist_like(), 10)
        return [outcome(it.next) for _ in range(3)]
    stock, patched = check_same(run)
    assert stock == patched
    assert chainer_fastpath.stats()['SerialIterator.__next__']['fast'] == 3


@pytest.mark.parametrize('owner, name', [
    (_statemachine, 'iterator_statemachine'), (numpy, 'concatenate'),
    (numpy, 'arange'), (ShuffleOrderSampler, '__call__'),
    (TupleDataset, '__getitem__'), (TupleDataset, '__len__'),
])
def test_a_mocked_callee_is_called_as_in_stock(owner, name):
    def run():
        original = getattr(owner, name)
        calls = []

        def spy(*args, **kwargs):
            calls.append((len(args), sorted(kwargs)))
            return original(*args, **kwargs)

        with mock.patch.object(owner, name, spy):
            it = SerialIterator(_mnist_like(), 10)
            out = [outcome(it.next) for _ in range(4)]
        return out, calls
    stock, patched = check_same(run)
    assert stock == patched


def test_a_method_replaced_on_the_class_goes_to_stock():
    def run():
        it = SerialIterator(_mnist_like(), 10)
        with mock.patch.object(SerialIterator, 'epoch_detail',
                               new_callable=mock.PropertyMock,
                               return_value=0.25) as prop:
            out = [outcome(it.next) for _ in range(2)]
        return out, prop.call_count, it._previous_epoch_detail
    stock, patched = check_same(run)
    assert stock == patched


@pytest.mark.parametrize('case', [
    'empty_repeat', 'empty_once', 'out_of_range', 'negative_order',
    'bad_sampler', 'float_position', 'numpy_batch_size', 'list_order',
])
def test_odd_states_as_stock(case):
    def run():
        dataset = _mnist_like()
        if case == 'empty_repeat':
            it = SerialIterator([], 2)
        elif case == 'empty_once':
            it = SerialIterator([], 2, repeat=False, shuffle=False)
        else:
            it = SerialIterator(dataset, 4)
        if case == 'out_of_range':
            it._state = it._state._replace(
                order=numpy.array([0, 1, 99] + [2] * 22))
        elif case == 'negative_order':
            it._state = it._state._replace(order=-numpy.arange(1, 26))
        elif case == 'bad_sampler':
            it.order_sampler = lambda order, i: order[:-1]
        elif case == 'float_position':
            it._state = it._state._replace(current_position=1.0)
        elif case == 'numpy_batch_size':
            it.batch_size = numpy.int64(4)
        elif case == 'list_order':
            it._state = it._state._replace(order=list(range(25)))
            it.order_sampler = lambda order, i: list(reversed(order))
        return ([outcome(it.next) for _ in range(8)],
                outcome(lambda: it.epoch_detail),
                described(it._state.order))
    stock, patched = check_same(run)
    assert stock == patched


def test_bad_calls_raise_as_stock():
    def run():
        it = SerialIterator(_mnist_like(), 4)
        sampler = ShuffleOrderSampler()
        return (outcome(lambda: SerialIterator.__next__()),
                outcome(lambda: SerialIterator.__next__(it, 1)),
                outcome(lambda: SerialIterator.__next__(object())),
                outcome(lambda: sampler(numpy.arange(3))),
                outcome(lambda: sampler(numpy.arange(3), 0, x=1)))
    stock, patched = check_same(run)
    assert stock == patched


def test_the_random_state_after_as_stock():
    def run():
        it = SerialIterator(_mnist_like(), 6)
        for _ in range(30):
            it.next()
        return numpy.random.get_state()[1].tobytes(), chainer.__version__
    stock, patched = check_same(run)
    assert stock == patched
