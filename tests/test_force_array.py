"""chainer.utils.force_array, stock vs patched."""
import numpy
import pytest

import chainer

import chainer_fastpath
from chainer_fastpath.testing import check_same


@pytest.mark.parametrize('value,dtype', [
    (numpy.arange(3, dtype=numpy.float32), None),
    (numpy.arange(3, dtype=numpy.float32), numpy.float64),
    (numpy.arange(3, dtype=numpy.float32), numpy.float32),
    (numpy.float32(2.5), None),
    (numpy.float64(2.5), numpy.float16),
    (3.0, None),
    (numpy.array(1.5), None),
    (numpy.int64(3), numpy.float32),
    (numpy.bool_(True), None),
    (numpy.str_('a'), numpy.float32),
])
def test_force_array_same_stock_and_patched(value, dtype):
    def build():
        try:
            y = chainer.utils.force_array(value, dtype)
        except ValueError as e:
            return str(e)
        return y, y is value

    check_same(build)


def test_force_array_counts_fast_and_fallback():
    chainer_fastpath.enable()
    chainer.utils.force_array(numpy.zeros(2))
    chainer.utils.force_array(numpy.float32(1))
    chainer.utils.force_array(1.0)
    s = chainer_fastpath.stats()['utils.force_array']
    assert s['fast'] == 2
    assert sum(s['fallback'].values()) == 1


@pytest.mark.parametrize('errstate', [{}, {'over': 'raise'}], ids=str)
@pytest.mark.parametrize('mode', ['always', 'module'])
def test_cast_warns_from_stocks_line(fpe_outcome, mode, errstate):
    def fn(keep):
        chainer.utils.force_array(numpy.array([1e300, 1.0]), numpy.float32)
    stock, patched = check_same(lambda: fpe_outcome(fn, mode, errstate))
    assert stock['warnings'] or stock['error'] or mode == 'module'
