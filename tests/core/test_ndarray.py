"""``_ndarray.pyx``: arrays whose dtype equals a builtin one without being
its descr (an unpickled array's, and what NumPy computes from it) take the
compiled paths, with stock's results."""
import pickle

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L

import chainer_fastpath
from chainer_fastpath.testing import check_same


def _unpickled(a):
    a = pickle.loads(pickle.dumps(a))
    assert a.dtype.isbuiltin == 0 and a.dtype == numpy.dtype(a.dtype.char)
    return a


def _train(dtype):
    x = _unpickled(numpy.random.rand(6, 4).astype(dtype))
    t = _unpickled(numpy.array([0, 1, 2, 0, 1, 2], numpy.int32))
    model = L.Classifier(chainer.Sequential(
        L.Linear(4, 8), F.relu, lambda h: F.dropout(h, 0.25),
        L.Linear(8, 3)))
    model.to_device('@numpy')
    for p in model.params():
        p.array = p.array.astype(dtype)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    outputs = []
    for _ in range(3):
        model.cleargrads()
        loss = model(x, t)
        loss.backward()
        optimizer.update()
        y = F.sum(F.exp(F.tanh(F.sigmoid(x * 2 + 1))), axis=1)
        outputs.append((loss.array, y.array, y.array.dtype.isbuiltin))
    return outputs, [p.array for p in model.params()]


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_unpickled_arrays_train_as_stock(dtype):
    check_same(lambda: _train(dtype))


def test_unpickled_arrays_take_the_compiled_paths():
    chainer_fastpath.enable()
    _train(numpy.float32)
    stats = chainer_fastpath.function_stats()
    left = {s['name']: s for s in stats.values()
            if s['forward']['python'] or s['backward']['python']}
    # Everything ran compiled.
    assert set(left) == set(), left


def test_a_dtype_with_metadata_is_not_taken_for_the_builtin():
    chainer_fastpath.enable()
    dtype = numpy.dtype(numpy.float32, metadata={'unit': 'm'})
    x = chainer.Variable(numpy.ones((2, 3), dtype))
    y = F.linear(x, numpy.ones((4, 3), dtype))
    y.grad = numpy.ones((2, 4), dtype)
    y.backward()
    assert y.array.dtype.metadata == {'unit': 'm'}


_EMPTY_DTYPES = [
    numpy.dtype(numpy.float32), numpy.dtype(numpy.float64),
    numpy.dtype(numpy.float16), numpy.dtype(numpy.intp),
    numpy.dtype(numpy.intc), numpy.dtype(numpy.bool_),
    numpy.dtype('>f4'), numpy.dtype('<f8'),
    numpy.dtype(numpy.float32, metadata={'unit': 'm'}),
    numpy.dtype([('a', numpy.float32), ('b', numpy.int8)]),
    numpy.dtype('U3'), numpy.dtype(object), numpy.dtype('M8[s]'),
    _unpickled(numpy.zeros(1, numpy.float32)).dtype,
]


@pytest.mark.parametrize('dtype', _EMPTY_DTYPES, ids=str)
@pytest.mark.parametrize('shape', [(), (0,), (5,), (3, 4), (2, 0, 3),
                                   (1,) * 32])
@pytest.mark.parametrize('zeroed', [False, True])
def test_empty_and_zeros_are_numpy_s(dtype, shape, zeroed):
    from chainer_fastpath._core._ndarray import empty_for_tests
    ours = empty_for_tests(dtype, shape, zeroed)
    stock = (numpy.zeros if zeroed else numpy.empty)(shape, dtype)
    assert type(ours) is numpy.ndarray
    assert ours.dtype is dtype and stock.dtype is dtype
    assert ours.shape == stock.shape and ours.strides == stock.strides
    assert ours.flags == stock.flags
    if zeroed:
        assert ours.tobytes() == stock.tobytes()
    if dtype.hasobject:    # NumPy fills references with None, or 0
        assert ours.tolist() == stock.tolist()


@pytest.mark.parametrize('shape', [(-1,), (2, -3), (1 << 62, 1 << 62)])
@pytest.mark.parametrize('zeroed', [False, True])
def test_bad_shape_raises_as_numpy(shape, zeroed):
    from chainer_fastpath._core._ndarray import empty_for_tests
    dtype = numpy.dtype(numpy.float32)
    with pytest.raises(ValueError) as stock:
        (numpy.zeros if zeroed else numpy.empty)(shape, dtype)
    with pytest.raises(ValueError) as ours:
        empty_for_tests(dtype, shape, zeroed)
    assert str(ours.value) == str(stock.value)


def test_empty_of_a_dtype_type_is_numpy_empty():
    # A scalar type, not a descr, goes to NumPy's own call.
    from chainer_fastpath._core._ndarray import empty_for_tests
    a = empty_for_tests(numpy.float32, (2, 3))
    assert a.dtype == numpy.float32 and a.shape == (2, 3)
    z = empty_for_tests(numpy.float32, (2, 3), True)
    assert z.dtype == numpy.float32 and not z.any()
