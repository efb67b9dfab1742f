"""``TupleDataset`` and ``DictDataset`` indexing and length
(``machinery/datasets.pyx``), stock vs patched: the same examples, the same
errors, the same calls of the underlying datasets."""
import unittest

import numpy

from chainer import testing
from chainer.datasets import DictDataset
from chainer.datasets import TupleDataset

import chainer_fastpath
from chainer_fastpath.testing import check_same

from machinery_cases import outcome


class _Recorded(object):
    """A dataset of user code: records every index it is given."""

    def __init__(self, calls):
        self.calls = calls

    def __len__(self):
        return 6

    def __getitem__(self, index):
        self.calls.append(repr(index))
        if isinstance(index, slice):
            return list(range(6))[index]
        return [10, 11, 12, 13, 14, 15][index]


INDICES = {
    'int': 2, 'negative': -1, 'numpy_int': numpy.int64(3),
    'numpy_int32': numpy.int32(1), 'slice': slice(1, 5, 2),
    'empty_slice': slice(4, 2), 'list': [0, 2], 'array': numpy.array([1, 3]),
    'bool_mask': numpy.array([True, False] * 3), 'out_of_range': 6,
    'negative_out_of_range': -7, 'float': 1.5, 'string': 'a', 'none': None,
}


def _datasets(calls):
    return (numpy.arange(12, dtype=numpy.float32).reshape(6, 2),
            numpy.arange(6, dtype=numpy.int32), list('abcdef'),
            _Recorded(calls))


@testing.parameterize(*testing.product({
    'index': sorted(INDICES),
    'kind': ['tuple', 'dict'],
}))
class TestIndexing(unittest.TestCase):

    def test_same_as_stock(self):
        def run():
            calls = []
            parts = _datasets(calls)
            if self.kind == 'tuple':
                dataset = TupleDataset(*parts)
            else:
                dataset = DictDataset(**{k: v for k, v in zip('wxyz', parts)})
            return (outcome(lambda: dataset[INDICES[self.index]]),
                    len(dataset), calls)
        stock, patched = check_same(run)
        assert stock == patched


def test_the_fast_path_is_taken():
    with chainer_fastpath.enabled():
        t = TupleDataset(numpy.zeros(3), numpy.ones(3))
        d = DictDataset(a=numpy.zeros(3))
        t[0], d[1], len(t), len(d)
    stats = chainer_fastpath.stats()
    for name in ('TupleDataset.__getitem__', 'DictDataset.__getitem__',
                 'TupleDataset.__len__', 'DictDataset.__len__'):
        assert stats[name] == {'fast': 1, 'fallback': {}}, name


class _Sub(TupleDataset):
    def __getitem__(self, index):
        return ('sub', super().__getitem__(index))


def test_a_subclass_and_bad_calls_as_stock():
    def run():
        sub = _Sub(numpy.arange(3), numpy.arange(3) * 2)
        plain = TupleDataset(numpy.arange(3))
        return (outcome(lambda: sub[1]), outcome(lambda: sub[0:2]),
                outcome(lambda: TupleDataset.__getitem__(plain)),
                outcome(lambda: TupleDataset.__len__(plain, 1)),
                outcome(lambda: DictDataset.__getitem__(plain, 0)))
    stock, patched = check_same(run)
    assert stock == patched
