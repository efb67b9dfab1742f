"""``Signature.bind`` binds as Python does, and the replaced methods that
bind their own arguments (``Variable.backward``,
``Variable.unchain_backward``) take every call stock takes and reject the
others with stock's ``TypeError``, word for word. The hot ones
(``UpdateRule.update``, ``FunctionNode.apply``, ``utils.force_array``)
keep typed parameters: every call stock takes, they take."""
import inspect

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L

import chainer_fastpath
from chainer.functions.activation import relu as relu_module
from chainer import utils

from chainer_fastpath._core._signature import Signature
from chainer_fastpath.testing import check_same, error_of


def _f(a, b, c=3, d=4):
    pass


# (args, kwargs) of calls of _f, good and bad
CALLS = [
    ((1, 2), {}), ((1, 2, 5), {}), ((1, 2, 5, 6), {}),
    ((1,), {'b': 2}), ((), {'a': 1, 'b': 2, 'd': 7}), ((1, 2), {'c': 0}),
    ((), {}), ((1,), {}), ((1, 2, 3, 4, 5), {}), ((1, 2), {'a': 1}),
    ((1, 2), {'e': 1}), ((), {'b': 2}), ((1,), {'c': 3}),
]


@pytest.mark.parametrize('args,kwargs', CALLS)
def test_binds_as_python(args, kwargs):
    try:
        bound = inspect.signature(_f).bind(*args, **kwargs)
    except TypeError:
        expected = None
    else:
        bound.apply_defaults()
        expected = tuple(bound.arguments.values())
    signature = Signature(('a', 'b', 'c', 'd'), (3, 4))
    assert signature.bind_or_none(*args, **kwargs) == expected


def _loss():
    x = chainer.Variable(numpy.arange(3, dtype=numpy.float32))
    return x, F.sum(x * x)


def _rule():
    link = L.Linear(2, 2)
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(link)
    link.W.grad = numpy.ones_like(link.W.array)
    return link.W.update_rule, link.W


# name -> a call, made after enable(); errors are results too
METHOD_CALLS = {
    'backward': lambda: _loss()[1].backward(),
    'backward_keywords': lambda: _loss()[1].backward(
        retain_grad=True, loss_scale=2.0),
    'backward_self_keyword': lambda: chainer.Variable.backward(
        self=_loss()[1]),
    'backward_unknown_keyword': lambda: _loss()[1].backward(
        retain_graph=True),
    'backward_too_many': lambda: _loss()[1].backward(False, False, None, 1),
    'backward_twice': lambda: _loss()[1].backward(True, retain_grad=True),
    'backward_no_self': lambda: chainer.Variable.backward(),
    'unchain_backward': lambda: _loss()[1].unchain_backward(),
    'unchain_backward_argument': lambda: _loss()[1].unchain_backward(1),
    'unchain_backward_keyword': lambda: _loss()[1].unchain_backward(x=1),
    'unchain_backward_no_self': lambda: chainer.Variable.unchain_backward(),
    'update': lambda: _rule()[0].update(_rule()[1]),
    'update_keyword': lambda: (lambda r, p: r.update(param=p))(*_rule()),
    'apply': lambda: relu_module.ReLU().apply((_loss()[0],))[0].array,
    'apply_keyword': lambda: relu_module.ReLU().apply(
        inputs=(_loss()[0],))[0].array,
    'force_array': lambda: utils.force_array(numpy.float32(2)),
    'force_array_dtype': lambda: utils.force_array(
        numpy.float32(2), numpy.float64),
    'force_array_keywords': lambda: utils.force_array(
        dtype=numpy.float32, x=numpy.ones(2, numpy.float32)),
}


@pytest.mark.parametrize('case', sorted(METHOD_CALLS))
def test_method_call_as_stock(case):
    def call():
        error = error_of(METHOD_CALLS[case])
        if error is not None:
            return error
        return repr(METHOD_CALLS[case]())
    check_same(call)


@pytest.mark.parametrize('case,row', [
    ('backward_keywords', 'Variable.backward'),
    ('backward_self_keyword', 'Variable.backward'),
    ('unchain_backward', 'Variable.unchain_backward'),
    ('update_keyword', 'UpdateRule.update'),
    ('apply_keyword', 'FunctionNode.apply'),
    ('force_array_keywords', 'utils.force_array'),
])
def test_good_call_takes_the_fast_path(case, row):
    chainer_fastpath.enable()
    chainer_fastpath.reset_stats()
    METHOD_CALLS[case]()
    assert chainer_fastpath.stats()[row]['fast'] >= 1
    assert not chainer_fastpath.stats()[row]['fallback']


def test_rejected_call_is_counted():
    chainer_fastpath.enable()
    chainer_fastpath.reset_stats()
    error_of(METHOD_CALLS['backward_unknown_keyword'])
    assert chainer_fastpath.stats()['Variable.backward']['fallback'] == {
        'arguments not (self, retain_grad, enable_double_backprop, '
        'loss_scale)': 1}
