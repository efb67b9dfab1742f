"""``Link.cleargrads`` (``machinery/link.pyx``), stock vs patched: the same
state of every parameter afterwards (``__dict__`` and its key order), for
Links, Chains and ChainLists, initialized or not; subclasses, replaced
methods and a tree whose ``params()`` is replaced run stock's code,
counted, with the same calls in the same order."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import variable

import chainer_fastpath
from chainer_fastpath.testing import check_same, error_of


class Net(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = L.Linear(3, 4)
            self.b = L.Linear(None, 2)      # uninitialized until called
            self.layers = chainer.ChainList(L.Linear(3, 3), L.Linear(3, 3))
            self.p = chainer.Parameter(numpy.zeros(2, numpy.float32))

    def forward(self, x):
        h = self.layers[1](self.layers[0](x))
        return F.sum(self.b(self.a(h))) + F.sum(self.p)


def _value(v):
    if v is None or isinstance(v, (bool, numpy.ndarray)):
        return v
    if isinstance(v, chainer.Variable):
        return 'Variable', v.array
    return type(v).__name__


def _params_state(link):
    """Each parameter's attributes, in ``__dict__`` order: the values
    the clearing may touch, the type of any other object."""
    return [(name, [(k, _value(v)) for k, v in p.__dict__.items()])
            for name, p in sorted(link.namedparams())]


@pytest.mark.filterwarnings('ignore:Variable.zerograd is deprecated')
@pytest.mark.parametrize('when', ['fresh', 'after_backward', 'grads_set',
                                  'uninitialized'])
def test_same_as_stock(when):
    def fn():
        net = Net()
        if when != 'uninitialized':
            net(numpy.ones((2, 3), numpy.float32)).backward()
        if when == 'grads_set':
            for p in net.params():
                p.grad = numpy.zeros_like(p.array)
        elif when == 'uninitialized':
            net.b.W.zerograd()
        net.cleargrads()
        return _params_state(net)
    check_same(fn)


def test_parameter_of_a_plain_link_and_empty_link():
    def fn():
        link = L.Linear(2, 2)
        link.W.grad = numpy.ones((2, 2), numpy.float32)
        link.cleargrads()
        empty = chainer.Chain()
        empty.cleargrads()
        return _params_state(link), link.W.grad
    check_same(fn)


class MyParameter(chainer.Parameter):
    def cleargrad(self):
        self.__dict__.setdefault('cleared', 0)
        self.cleared += 1
        super().cleargrad()


def test_calls_seen_by_mocks_and_subclasses_as_stock():
    def fn():
        net = Net()
        net(numpy.ones((2, 3), numpy.float32)).backward()
        with net.init_scope():
            net.q = MyParameter(numpy.ones(3, numpy.float32))
        net.cleargrads()
        calls = []
        original = variable.Parameter.cleargrad

        def recording(self):
            calls.append(self.name)
            original(self)
        plain = Net()
        with mock.patch.object(variable.Parameter, 'cleargrad', recording):
            plain.cleargrads()
        return net.q.cleared, calls, _params_state(net)
    stock, _ = check_same(fn)
    assert stock[1] == ['p'] + ['W', 'b'] * 4   # own first, then children


def _named_link(names):
    link = chainer.Link()
    with link.init_scope():
        for name in names:
            setattr(link, name, chainer.Parameter(
                numpy.zeros(1, numpy.float32)))
    return link


@pytest.mark.parametrize('names', [(), ('x',), ('y', 'x'), ('x', 'y'),
                                   ('Z', 'a'), ('c', 'b', 'a')])
def test_parameters_and_children_taken_in_sorted_order_as_stock(names):
    # Stock walks each link's parameters, then its children, by sorted
    # name; the patch orders sets of one or two names itself.
    def fn():
        chain = chainer.Chain()
        with chain.init_scope():
            for name in reversed(names):
                setattr(chain, 'child_' + name, _named_link(names))
            for name in names:
                setattr(chain, name, chainer.Parameter(
                    numpy.zeros(1, numpy.float32)))
        calls = []
        original = variable.Parameter.cleargrad

        def recording(self):
            calls.append(self.name)
            original(self)
        with mock.patch.object(variable.Parameter, 'cleargrad', recording):
            chain.cleargrads()
        return calls
    stock, _ = check_same(fn)
    assert stock == sorted(names) * (1 + len(names))


class OwnParams(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l = L.Linear(2, 2)

    def params(self, include_uninit=True):
        yield self.l.b


def test_replaced_params_runs_stock():
    def fn():
        net = OwnParams()
        for p in (net.l.W, net.l.b):
            p.grad = numpy.ones_like(p.array)
        net.cleargrads()
        return net.l.W.grad, net.l.b.grad
    stock, _ = check_same(fn)
    assert stock[0] is not None and stock[1] is None


def test_called_without_self_raises_as_stock():
    check_same(lambda: error_of(lambda: chainer.Link.cleargrads()))


def test_counted():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        Net().cleargrads()
        assert chainer_fastpath.stats()['Link.cleargrads'] == {
            'fast': 1, 'fallback': {}}
        OwnParams().cleargrads()
        net = L.Linear(2, 2)
        with net.init_scope():
            net.q = MyParameter(numpy.ones(3, numpy.float32))
        net.cleargrads()
        assert chainer_fastpath.stats()['Link.cleargrads'] == {
            'fast': 1, 'fallback': {
                'a link of the tree replaces params()': 1,
                'not a Parameter': 1}}
