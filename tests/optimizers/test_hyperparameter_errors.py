"""Hyperparameters stock cannot use: the same exception, raised at stock's
point, with stock's partial update (Adam's m and v already updated when
its step size divides by zero, say)."""
import numpy
import pytest

import chainer
from chainer import optimizer
from chainer import optimizers

import chainer_fastpath
from chainer_fastpath.testing import check_same

from test_optimizers import FAST

CASES = {
    'Adam-beta1-one': lambda: optimizers.Adam(beta1=1.0),
    'AMSGrad-beta1-one': lambda: optimizers.AMSGrad(beta1=1.0),
    'Adam-beta2-two': lambda: optimizers.Adam(beta2=2.0),
    'Adam-alpha-none': lambda: optimizers.Adam(alpha=None),
    'Adam-eta-none': lambda: optimizers.Adam(eta=None),
    'Adam-wd-none': lambda: optimizers.Adam(weight_decay_rate=None),
    'AdaBound-gamma-zero': lambda: optimizers.AdaBound(gamma=0.0),
    'MSVAG-beta-one': lambda: optimizers.MSVAG(beta=1.0),
    'NesterovAG-momentum-none': lambda: optimizers.NesterovAG(momentum=None),
    'RMSpropGraves-alpha-none': lambda: optimizers.RMSpropGraves(alpha=None),
    'SGD-lr-none': lambda: optimizers.SGD(lr=None),
}


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize('case', sorted(CASES))
def test_exception_and_partial_state_same_as_stock(case, dtype):
    def run():
        link = chainer.Link()
        with link.init_scope():
            link.w = chainer.Parameter(
                numpy.random.uniform(-1, 1, 7).astype(dtype))
        opt = CASES[case]().setup(link)
        link.w.grad = numpy.random.uniform(-1, 1, 7).astype(dtype)
        try:
            opt.update()
        except Exception as e:
            error = (type(e).__name__, str(e))
        else:
            error = None
        rule = link.w.update_rule
        return error, link.w.array.tobytes(), rule.t, {
            k: v.tobytes() for k, v in (rule.state or {}).items()}
    with numpy.errstate(all='ignore'):
        stock, _ = check_same(run, **FAST)
    assert stock[0] is not None
    fallback = chainer_fastpath.stats()
    assert not any(v['fast'] for k, v in fallback.items()
                   if k.endswith('update_core_cpu'))


class _ReplacesState(optimizer.Hyperparameter):
    """A hyperparameter whose ``lr`` replaces the rule's momentum state and
    fills the freed memory with a new array of 7s, the first time it is
    read."""

    def __init__(self, parent, rule, kept):
        super().__init__(parent)
        object.__setattr__(self, '_rule', rule)
        object.__setattr__(self, '_kept', kept)

    @property
    def lr(self):
        if not self._kept:
            self._rule.state['v'] = numpy.zeros(4, numpy.float32)
            self._kept.append(numpy.full(4, 7.0, numpy.float32))
        return 0.1

    @lr.setter
    def lr(self, value):
        pass


def test_state_replaced_while_hyperparameters_are_read():
    # Stock holds the state it read first and updates that array; nothing
    # else is written.
    def run():
        param = chainer.Parameter(numpy.ones(4, numpy.float32))
        param.grad = numpy.ones(4, numpy.float32)
        rule = optimizers.momentum_sgd.MomentumSGDRule(lr=0.1, momentum=0.9)
        rule._state = {}
        rule.init_state(param)
        kept = []
        hp = _ReplacesState(rule.hyperparam._parent, rule, kept)
        hp.momentum = 0.9
        rule.hyperparam = hp
        rule.update_core_cpu(param)
        return param.array, rule.state['v'], kept[0]
    stock, _ = check_same(run)
    assert (stock[2] == 7).all()
