"""``_core._broadcast_views``: broadcast views made in C, against NumPy's own
``broadcast_to`` and ``broadcast_arrays``."""
from unittest import mock

import numpy
import pytest

from chainer_fastpath._core import _broadcast_views as _views

pytestmark = pytest.mark.skipif(not _views.ready(),
                                reason='views are left to NumPy here')


def _same_view(ours, theirs):
    assert type(ours) is type(theirs) is numpy.ndarray
    assert ours.shape == theirs.shape
    assert ours.strides == theirs.strides
    assert _views.raw_flags(ours) == _views.raw_flags(theirs)
    assert ours.dtype is theirs.dtype
    assert (ours.__array_interface__['data']
            == theirs.__array_interface__['data'])
    assert ours.base is theirs.base


def _operand(rng, shape, dtype):
    """An array of ``shape``: C-ordered, or a strided, reversed or
    transposed view, or read-only."""
    kind = rng.randint(4)
    if kind == 1 and shape:
        big = numpy.zeros(tuple(2 * d for d in shape), dtype)
        return big[tuple(slice(None, None, 2) for _ in shape)]
    if kind == 2 and shape:
        return numpy.zeros(shape[::-1], dtype).T[
            tuple(slice(None, None, -1) for _ in shape)]
    a = numpy.zeros(shape, dtype)
    if kind == 3:
        a.flags.writeable = False
    return a


def _target(rng, shape):
    lead = tuple(rng.choice([0, 1, 2, 3], size=rng.randint(3)))
    return lead + tuple(int(rng.choice([0, 1, 3])) if d == 1 else d
                        for d in shape)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64,
                                   numpy.int32, numpy.dtype('>f8')])
def test_broadcast_to_same_view_as_numpy(dtype):
    rng = numpy.random.RandomState(0)
    for _ in range(500):
        shape = tuple(rng.choice([0, 1, 1, 2, 3], size=rng.randint(5)))
        a = _operand(rng, shape, dtype)
        target = _target(rng, a.shape)
        _same_view(_views.broadcast_to_(a, target),
                   numpy.broadcast_to(a, target))


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_broadcast_arrays_same_views_as_numpy(dtype):
    rng = numpy.random.RandomState(1)
    for _ in range(500):
        shape = tuple(rng.choice([1, 1, 2, 3], size=rng.randint(4)))
        n = rng.randint(1, 4)
        arrays = [_operand(rng, tuple(d if rng.rand() < 0.6 else 1
                                      for d in shape[rng.randint(
                                          len(shape) + 1):]), dtype)
                  for _ in range(n)]
        theirs = numpy.broadcast_arrays(*arrays)
        ours = _views.broadcast_arrays_(*arrays)
        assert type(ours) is list and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            if any(t is a for a in arrays):
                assert o is t
            else:
                _same_view(o, t)


def test_broadcast_arrays_of_a_broadcast_view_as_numpy():
    # An operand that warns on a write passes the warning on.
    a, b = numpy.broadcast_arrays(numpy.zeros((2, 1)), numpy.zeros(3))
    for args in ((a, numpy.zeros((4, 1, 1))), (b, numpy.zeros((2, 1)))):
        for o, t in zip(_views.broadcast_arrays_(*args),
                        numpy.broadcast_arrays(*args)):
            _same_view(o, t)


def test_a_write_warns_as_numpys():
    a = numpy.zeros((2, 1))
    ours = _views.broadcast_arrays_(a, numpy.zeros(3))[0]
    theirs = numpy.broadcast_arrays(a, numpy.zeros(3))[0]
    for view in (ours, theirs):
        with pytest.warns(DeprecationWarning):
            view[0, 0] = 1.0


@pytest.mark.parametrize('a,shape', [
    (numpy.zeros((2, 3)), (3, 3)),
    (numpy.zeros((2, 3)), (3,)),
    (numpy.zeros(3), ()),
    # An axis of length 1 in the target takes only a's length 1 (the
    # fuzzer's finding: a (2, 1, 1) operand was viewed as (2, 1, 2, 1)).
    (numpy.zeros((2, 1, 1)), (2, 1, 2, 1)),
    (numpy.zeros(3), (1,)),
    (numpy.zeros((2, 3)), (2, 1)),
    (numpy.zeros(3), (-1, 3)),
    (numpy.zeros(3), [2, 3]),
    (numpy.zeros(3), 3),
    (numpy.zeros(1), (numpy.int64(2),)),
    (numpy.ma.zeros(3), (2, 3)),
    ([1.0, 2.0], (2, 2)),
])
def test_what_it_declines_numpy_does(a, shape):
    def call(f):
        try:
            return f(a, shape)
        except Exception as e:
            return type(e), str(e)
    ours, theirs = call(_views.broadcast_to_), call(numpy.broadcast_to)
    if isinstance(theirs, tuple):
        assert ours == theirs
    else:
        assert type(ours) is type(theirs)
        assert numpy.array_equal(ours, theirs)
        assert ours.strides == theirs.strides


@pytest.mark.parametrize('arrays', [
    (numpy.zeros((2, 3)), numpy.zeros((3, 3))),
    (numpy.zeros((0, 2)), numpy.zeros(3)),
    (numpy.zeros(2), numpy.zeros(3)),
])
def test_arrays_that_do_not_broadcast_raise_as_numpy(arrays):
    with pytest.raises(ValueError) as theirs:
        numpy.broadcast_arrays(*arrays)
    with pytest.raises(ValueError) as ours:
        _views.broadcast_arrays_(*arrays)
    assert str(ours.value) == str(theirs.value)


def test_replaced_numpy_functions_are_called():
    a = numpy.zeros(3)
    with mock.patch('numpy.broadcast_to', return_value='to') as to, \
            mock.patch('numpy.broadcast_arrays',
                       return_value='arrays') as arrays:
        assert _views.broadcast_to_(a, (2, 3)) == 'to'
        assert _views.broadcast_arrays_(a, a[:1]) == 'arrays'
    to.assert_called_once_with(a, (2, 3))
    arrays.assert_called_once_with(a, a[:1])


@pytest.mark.parametrize('shape', [
    (2 ** 40, 2 ** 40), (2 ** 62 - 1, 4), (2 ** 59, 2), (2 ** 58, 2),
    (2 ** 31, 2 ** 31, 4),
])
def test_views_too_large_to_address_as_numpy(shape):
    # NumPy's iterator, or its array constructor, refuses them; one that
    # fits is a view like NumPy's.
    a = numpy.zeros(1)

    def call(f):
        try:
            y = f(a, shape)
        except ValueError as e:
            return str(e)
        return y.shape, y.strides, _views.raw_flags(y)
    assert call(_views.broadcast_to_) == call(numpy.broadcast_to)


def test_random_targets_raise_or_view_as_numpy():
    # Targets drawn without regard to the operand's shape: where NumPy
    # raises, the same error; elsewhere, NumPy's view.
    rng = numpy.random.RandomState(1)
    for _ in range(3000):
        shape = tuple(rng.choice([0, 1, 2, 3], size=rng.randint(4)))
        a = _operand(rng, shape, numpy.float32)
        target = tuple(int(d) for d in rng.choice(
            [0, 1, 2, 3], size=rng.randint(len(shape), len(shape) + 3)))
        try:
            theirs = numpy.broadcast_to(a, target)
        except ValueError as e:
            with pytest.raises(ValueError) as ours:
                _views.broadcast_to_(a, target)
            assert str(ours.value) == str(e)
        else:
            _same_view(_views.broadcast_to_(a, target), theirs)
