"""``L.Classifier.forward`` (``machinery/classifier.pyx``), stock vs
patched: the same loss, accuracy, attributes, reports and gradients; the
same calls of the predictor and functions, in the same order; the same
errors; subclasses and replaced methods run stock's code, counted."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import link as link_module
from chainer import reporter

import chainer_fastpath
from chainer_fastpath.testing import check_same, error_of


def _data(n=4):
    x = numpy.random.uniform(-1, 1, (n, 3)).astype(numpy.float32)
    t = numpy.random.randint(0, 2, n).astype(numpy.int32)
    return x, t


class TwoInputs(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l = L.Linear(3, 2)

    def forward(self, a, b=None, scale=1.0):
        h = self.l(a)
        if b is not None:
            h = h + self.l(b)
        return h * scale


def _run(model, *args, **kwargs):
    r = reporter.Reporter()
    r.add_observer('main', model)
    observation = {}
    with r.scope(observation):
        loss = model(*args, **kwargs)
    loss.backward()
    return (loss, model.y, model.loss, model.accuracy,
            {k: v.array for k, v in observation.items()},
            [p.grad for _, p in sorted(model.namedparams())])


@pytest.mark.parametrize('compute_accuracy', [True, False])
@pytest.mark.parametrize('case', ['last', 'first', 'middle', 'kwarg',
                                  'negative'])
def test_same_as_stock(case, compute_accuracy):
    def fn():
        x, t = _data()
        x2 = numpy.ones_like(x)
        if case == 'last':
            model = L.Classifier(TwoInputs())
            args, kwargs = (x, t), {}
        elif case == 'first':
            model = L.Classifier(TwoInputs(), label_key=0)
            args, kwargs = (t, x), {}
        elif case == 'middle':
            model = L.Classifier(TwoInputs(), label_key=1)
            args, kwargs = (x, t, x2), {'scale': 2.0}
        elif case == 'negative':
            model = L.Classifier(TwoInputs(), label_key=-2)
            args, kwargs = (x, t, x2), {}
        else:
            model = L.Classifier(TwoInputs(), label_key='label')
            args, kwargs = (x,), {'label': t, 'b': x2}
        model.compute_accuracy = compute_accuracy
        return _run(model, *args, **kwargs)
    check_same(fn)


def test_calls_in_stock_order():
    def fn():
        calls = []
        x, t = _data()

        def lossfun(y, t_):
            calls.append(('loss', y.shape, t_ is t))
            return F.softmax_cross_entropy(y, t_)

        def accfun(y, t_):
            calls.append(('acc', y.shape, t_ is t))
            return F.accuracy(y, t_)

        predictor = TwoInputs()
        model = L.Classifier(predictor, lossfun=lossfun, accfun=accfun)
        original = reporter.report

        def report(values, observer=None):
            calls.append(('report', sorted(values), observer is model,
                          type(values[next(iter(values))]).__name__))
            return original(values, observer)

        with mock.patch.object(predictor, 'forward',
                               wraps=predictor.forward) as m, \
                mock.patch.object(reporter, 'report', report):
            model(x, t)
        calls.append(('predictor', [len(c.args) for c in m.call_args_list]))
        return calls
    stock, _ = check_same(fn)
    assert [c[0] for c in stock] == ['loss', 'report', 'acc', 'report',
                                     'predictor']


def test_attributes_are_cleared_before_the_predictor_runs():
    def fn():
        x, t = _data()
        seen = []
        model = None

        def predictor(x_):
            seen.append((model.y, model.loss, model.accuracy))
            raise RuntimeError('stop')

        model = L.Classifier(TwoInputs())
        model.y = model.loss = model.accuracy = 'old'
        model.predictor = predictor
        return error_of(lambda: model(x, t)), seen
    stock, _ = check_same(fn)
    assert stock[1] == [(None, None, None)]


@pytest.mark.parametrize('label_key, args, kwargs', [
    (2, 2, {}), (-3, 2, {}), ('label', 2, {}), (1, 0, {}),
])
def test_bad_label_keys_raise_as_stock(label_key, args, kwargs):
    def fn():
        x, t = _data()
        model = L.Classifier(TwoInputs(), label_key=label_key)
        return error_of(lambda: model(*(x, t)[:args], **kwargs))
    assert check_same(fn)[0][0] == 'ValueError'


def test_label_key_of_another_type_runs_stock():
    def fn():
        x, t = _data()
        model = L.Classifier(TwoInputs())
        model.label_key = 1.0
        return error_of(lambda: model(x, t))
    check_same(fn)
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        model = L.Classifier(TwoInputs())
        model.label_key = None
        error_of(lambda: model(*_data()))
        assert chainer_fastpath.stats()['Classifier.forward'] == {
            'fast': 0, 'fallback': {'label key neither int nor str': 1}}


def test_forward_in_init_scope_registers_as_stock():
    # Inside an init scope, a Link result would be registered as a child.
    def fn():
        x, t = _data()
        child = L.Linear(3, 2)
        model = L.Classifier(lambda x_: child(x_))
        with model.init_scope():
            model(x, t)
        return sorted(model._children), model.y.array
    check_same(fn)


class MyClassifier(L.Classifier):
    def __setattr__(self, name, value):
        if name in ('y', 'loss', 'accuracy'):
            self.__dict__.setdefault('sets', []).append(name)
        super().__setattr__(name, value)


def test_subclass_and_replaced_setattr_run_stock():
    def fn():
        x, t = _data()
        model = MyClassifier(TwoInputs())
        model(x, t)
        sets = []
        plain = L.Classifier(TwoInputs())
        original = link_module.Link.__setattr__

        def recording(self, name, value):
            sets.append(name)
            original(self, name, value)
        with mock.patch.object(link_module.Link, '__setattr__', recording):
            plain(x, t)
        return model.sets, sets
    stock, _ = check_same(fn)
    assert stock[1] == ['y', 'loss', 'accuracy', 'y', 'loss', 'accuracy']


def test_fast_path_is_counted():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        L.Classifier(TwoInputs())(*_data())
        assert chainer_fastpath.stats()['Classifier.forward'] == {
            'fast': 1, 'fallback': {}}
        chainer_fastpath.reset_stats()
        MyClassifier(TwoInputs())(*_data())
        assert chainer_fastpath.stats()['Classifier.forward'] == {
            'fast': 0, 'fallback': {'not a Classifier': 1}}


def test_called_without_self_raises_as_stock():
    check_same(lambda: error_of(lambda: L.Classifier.forward()))
