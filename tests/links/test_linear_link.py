"""``L.Linear.forward`` (``links/linear.pyx``), stock vs patched: the same
outputs, gradients and initialized parameters; the same reads and calls,
in stock's order, seen by properties and mocks; the same errors; debug
mode runs stock's method, counted."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.links as L
from chainer.functions.connection import linear as linear_function

import chainer_fastpath
from chainer_fastpath.testing import check_same, error_of


def _state(link, y):
    y.grad = numpy.ones_like(y.array)
    y.backward()
    return (y.array, y.creator is not None,
            [(n, p.array, p.grad) for n, p in sorted(link.namedparams())])


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
@pytest.mark.parametrize('in_size, shape, n_batch_axes', [
    (3, (4, 3), None), (None, (4, 3), None), (None, (2, 3, 5), None),
    (5, (2, 3, 5), 2), (None, (2, 3, 5), 2), (3, (0, 3), None),
])
@pytest.mark.parametrize('nobias', [False, True])
def test_same_as_stock(dtype, in_size, shape, n_batch_axes, nobias):
    def fn():
        x = chainer.Variable(
            numpy.random.uniform(-1, 1, shape).astype(dtype))
        with chainer.using_config('dtype', dtype):
            link = L.Linear(in_size, 4, nobias=nobias)
            if n_batch_axes is None:
                y = link(x)
            else:
                y = link(x, n_batch_axes=n_batch_axes)
        return _state(link, y)
    check_same(fn)


def test_without_backprop_and_on_an_ndarray():
    def fn():
        link = L.Linear(3, 2)
        x = numpy.random.uniform(-1, 1, (4, 3)).astype(numpy.float32)
        with chainer.no_backprop_mode():
            y = link.forward(x)
        return y.array, y.creator
    check_same(fn)


class CountedW(L.Linear):
    """W and b behind properties that count their reads."""

    def __init__(self, *args, **kwargs):
        self.__dict__['reads'] = []
        super().__init__(*args, **kwargs)
        del self.reads[:]

    def __getattribute__(self, name):
        if name in ('W', 'b'):
            object.__getattribute__(self, 'reads').append(name)
        return object.__getattribute__(self, name)


@pytest.mark.parametrize('in_size', [3, None])
def test_reads_and_calls_in_stock_order(in_size):
    def fn():
        link = CountedW(in_size, 2)
        calls = []
        original = linear_function.linear

        def recording(*args, **kwargs):
            calls.append((len(args), sorted(kwargs)))
            return original(*args, **kwargs)
        x = numpy.ones((4, 3), numpy.float32)
        with mock.patch.object(link, '_initialize_params',
                               wraps=link._initialize_params) as init, \
                mock.patch.object(linear_function, 'linear', recording):
            y = link(x)
        return link.reads, calls, init.call_args_list, y.array
    stock, _ = check_same(fn)
    # _initialize_params reads W once more.
    assert stock[0] == ['W'] * (2 if in_size else 3) + ['b']
    assert stock[1] == [(3, ['n_batch_axes'])]


def test_w_that_is_not_a_parameter():
    def fn():
        link = L.Linear(3, 2)
        W = link.W
        del link.W
        link.W = chainer.Variable(W.array)   # an attribute, not a param
        return link(numpy.ones((2, 3), numpy.float32)).array
    check_same(fn)


@pytest.mark.parametrize('args, kwargs', [
    ((), {}), ((1, 2, 3), {}), ((), {'y': 1}),
    (('x',), {}), ((numpy.ones((2, 3), numpy.float32),),
                   {'n_batch_axes': 0}),
    ((numpy.ones((2, 4), numpy.float32),), {}),
    ((numpy.ones((2, 3), numpy.float32),), {'n_batch_axes': 1.0}),
])
def test_bad_arguments_raise_as_stock(args, kwargs):
    def fn():
        link = L.Linear(3, 2)
        return (error_of(lambda: link.forward(*args, **kwargs)),
                error_of(lambda: L.Linear(None, 2).forward(*args, **kwargs)))
    check_same(fn)


def test_called_without_self_raises_as_stock():
    check_same(lambda: error_of(lambda: L.Linear.forward()))


def test_counted_and_debug_mode_runs_stock():
    with chainer_fastpath.enabled():
        link = L.Linear(3, 2)
        x = numpy.ones((2, 3), numpy.float32)
        chainer_fastpath.reset_stats()
        link(x)
        assert chainer_fastpath.stats()['Linear.forward'] == {
            'fast': 1, 'fallback': {}}
        with chainer.using_config('debug', True):
            link(x)
        assert chainer_fastpath.stats()['Linear.forward'] == {
            'fast': 1, 'fallback': {'debug mode': 1}}
