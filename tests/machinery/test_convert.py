"""``concat_examples`` (``machinery/convert.pyx``), stock vs patched: the
same arrays (dtype, shape, strides, flags, bytes), the same errors, the
same calls of what stock calls; the name stays the same ``Converter``."""
import unittest
from unittest import mock

import numpy
import pytest

import chainer
from chainer import backend
from chainer import testing
from chainer.backends import _cpu
from chainer.dataset import convert
from chainer.training.updaters import standard_updater

import chainer_fastpath
from chainer_fastpath.testing import check_same

from machinery_cases import outcome


def _arrays(shape, dtype, n=5, layout='c'):
    out = []
    for k in range(n):
        a = (numpy.random.uniform(-9, 9, shape) * (k + 1)).astype(dtype)
        if layout == 'f':
            a = numpy.asfortranarray(a)
        elif layout == 'strided':
            a = numpy.repeat(a, 2, axis=-1)[..., ::2]
        out.append(a)
    return out


def _special(dtype):
    a = numpy.array([numpy.nan, -numpy.inf, numpy.inf, -0.0, 0.0, 1e-40],
                    dtype=dtype)
    return [a, a[::-1].copy()]


BATCHES = {
    'tuples': lambda: list(zip(_arrays((3, 4), numpy.float32),
                               numpy.arange(5).astype(numpy.int32))),
    'tuples_of_arrays': lambda: list(zip(_arrays((2,), numpy.float64),
                                         _arrays((), numpy.int64))),
    'arrays': lambda: _arrays((2, 3), numpy.float16),
    'zero_d': lambda: _arrays((), numpy.float32),
    'one_element': lambda: _arrays((1,), numpy.float64, n=1),
    'empty_examples': lambda: _arrays((0, 3), numpy.float32),
    'f_order': lambda: _arrays((3, 4), numpy.float32, layout='f'),
    'strided': lambda: _arrays((3, 4), numpy.float32, layout='strided'),
    'special_values': lambda: _special(numpy.float32),
    'mixed_dtypes': lambda: [numpy.zeros(2, numpy.float32),
                             numpy.ones(2, numpy.float64)],
    'python_ints': lambda: [(numpy.zeros(2), k) for k in range(4)],
    'python_floats': lambda: [1.5, 2.5, -0.0],
    'bools': lambda: [True, False, True],
    'huge_ints': lambda: [2 ** 64 - 1, 1],
    'numpy_scalars': lambda: list(numpy.arange(4, dtype=numpy.int32)),
    'float16_scalars': lambda: list(numpy.array([1, numpy.nan],
                                                numpy.float16)),
    'mixed_scalars': lambda: [numpy.int32(1), 2.5, True],
    'lists': lambda: [([1, 2], 1), ([3, 4], 2)],
    'dicts': lambda: [{'x': a, 'y': numpy.int32(k)}
                      for k, a in enumerate(_arrays((3,), numpy.float32))],
    'subclass': lambda: [numpy.zeros(2).view(_Array),
                         numpy.ones(2).view(_Array)],
    'namedtuples': lambda: [_Pair(numpy.zeros(2), 1), _Pair(numpy.ones(2), 2)],
    'short_tuple': lambda: [(numpy.zeros(2), 1), (numpy.ones(2),)],
    'longer_tuple': lambda: [(numpy.zeros(2),), (numpy.ones(2), 3)],
    'tuple_batch': lambda: tuple(_arrays((2,), numpy.float32)),
    'shapes_differ': lambda: [numpy.zeros(2), numpy.zeros(3)],
    'empty': lambda: [],
    'dict_missing_key': lambda: [{'x': numpy.zeros(2)}, {'y': numpy.zeros(2)}],
}

PADDED = {
    'variable_length': lambda: [(numpy.arange(k, dtype=numpy.float32),
                                 numpy.int32(k)) for k in range(4)],
    'two_axes': lambda: [numpy.ones((k + 1, 3 - k), numpy.int32)
                         for k in range(3)],
    'zero_d': lambda: _arrays((), numpy.float64),
    'dicts': lambda: [{'x': numpy.arange(k + 1), 'y': numpy.arange(2 - k)}
                      for k in range(2)],
    'mixed_dtypes': lambda: [numpy.zeros(2, numpy.float32),
                             numpy.ones(3, numpy.float64)],
    'ndims_differ': lambda: [numpy.zeros(2), numpy.zeros((2, 2))],
    'scalars': lambda: [1, 2, 3],
    'f_order': lambda: _arrays((3, 4), numpy.float32, layout='f'),
}


class _Array(numpy.ndarray):
    pass


class _Pair(tuple):
    def __new__(cls, x, y):
        return tuple.__new__(cls, (x, y))


@testing.parameterize(*testing.product({
    'batch': sorted(BATCHES),
    'device': ['none', 'minus_one', 'cpu', 'keyword'],
}))
class TestConcatExamples(unittest.TestCase):

    def test_same_as_stock(self):
        def call():
            batch = BATCHES[self.batch]()
            if self.device == 'none':
                return outcome(lambda: convert.concat_examples(batch))
            if self.device == 'minus_one':
                return outcome(lambda: convert.concat_examples(batch, -1))
            if self.device == 'keyword':
                return outcome(lambda: convert.concat_examples(
                    batch, device=_cpu.CpuDevice()))
            return outcome(lambda: convert.concat_examples(
                batch, _cpu.CpuDevice()))
        stock, patched = check_same(call)
        assert stock == patched


@testing.parameterize(*testing.product({
    'batch': sorted(PADDED),
    'padding': [-1, 0.5, numpy.nan, 'tuple'],
}))
class TestPadding(unittest.TestCase):

    def test_same_as_stock(self):
        def call():
            batch = PADDED[self.batch]()
            padding = self.padding
            if padding == 'tuple':
                padding = (7, 8)
            return outcome(lambda: convert.concat_examples(
                batch, padding=padding))
        stock, patched = check_same(call)
        assert stock == patched


def test_the_name_stays_the_same_converter():
    before = convert.concat_examples
    with chainer_fastpath.enabled():
        assert chainer.dataset.concat_examples is before
        assert convert.concat_examples is before
        assert isinstance(before, chainer.dataset.Converter)
        assert type(before) is convert._ArbitraryCallableConverter
        assert before.base_callable is convert.concat_examples_func
        # The updaters' default is still it.
        updater = standard_updater.StandardUpdater(
            chainer.iterators.SerialIterator([numpy.zeros(1)], 1),
            chainer.optimizers.SGD().setup(chainer.Link()))
        assert updater.converter is before


def test_the_converter_pickles_and_loads():
    import pickle
    with chainer_fastpath.enabled():
        loaded = pickle.loads(pickle.dumps(convert.concat_examples))
        assert loaded.base_callable is convert.concat_examples_func
        out = loaded(BATCHES['tuples']())
    assert len(out) == 2


def test_the_fast_path_is_taken():
    batch = BATCHES['tuples']()
    with chainer_fastpath.enabled():
        convert.concat_examples(batch)
        convert.concat_examples(batch, -1)
        # A CpuDevice, whose from_array is a staticmethod (went to stock
        # until the fuzzer's coverage showed it).
        convert.concat_examples(batch, _cpu.CpuDevice())
        convert.concat_examples(batch, chainer.get_device('@numpy'))
    counts = chainer_fastpath.stats()['_ArbitraryCallableConverter.__call__']
    assert counts == {'fast': 4, 'fallback': {}}


def test_the_fast_path_fills_one_new_array():
    # The column is one array of its own, not a view of an example.
    batch = BATCHES['arrays']()
    with chainer_fastpath.enabled():
        out = convert.concat_examples(batch)
    assert out.base is None and out.flags.owndata
    batch[0][...] = 0
    assert out[0].any()


def test_other_converters_go_to_stock():
    seen = []

    @chainer.dataset.converter()
    def mine(batch, device):
        seen.append(device)
        return len(batch)

    with chainer_fastpath.enabled():
        assert mine([1, 2], -1) == 2
    assert isinstance(seen[0], backend.Device)
    counts = chainer_fastpath.stats()['_ArbitraryCallableConverter.__call__']
    assert counts == {'fast': 0, 'fallback': {'not concat_examples': 1}}


@pytest.mark.parametrize('owner, name', [
    (convert, '_concat_arrays'), (convert, 'to_device'),
    (convert, '_concat_arrays_with_padding'), (convert, '_get_device'),
    (backend, 'get_device_from_array'), (chainer, 'using_device'),
    (numpy, 'concatenate'), (_cpu.CpuDevice, 'send'),
])
def test_a_mocked_callee_is_called_as_in_stock(owner, name):
    def run():
        original = getattr(owner, name)
        with mock.patch.object(owner, name, side_effect=original,
                               autospec=isinstance(owner, type)) as spy:
            convert.concat_examples(PADDED['variable_length'](), -1,
                                    padding=0)
            convert.concat_examples(BATCHES['tuples'](), _cpu.CpuDevice())
        return [(len(c.args), sorted(c.kwargs)) for c in spy.call_args_list]
    stock, patched = check_same(run)
    assert stock == patched


def test_a_mocked_base_callable_is_called():
    def run():
        conv = convert._ArbitraryCallableConverter(
            convert.concat_examples_func)
        with mock.patch.object(conv, 'base_callable',
                               side_effect=convert.concat_examples_func) as m:
            conv(BATCHES['tuples'](), -1)
        return [(c.args[1:], c.kwargs) for c in m.call_args_list]
    stock, patched = check_same(run)
    assert stock == patched


@pytest.mark.parametrize('args, kwargs', [
    ((), {}), ((1, 2, 3, 4), {}), ((), {'batch': [1], 'nope': 1}),
    (([1],), {'device': 'nonsense'}), (([1],), {'device': 0.5}),
    (([1], None, None), {'padding': 1}),
])
def test_bad_calls_raise_as_stock(args, kwargs):
    def run():
        return outcome(lambda: convert.concat_examples(*args, **kwargs))
    stock, patched = check_same(run)
    assert stock == patched
