"""``Link.__call__`` (``_link_call.pyx``), stock vs patched: the same
outputs, the same hook calls, the same errors, and every case the fast path
does not take run through the original, counted."""
import collections
import sys

import numpy
import pytest

import chainer
import chainer.links as L

import chainer_fastpath
from chainer_fastpath.testing import (
    assert_same, check_same, error_of, run_both)


class MLP(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(3, 4)
            self.l2 = L.Linear(4, 2)

    def forward(self, x, scale=1):
        return self.l2(self.l1(x) * scale)


def _x():
    return numpy.random.uniform(-1, 1, (2, 3)).astype(numpy.float32)


def _counts():
    return chainer_fastpath.stats()['Link.__call__']


class Recorder(chainer.LinkHook):
    name = 'Recorder'

    def __init__(self):
        self.calls = []

    def forward_preprocess(self, args):
        self.calls.append(('pre', type(args.link).__name__, args.forward_name,
                           len(args.args), sorted(args.kwargs)))

    def forward_postprocess(self, args):
        self.calls.append(('post', type(args.link).__name__,
                           type(args.out).__name__))


@pytest.mark.parametrize('kwargs', [{}, {'scale': 2}])
def test_outputs_and_gradients_as_stock(kwargs):
    def fn():
        model = MLP()
        y = model(_x(), **kwargs)
        y.grad = numpy.ones_like(y.array)
        y.backward()
        return y, [p.grad for _, p in sorted(model.namedparams())]
    check_same(fn)


def test_fast_path_is_counted():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        MLP()(_x())
        assert _counts() == {'fast': 3, 'fallback': {}}


@pytest.mark.parametrize('where', ['global', 'local'])
def test_link_hooks_are_called_as_stock(where):
    def fn():
        model = MLP()
        hook = Recorder()
        if where == 'global':
            with hook:
                y = model(_x(), scale=3)
        else:
            model.l1.add_hook(hook)
            y = model(_x(), scale=3)
        return y, hook.calls
    stock, patched = run_both(fn)
    assert_same(stock, patched)
    assert stock[1]     # the hook saw calls
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        fn()
        counts = _counts()
    assert counts == {'fast': 3, 'fallback': {}}


class _Recursive(chainer.Chain):
    def forward(self, n):
        return 0 if n == 0 else 1 + self(n - 1)


def _deepest(call):
    # The largest n for which call(n) does not raise RecursionError.
    low, high = 0, sys.getrecursionlimit()
    while low < high:
        n = (low + high + 1) // 2
        try:
            call(n)
            low = n
        except RecursionError:
            high = n - 1
    return low


@pytest.mark.parametrize('where', [None, 'global', 'local'])
def test_recursive_link_reaches_stocks_depth(where):
    # Stock's __call__ is one frame per call, hooked or not.
    def fn():
        model = _Recursive()
        hook = Recorder()
        if where == 'local':
            model.add_hook(hook)
        if where == 'global':
            with hook:
                return _deepest(model)
        return _deepest(model)
    stock, patched = run_both(fn)
    assert stock == patched
    assert stock > 50


class _RegistersAHook(chainer.Link):
    """Registers a global link hook from inside its forward."""

    def __init__(self, hook):
        super().__init__()
        self.hook = hook

    def forward(self, x):
        chainer._get_link_hooks()[self.hook.name] = self.hook
        return x * 2


@pytest.mark.parametrize('inner', [False, True])
def test_hook_registered_during_the_forward_gets_the_postprocess(inner):
    # Stock iterates its view of the hook dict again after the forward.
    def fn():
        hook = Recorder()
        link = _RegistersAHook(hook)
        hooks = chainer._get_link_hooks()
        try:
            if inner:       # the outer call of a chain sees it too
                chain = chainer.Sequential(link)
                y = chain(_x())
            else:
                y = link(_x())
        finally:
            hooks.pop(hook.name, None)
        return y, hook.calls
    stock, patched = run_both(fn)
    assert_same(stock, patched)
    assert ('post', '_RegistersAHook', 'ndarray') in stock[1]


def test_mixin_call_takes_precedence_as_in_stock():
    class Mixin:
        def __call__(self, x):
            return 'mixin', x

    class Mixed(chainer.Link, Mixin):
        def forward(self, x):
            return 'forward', x

    stock, patched = run_both(lambda: Mixed()(1))
    assert stock == patched == ('mixin', 1)
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        Mixed()(1)
        assert _counts()['fallback'] == {'a mixin defines __call__': 1}


def test_mixin_call_added_later_is_seen():
    class Mixin:
        pass

    class Mixed(chainer.Link, Mixin):
        def forward(self, x):
            return 'forward', x

    def fn():
        link = Mixed()
        first = link(1)
        Mixin.__call__ = lambda self, x: ('mixin', x)
        try:
            return first, link(2)
        finally:
            del Mixin.__call__
    stock, patched = run_both(fn)
    assert stock == patched == (('forward', 1), ('mixin', 2))


def test_init_not_called_raises_as_stock():
    class Broken(chainer.Link):
        def __init__(self):
            pass

        def forward(self):
            return 1

    def fn():
        with pytest.raises(RuntimeError) as info:
            Broken()()
        return str(info.value)
    stock, patched = run_both(fn)
    assert stock == patched == 'Link.__init__() has not been called.'


def test_replaced_private_check_runs_the_original():
    seen = []

    class Checked(chainer.Link):
        def _Link__check_init_done(self):
            seen.append(type(self).__name__)

        def forward(self, x):
            return x + 1

    stock, patched = run_both(lambda: Checked()(1))
    assert stock == patched == 2
    assert seen == ['Checked', 'Checked']
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        Checked()(1)
        assert _counts()['fallback'] == {'Link methods replaced': 1}


def test_forward_errors_propagate_as_stock():
    class Failing(chainer.Link):
        def forward(self, x):
            raise ValueError('bad input {}'.format(x))

    def fn():
        with pytest.raises(ValueError) as info:
            Failing()(5)
        return str(info.value)
    stock, patched = run_both(fn)
    assert stock == patched == 'bad input 5'


@pytest.mark.parametrize('value', [None, {}, collections.OrderedDict()])
def test_link_hooks_set_by_hand_as_stock(value):
    # Stock reads chainer._thread_local.link_hooks as it finds it: None
    # fails there (no .values()); a plain dict works.
    def fn():
        saved = chainer._get_link_hooks()
        chainer._thread_local.link_hooks = value
        try:
            return error_of(lambda: MLP()(_x())) or 'no error'
        finally:
            chainer._thread_local.link_hooks = saved
    check_same(fn)
