"""Differential tests of the optimizers part: stock vs patched, bit for bit.

Each case trains a small model for 50 steps with random gradients (or a
loss function) and compares every parameter, gradient, optimizer state and
counter, as bytes.
"""

import os
import subprocess
import sys

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import optimizers, optimizer_hooks

import chainer_fastpath
from chainer_fastpath.testing import assert_same, check_same, misaligned

DTYPES = [numpy.float16, numpy.float32, numpy.float64]

# name -> factory(); every optimizer and switch of chainer.optimizers.
OPTIMIZERS = {
    'SGD': lambda: optimizers.SGD(lr=0.1),
    'MomentumSGD': lambda: optimizers.MomentumSGD(lr=0.05, momentum=0.8),
    'CorrectedMomentumSGD': lambda: optimizers.CorrectedMomentumSGD(
        lr=0.05),
    'NesterovAG': lambda: optimizers.NesterovAG(lr=0.05, momentum=0.7),
    'Adam': lambda: optimizers.Adam(),
    'Adam-alpha': lambda: optimizers.Adam(alpha=0.01, beta1=0.8,
                                          beta2=0.99, eps=1e-4),
    'Adam-amsgrad': lambda: optimizers.Adam(amsgrad=True),
    'Adam-adabound': lambda: optimizers.Adam(adabound=True),
    'Adam-amsbound': lambda: optimizers.Adam(amsgrad=True, adabound=True),
    'Adam-wd': lambda: optimizers.Adam(weight_decay_rate=0.01),
    'Adam-eta': lambda: optimizers.Adam(eta=0.5, weight_decay_rate=0.1),
    'AdamW': lambda: optimizers.AdamW(weight_decay_rate=0.05),
    'AMSGrad': lambda: optimizers.AMSGrad(),
    'AdaBound': lambda: optimizers.AdaBound(final_lr=0.05),
    'AMSBound': lambda: optimizers.AMSBound(gamma=1e-2),
    'RMSprop': lambda: optimizers.RMSprop(lr=0.01, eps=1e-4),
    'RMSprop-default': lambda: optimizers.RMSprop(),
    'RMSprop-inside': lambda: optimizers.RMSprop(eps=1e-3,
                                                 eps_inside_sqrt=True),
    'RMSpropGraves': lambda: optimizers.RMSpropGraves(),
    'AdaGrad': lambda: optimizers.AdaGrad(lr=0.01, eps=1e-4),
    'AdaDelta': lambda: optimizers.AdaDelta(),
    'SMORMS3': lambda: optimizers.SMORMS3(eps=1e-3),
    'SMORMS3-default': lambda: optimizers.SMORMS3(),
    'MSVAG': lambda: optimizers.MSVAG(),
    'MSVAG-wd': lambda: optimizers.MSVAG(eta=0.5, weight_decay_rate=0.01),
}


def with_weight_decay(make, rate):
    """``make``'s optimizer, set up with a WeightDecay hook, whose fused
    ``__call__`` the cases of OPTIMIZERS then run too."""
    def factory():
        opt = make()
        setup = opt.setup

        def setup_with_hook(link):
            setup(link)
            opt.add_hook(optimizer_hooks.WeightDecay(rate))
            return opt
        opt.setup = setup_with_hook
        return opt
    return factory


OPTIMIZERS.update({
    'SGD+WeightDecay': with_weight_decay(OPTIMIZERS['SGD'], 0.01),
    'MomentumSGD+WeightDecay-int': with_weight_decay(
        OPTIMIZERS['MomentumSGD'], 3),
})

FAST = dict(forward=False, backward=False, optimizers=True)


class Model(chainer.Chain):
    def __init__(self, dtype):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(3, 4, initialW=chainer.initializers.Normal(
                dtype=dtype), initial_bias=chainer.initializers.Zero(dtype))
            self.l2 = L.Linear(4, 2, initialW=chainer.initializers.Normal(
                dtype=dtype), initial_bias=chainer.initializers.Zero(dtype))
            self.p = chainer.Parameter(
                numpy.random.uniform(-1, 1, (2, 3, 5)).astype(dtype))

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def snapshot(model, opt):
    """Everything an update can change, as plain data."""
    out = {'t': opt.t, 'epoch': opt.epoch}
    for name, p in sorted(model.namedparams()):
        out[name] = p.array.copy()
        out[name + '.grad'] = None if p.grad is None else p.grad.copy()
        rule = p.update_rule
        out[name + '.t'] = rule.t
        if rule.state is not None:
            for k, v in sorted(rule.state.items()):
                out[name + '.' + k] = v.copy()
        for attr in ('beta_power',):
            if hasattr(rule, attr):
                out[name + '.' + attr] = getattr(rule, attr)
    return out


def train(name, dtype, steps=50, setup=None, scale=1.0, model=Model):
    model = model(dtype)
    opt = OPTIMIZERS[name]()
    opt.setup(model)
    if setup is not None:
        setup(model, opt)
    rng = numpy.random.RandomState(1)
    for _ in range(steps):
        for p in model.params():
            p.grad = (rng.standard_normal(p.shape) * scale).astype(dtype)
        opt.update()
    return snapshot(model, opt)


@pytest.mark.parametrize('dtype', DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize('name', sorted(OPTIMIZERS))
def test_fifty_steps_bit_identical(name, dtype):
    def run():
        try:
            return train(name, dtype)
        except Exception as e:   # e.g. eps too small for float16
            return type(e).__name__, str(e)
    with numpy.errstate(all='ignore'):
        stock, _ = check_same(run, **FAST)
    if isinstance(stock, tuple):
        assert (name, dtype) == ('RMSprop-default', numpy.float16)
        return
    st = chainer_fastpath.stats()
    assert st['GradientMethod.update']['fast'] == 50
    assert st['GradientMethod.update']['fallback'] == {}
    assert st['UpdateRule.update']['fast'] == 50 * 5
    rule = type(OPTIMIZERS[name]().create_update_rule()).__name__
    kernel = st[rule + '.update_core_cpu']
    assert kernel['fallback'] == {}
    assert kernel['fast'] == 50 * 5
    if '+WeightDecay' in name:
        assert st['WeightDecay.__call__'] == {'fast': 50 * 5, 'fallback': {}}


class SubParam(chainer.Parameter):
    """A Parameter subclass: the kernels go through its properties."""


class SubParamModel(chainer.Link):
    def __init__(self, dtype):
        super().__init__()
        with self.init_scope():
            self.w = SubParam(
                numpy.random.uniform(-1, 1, (3, 4)).astype(dtype))
            self.b = SubParam(numpy.random.uniform(-1, 1, 5).astype(dtype))


def check_parameter_subclass(steps=5):
    """Every optimizer and dtype on Parameter subclasses: patched equals
    stock bit for bit, through the kernels (not a fallback)."""
    for name in sorted(OPTIMIZERS):
        rule = type(OPTIMIZERS[name]().create_update_rule()).__name__
        for dtype in DTYPES:
            def run():
                try:
                    return train(name, dtype, steps, model=SubParamModel)
                except Exception as e:   # as in the fifty-step test
                    return type(e).__name__, str(e)
            chainer_fastpath.reset_stats()
            with numpy.errstate(all='ignore'):
                stock, _ = check_same(run, **FAST)
            if isinstance(stock, tuple):
                continue
            kernel = chainer_fastpath.stats()[rule + '.update_core_cpu']
            assert kernel == {'fast': steps * 2, 'fallback': {}}, (
                name, dtype, kernel)


def test_parameter_subclass_every_rule():
    # A crash must fail this test, not end pytest: run it in a child.
    # chainer_fastpath first: on Python 3.12 it is what lets Chainer import.
    code = ('import sys; sys.path.insert(0, {!r}); import chainer_fastpath; '
            'import test_optimizers; '
            'test_optimizers.check_parameter_subclass()'.format(
                os.path.dirname(os.path.abspath(__file__))))
    child = subprocess.run([sys.executable, '-X', 'faulthandler', '-c', code],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    assert child.returncode == 0, child.stdout[-4000:]


@pytest.mark.parametrize('dtype', DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize('name', ['Adam', 'MomentumSGD', 'RMSprop',
                                  'MSVAG', 'SMORMS3'])
def test_large_arrays_release_the_gil(name, dtype):
    def run():
        p = chainer.Parameter(numpy.random.uniform(
            -1, 1, (70, 300)).astype(dtype))
        link = chainer.Link()
        with link.init_scope():
            link.w = p
        opt = OPTIMIZERS[name]().setup(link)
        rng = numpy.random.RandomState(0)
        for _ in range(3):
            p.grad = rng.standard_normal(p.shape).astype(dtype)
            opt.update()
        return snapshot(link, opt)
    with numpy.errstate(all='ignore'):
        check_same(run, **FAST)


def lossfun_run(name):
    model = Model(numpy.float32)
    opt = OPTIMIZERS[name]().setup(model)
    rng = numpy.random.RandomState(2)
    losses = []
    for _ in range(20):
        x = rng.standard_normal((5, 3)).astype(numpy.float32)
        t = rng.randint(0, 2, 5).astype(numpy.int32)

        def lossfun(x, t=None):
            loss = F.softmax_cross_entropy(model(x), t)
            losses.append(loss.array)
            return loss
        opt.update(lossfun, x, t=t)
    return snapshot(model, opt), losses


@pytest.mark.parametrize('name', ['Adam', 'MomentumSGD', 'SGD'])
def test_lossfun_arguments(name):
    check_same(lambda: lossfun_run(name), **FAST)


HOOKS = {
    'WeightDecay': lambda: optimizer_hooks.WeightDecay(1e-3),
    'Lasso': lambda: optimizer_hooks.Lasso(1e-3),
    'GradientClipping': lambda: optimizer_hooks.GradientClipping(1.0),
    'GradientHardClipping': lambda: optimizer_hooks.GradientHardClipping(
        -0.5, 0.5),
    'GradientNoise': lambda: optimizer_hooks.GradientNoise(0.01),
    'GradientLARS': lambda: optimizer_hooks.GradientLARS(),
}


@pytest.mark.parametrize('timing', ['pre', 'post'])
@pytest.mark.parametrize('hook', sorted(HOOKS))
@pytest.mark.parametrize('name', ['Adam', 'MomentumSGD'])
def test_optimizer_hooks(name, hook, timing):
    def setup(model, opt):
        opt.add_hook(HOOKS[hook](), timing=timing)
    check_same(lambda: train(name, numpy.float32, steps=10, setup=setup),
               **FAST)


def test_update_rule_hooks_and_per_param_hyperparameters():
    calls = []

    def setup(model, opt):
        def pre(rule, param):
            calls.append(('pre', param.name, rule.t))
            param.grad *= 0.5

        def post(rule, param):
            calls.append(('post', param.name, rule.t))
        model.l1.W.update_rule.add_hook(pre, name='pre', timing='pre')
        model.l1.b.update_rule.add_hook(post, name='post', timing='post')
        model.l2.W.update_rule.hyperparam.alpha = 0.05
        model.l2.b.update_rule.hyperparam.beta1 = numpy.float32(0.5)
        model.l2.b.update_rule.hyperparam.eps = numpy.float64(1e-3)
        model.p.update_rule.enabled = False

    def run():
        del calls[:]
        return train('Adam', numpy.float32, steps=10, setup=setup), \
            list(calls)
    stock, patched = check_same(run, **FAST)
    assert len(stock[1]) == 20


class _Schedule(chainer.optimizer.Hyperparameter):
    """A link of the chain that is not a plain Hyperparameter: read by
    getattr, its property each time."""

    @property
    def beta1(self):
        return 0.8


@pytest.mark.parametrize('chain', ['changed_by_hooks', 'three_levels',
                                   'subclass_in_chain', 'cycle'])
def test_hyperparameter_chain_read_at_each_update(chain):
    # The kernels read the dicts along each rule's chain once per update:
    # a value a hook changes just before, a longer chain, or a link read
    # through its class, as stock's reads find them.
    def setup(model, opt):
        if chain == 'changed_by_hooks':
            def pre(rule, param):
                opt.hyperparam.alpha = 0.001 * (rule.t + 1)
                rule.hyperparam.eps = 1e-3 * (rule.t % 3 + 1)
            model.l1.W.update_rule.add_hook(pre, name='pre', timing='pre')
            opt.add_hook(lambda o: setattr(o.hyperparam, 'beta2', 0.9 +
                                           0.01 * (o.t % 5)), name='sched')
            return
        rule = model.l1.W.update_rule
        if chain == 'cycle':
            # Every name on the rule's own link, which is its own parent:
            # stock's reads never reach the cycle.
            for name, value in vars(opt.hyperparam).items():
                if name != '_parent':
                    setattr(rule.hyperparam, name, value)
            rule.hyperparam._parent = rule.hyperparam
            return
        middle = (chainer.optimizer.Hyperparameter(opt.hyperparam)
                  if chain == 'three_levels' else _Schedule(opt.hyperparam))
        middle.alpha = 0.01
        rule.hyperparam._parent = middle
    check_same(lambda: train('Adam', numpy.float32, steps=10, setup=setup),
               **FAST)
    assert chainer_fastpath.stats()['AdamRule.update_core_cpu'] == {
        'fast': 10 * 5, 'fallback': {}}


@pytest.mark.parametrize('name', ['Adam', 'MomentumSGD', 'RMSpropGraves'])
def test_hyperparameters_changed_between_updates(name):
    # The optimizer's values are remembered while its dict keeps its
    # version, a rule's own link skipped while it holds only its parent:
    # each change below, made between updates, is seen as stock sees it.
    def changes(model, opt, step):
        rule = model.l1.W.update_rule
        hp = opt.hyperparam
        if step == 1:
            for key, value in list(vars(hp).items()):
                if type(value) is float:
                    setattr(hp, key, value * 0.5)
        elif step == 2:
            for key, value in list(vars(hp).items()):
                if type(value) is float:
                    setattr(rule.hyperparam, key, value * 0.25)
        elif step == 3:
            for key in list(vars(rule.hyperparam)):
                if key != '_parent':
                    delattr(rule.hyperparam, key)
        elif step == 4:
            own = dict(vars(hp))
            own['_parent'] = hp
            rule.hyperparam.__dict__ = own
        elif step == 5:
            rule.hyperparam.__dict__ = {'_parent': hp}
            for key, value in list(vars(hp).items()):
                if type(value) is float:
                    hp.__dict__[key] = value * 2

    def run():
        model = Model(numpy.float32)
        opt = OPTIMIZERS[name]()
        opt.setup(model)
        rng = numpy.random.RandomState(1)
        for step in range(7):
            changes(model, opt, step)
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(numpy.float32)
            opt.update()
        return snapshot(model, opt)
    check_same(run, **FAST)
    rule = type(OPTIMIZERS[name]().create_update_rule()).__name__
    assert chainer_fastpath.stats()[rule + '.update_core_cpu'] == {
        'fast': 7 * 5, 'fallback': {}}


@pytest.mark.parametrize('where', ['main', 'thread'])
def test_array_access_flag_as_stock_sets_it(where):
    # UpdateRule.update runs its body in
    # _AllowArrayAccessWithNonstandardLayout: hooks and a replaced
    # update_core see the flag set, and it is put back after each update,
    # in the thread that updates.
    import threading
    from chainer import variable

    seen = []

    def flag():
        return variable._allow_array_access_with_nonstandard_layout()

    def setup(model, opt):
        def pre(rule, param):
            seen.append(('pre', flag()))

        def post(rule, param):
            seen.append(('post', flag()))
        model.l1.W.update_rule.add_hook(pre, name='pre', timing='pre')
        model.l1.b.update_rule.add_hook(post, name='post', timing='post')
        rule = model.l2.W.update_rule
        core = rule.update_core

        def update_core(param):
            seen.append(('core', flag()))
            return core(param)
        rule.update_core = update_core
        opt.add_hook(lambda o: seen.append(('opt', flag())), name='o')

    def body():
        del seen[:]
        return train('Adam', numpy.float32, steps=3, setup=setup), \
            list(seen), flag()

    def run():
        if where == 'main':
            return body()
        out = []
        t = threading.Thread(target=lambda: out.append(body()))
        t.start()
        t.join()
        return out[0] + (flag(),)
    stock, patched = check_same(run, **FAST)
    assert ('pre', True) in stock[1] and ('core', True) in stock[1]
    assert ('opt', False) in stock[1] and stock[2] is False


def test_hyperparameter_set_on_the_class():
    # A name set on Hyperparameter itself is found on the rule's own link,
    # before the optimizer's dict that holds it too (an outside probe: the
    # kernel used the optimizer's value).
    def setup(model, opt):
        opt.hyperparam.lr = 0.1
        chainer.optimizer.Hyperparameter.lr = 0.5

    def run(setup):
        numpy.random.seed(0)
        return train('SGD', numpy.float32, steps=3, setup=setup)

    try:
        stock, patched = check_same(lambda: run(setup), **FAST)
    finally:
        del chainer.optimizer.Hyperparameter.lr
    assert_same(stock, run(lambda model, opt: setattr(opt, 'lr', 0.5)))


def _adam_replacements():
    from chainer.optimizers import adam

    def learning_rate(hp, t):
        return 10 * _ORIGINAL['_learning_rate'](hp, t)

    def intermediate_dtype(dtype):
        return numpy.float64

    def wrap(name):
        def replaced(*args):
            return _ORIGINAL[name](*args)
        return replaced

    return {
        'alpha_t': (adam.AdamRule, property(lambda rule: 0.25)),
        '_check_eps': (adam.AdamRule, wrap('_check_eps')),
        '_learning_rate': (adam, learning_rate),
        '_get_intermediate_dtype': (adam, intermediate_dtype),
        '_inplace_axpby': (adam, wrap('_inplace_axpby')),
    }


_ORIGINAL = {}


@pytest.mark.parametrize('name', ['alpha_t', '_check_eps', '_learning_rate',
                                  '_get_intermediate_dtype',
                                  '_inplace_axpby'])
def test_adam_helper_replaced_is_called(name):
    # Stock's AdamRule.update_core_cpu reaches these by name at each
    # update: a warm-up schedule overriding alpha_t, say. Replaced, the
    # kernel leaves the update to stock's method.
    import mock
    owner, replacement = _adam_replacements()[name]
    _ORIGINAL[name] = getattr(owner, name)
    calls = []

    def counted(*args):
        calls.append(name)
        return (replacement.fget if type(replacement) is property
                else replacement)(*args)

    def run():
        del calls[:]
        # On the class, a plain function is a method: called with the rule.
        patch = (property(counted) if type(replacement) is property
                 else counted)
        with mock.patch.object(owner, name, patch):
            out = train('Adam', numpy.float32, steps=3)
        return out, len(calls)

    stock, patched = check_same(run, **FAST)
    assert stock[1] > 0
    reason = ('method replaced' if isinstance(owner, type)
              else 'function replaced')
    assert chainer_fastpath.stats()['AdamRule.update_core_cpu'][
        'fallback'] == {reason: 3 * 5}


def test_grad_property_replaced_reallocates_as_stock():
    # GradientMethod.update reads param.grad before and after the update to
    # reallocate cleared gradients: a property of the user's is read as
    # often, and a None it gives is a gradient reallocated over the real
    # one.
    import mock
    original = chainer.Variable.__dict__['grad']

    def run():
        calls = []

        def grad(self):
            calls.append(self.name)
            return None if self.name == 'b' else original.__get__(self)
        with mock.patch.object(chainer.Variable, 'grad',
                               property(grad, original.__set__)):
            out = train('SGD', numpy.float32, steps=2)
        return out, calls

    stock, patched = check_same(run, **FAST)
    assert stock[1]


def test_state_property_replaced_is_read_as_stock():
    # A state property of the user's that gives copies: stock's update then
    # works on the copies, and the states keep their values.
    import mock
    original = chainer.optimizer.UpdateRule.__dict__['state']

    def run():
        model = Model(numpy.float32)
        opt = OPTIMIZERS['MomentumSGD']().setup(model)
        reads = []

        def state(rule):
            reads.append(rule.t)
            return {k: v.copy() for k, v in original.__get__(rule).items()}
        rng = numpy.random.RandomState(0)
        for step in range(3):
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(numpy.float32)
            if step == 0:
                opt.update()    # the states made
                continue
            with mock.patch.object(chainer.optimizer.UpdateRule, 'state',
                                   property(state)):
                opt.update()
        return snapshot(model, opt), reads

    stock, patched = check_same(run, **FAST)
    assert stock[1]


def test_parameters_keep_their_attribute_values():
    # Stock's update never reads a parameter's __dict__, which would give
    # it a dict of its own: every later read of its attributes, the
    # interpreter's and the compiled paths', would take the slow way.
    from chainer_fastpath._core import _attrs

    def run():
        model = Model(numpy.float32)
        train('Adam', numpy.float32, steps=2, model=lambda dtype: model)
        return [_attrs.keeps_values(p) for p in model.params()]
    stock, patched = check_same(run, **FAST)
    assert all(stock) == _attrs.FAST


def test_use_fp32_update():
    def setup(model, opt):
        opt.use_fp32_update()
    check_same(lambda: train('Adam', numpy.float16, steps=10, setup=setup),
               **FAST)
    check_same(lambda: train('MomentumSGD', numpy.float16, steps=10,
                             setup=setup), **FAST)


@pytest.mark.parametrize('dynamic', [False, True])
def test_loss_scaling(dynamic):
    def setup(model, opt):
        if dynamic:
            opt.loss_scaling(interval=3)
        else:
            opt.loss_scaling(scale=8.0)

    def run():
        model = Model(numpy.float32)
        opt = OPTIMIZERS['Adam']().setup(model)
        setup(model, opt)
        rng = numpy.random.RandomState(3)
        scales = []
        for i in range(12):
            for p in model.params():
                g = rng.standard_normal(p.shape).astype(numpy.float32)
                if dynamic and i % 5 == 4:
                    g[0] = numpy.inf
                p.grad = g
                p._loss_scale = opt._loss_scale
            with pytest.warns(None) if False else _nowarn(dynamic and
                                                          i % 5 == 4):
                opt.update()
            scales.append(opt._loss_scale)
        return snapshot(model, opt), scales
    check_same(run, **FAST)


class _nowarn:
    """Expects the 'Non finite number' warning stock emits, when it does."""
    def __init__(self, expect):
        self.expect = expect

    def __enter__(self):
        import warnings
        self._cm = warnings.catch_warnings(record=True)
        self.log = self._cm.__enter__()
        warnings.simplefilter('always')

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        if exc[0] is None:
            assert bool(self.log) == self.expect


def test_cleared_grads_and_uninitialized_params():
    def run():
        model = chainer.Chain()
        with model.init_scope():
            model.a = L.Linear(None, 3)
            model.b = L.Linear(3, 2)
        opt = optimizers.MomentumSGD().setup(model)
        rng = numpy.random.RandomState(0)
        out = []
        for i in range(5):
            model.cleargrads()
            if i >= 2:
                x = rng.standard_normal((2, 4)).astype(numpy.float32)
                F.sum(model.b(model.a(x))).backward()
            opt.update()      # b's grads cleared: reallocated as zeros
            out.append(snapshot(model, opt) if model.a.W.array is not None
                       else {'t': opt.t})
        return out
    check_same(run, **FAST)


def test_disabled_rules_and_epoch():
    def setup(model, opt):
        model.l1.W.update_rule.enabled = False
        opt.new_epoch()
    check_same(lambda: train('Adam', numpy.float32, steps=5, setup=setup),
               **FAST)


@pytest.mark.parametrize('name', ['Adam', 'AMSGrad', 'MSVAG', 'SMORMS3',
                                  'RMSpropGraves'])
def test_serialization_round_trip(name, tmp_path):
    """A state saved patched loads into stock and back, identically."""
    from chainer import serializers

    def run(path, load=None):
        model = Model(numpy.float32)
        opt = OPTIMIZERS[name]().setup(model)
        if load is not None:
            serializers.load_npz(load, opt)
            serializers.load_npz(str(load) + '.model', model)
        rng = numpy.random.RandomState(4)
        for _ in range(5):
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(numpy.float32)
            opt.update()
        serializers.save_npz(path, opt)
        serializers.save_npz(str(path) + '.model', model)
        return snapshot(model, opt)

    a = tmp_path / 'a.npz'
    b = tmp_path / 'b.npz'
    with chainer_fastpath.enabled(**FAST):
        run(a)                       # patched saves
    chainer_fastpath.disable()
    stock = run(b, load=a)           # stock loads and continues
    c = tmp_path / 'c.npz'
    with chainer_fastpath.enabled(**FAST):
        patched = run(c, load=a)     # patched loads and continues
    assert_same(stock, patched)
    d = tmp_path / 'd.npz'
    chainer_fastpath.disable()
    again = run(d, load=c)           # stock loads what patched saved
    e = tmp_path / 'e.npz'
    with chainer_fastpath.enabled(**FAST):
        again_p = run(e, load=b)     # patched loads what stock saved
    assert_same(again, again_p)


def test_fallbacks_are_counted():
    class MyRule(optimizers.adam.AdamRule):
        pass

    class MyAdam(optimizers.Adam):
        def create_update_rule(self):
            return MyRule(self.hyperparam)

    def run():
        model = Model(numpy.float32)
        opt = MyAdam().setup(model)
        rng = numpy.random.RandomState(0)
        for _ in range(3):
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(numpy.float32)
            opt.update()
        return snapshot(model, opt)
    check_same(run, **FAST)
    st = chainer_fastpath.stats()['AdamRule.update_core_cpu']
    assert st['fast'] == 0
    assert st['fallback'] == {'subclass': 15}

    chainer_fastpath.reset_stats()

    def run2():
        model = Model(numpy.float32)
        opt = optimizers.MomentumSGD().setup(model)
        rng = numpy.random.RandomState(0)
        for i in range(3):
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(numpy.float32)
            model.l1.W.grad = numpy.asfortranarray(
                rng.standard_normal((4, 3)).astype(numpy.float32))
            opt.update()
        return snapshot(model, opt)
    check_same(run2, **FAST)
    st = chainer_fastpath.stats()['MomentumSGDRule.update_core_cpu']
    assert st['fast'] == 12
    assert st['fallback'] == {'non-contiguous array': 3}


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('what', ['grad', 'param', 'state'])
def test_misaligned_arrays_are_updated_by_stock(dtype, what):
    # A gradient, parameter or state the user set at an odd address: the
    # kernels load C floats, aligned only, so its rule updates by stock.
    chainer_fastpath.reset_stats()

    def run():
        model = Model(dtype)
        opt = optimizers.Adam().setup(model)
        rng = numpy.random.RandomState(0)
        for _ in range(2):
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(dtype)
            W = model.l1.W
            if what == 'grad':
                W.grad = misaligned(W.grad)
            elif what == 'param':
                W.array = misaligned(W.array)
            elif W.update_rule.state is not None:
                W.update_rule.state['m'] = misaligned(W.update_rule.state['m'])
            opt.update()
        return snapshot(model, opt)
    check_same(run, **FAST)
    st = chainer_fastpath.stats()['AdamRule.update_core_cpu']
    # The state exists from the first update on: misaligned in the second.
    odd = 1 if what == 'state' else 2
    assert st == {'fast': 5 * 2 - odd, 'fallback': {'misaligned array': odd}}


def test_binding_again_keeps_the_first_original():
    from chainer_fastpath import _patch
    from chainer_fastpath import optimizers as fast

    def decoy(*args, **kwargs):
        raise AssertionError('a later original was called')
    rows = [r for r in _patch.table() if r.part == 'optimizers']
    assert fast.TARGETS == tuple((r.owner, r.attribute) for r in rows)
    for row in rows:
        assert fast.bind(row.owner, row.attribute, decoy) is row.replacement

    class MyRule(optimizers.adam.AdamRule):
        pass

    class MyAdam(optimizers.Adam):
        def create_update_rule(self):
            return MyRule(self.hyperparam)

        def call_hooks(self, timing='pre'):
            super().call_hooks(timing)

    def run():   # every part falls back to its original
        model = SubParamModel(numpy.float32)
        opt = MyAdam().setup(model)
        rng = numpy.random.RandomState(0)
        for _ in range(3):
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(numpy.float32)
            opt.update()
        return snapshot(model, opt)
    check_same(run, **FAST)
    st = chainer_fastpath.stats()
    assert st['GradientMethod.update']['fallback'] == {
        'GradientMethod subclass': 3}
    assert st['UpdateRule.update']['fallback'] == {'Variable subclass': 6}
    assert st['AdamRule.update_core_cpu']['fallback'] == {'subclass': 6}


def test_zero_dim_parameter_falls_back():
    def run():
        link = chainer.Link()
        with link.init_scope():
            link.w = chainer.Parameter(numpy.array([0.5], numpy.float32))
        link.w.array = link.w.array.reshape(())
        opt = optimizers.Adam().setup(link)
        for i in range(3):
            link.w.grad = numpy.array(0.1 * i, numpy.float32)
            opt.update()
        return snapshot(link, opt)
    check_same(run, **FAST)
    st = chainer_fastpath.stats()['AdamRule.update_core_cpu']
    assert st['fallback'] == {'0-d parameter': 3}


def test_instance_override_of_update_core_cpu():
    import mock

    def run():
        model = Model(numpy.float32)
        opt = optimizers.Adam().setup(model)
        rule = model.l1.W.update_rule
        rule.update_core_cpu = mock.MagicMock(wraps=rule.update_core_cpu)
        rng = numpy.random.RandomState(0)
        for _ in range(3):
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(numpy.float32)
            opt.update()
        return snapshot(model, opt), rule.update_core_cpu.call_count
    stock, patched = check_same(run, **FAST)
    assert stock[1] == 3


@pytest.mark.parametrize('name', ['SGD', 'Adam'])
def test_parameter_update_replaced_on_the_class_is_called(name):
    # As mock.patch.object(chainer.Parameter, 'update', ...) replaces it:
    # stock's GradientMethod.update calls it for every parameter.
    import mock

    def run():
        model = Model(numpy.float32)
        opt = OPTIMIZERS[name]().setup(model)
        spy = mock.MagicMock(wraps=chainer.Parameter.update)

        def update(param):
            return spy(param)

        rng = numpy.random.RandomState(0)
        with mock.patch.object(chainer.Parameter, 'update', update):
            for _ in range(3):
                for p in model.params():
                    p.grad = rng.standard_normal(p.shape).astype(
                        numpy.float32)
                opt.update()
        return snapshot(model, opt), spy.call_count
    stock, patched = check_same(run, **FAST)
    assert stock[1] == 3 * len(list(Model(numpy.float32).params()))



@pytest.mark.parametrize('name', ['MomentumSGD', 'Adam'])
@pytest.mark.parametrize('method', ['send', 'send_array', 'create_context'])
def test_cpu_device_method_replaced_on_the_class_is_called(name, method):
    # Stock's _init_states sends every state array to the parameter's
    # device at every update, in its device's context: a CpuDevice method
    # replaced on the class is called each time (a fuzz finding, seed 8:
    # the lean path skipped it once the states were arrays).
    import mock
    from chainer.backends import _cpu

    def run():
        model = Model(numpy.float32)
        opt = OPTIMIZERS[name]().setup(model)
        original = getattr(_cpu.CpuDevice, method)
        calls = []

        def replaced(*args, **kwargs):
            calls.append(method)
            return original(*args, **kwargs)

        rng = numpy.random.RandomState(0)
        with mock.patch.object(_cpu.CpuDevice, method, replaced):
            for _ in range(3):
                for p in model.params():
                    p.grad = rng.standard_normal(p.shape).astype(
                        numpy.float32)
                opt.update()
        return snapshot(model, opt), len(calls)
    stock, patched = check_same(run, **FAST)
    assert stock[1] > 0

def test_disable_restores_originals():
    from chainer.optimizers import adam
    original = adam.AdamRule.__dict__['update_core_cpu']
    upd = chainer.optimizer.UpdateRule.__dict__['update']
    chainer_fastpath.enable(**FAST)
    assert adam.AdamRule.__dict__['update_core_cpu'] is not original
    chainer_fastpath.disable()
    assert adam.AdamRule.__dict__['update_core_cpu'] is original
    assert chainer.optimizer.UpdateRule.__dict__['update'] is upd


def test_float16_conversions_match_numpy():
    from chainer_fastpath.optimizers import _kernels
    halves = numpy.arange(65536, dtype=numpy.uint32).astype(numpy.uint16)
    f = numpy.empty(65536, numpy.float32)
    _kernels._f16_bits_to_f32(halves, f)
    expected = halves.view(numpy.float16).astype(numpy.float32)
    assert f.view(numpy.uint32).tobytes() == \
        expected.view(numpy.uint32).tobytes()
    rng = numpy.random.RandomState(0)
    bits = rng.randint(0, 2 ** 32, size=2 ** 20, dtype=numpy.uint64)
    bits = numpy.concatenate([bits.astype(numpy.uint32),
                              # ties and subnormal boundaries
                              (numpy.arange(2 ** 16, dtype=numpy.uint32)
                               << 13) | 0x1000,
                              numpy.arange(0x33000000, 0x38800000, 997,
                                           dtype=numpy.uint32)])
    src = bits.view(numpy.float32)
    out = numpy.empty(len(src), numpy.uint16)
    _kernels._f32_to_f16_bits(src, out)
    with numpy.errstate(all='ignore'):
        expected = src.astype(numpy.float16).view(numpy.uint16)
    assert out.tobytes() == expected.tobytes()


def test_hyperparameter_outside_value_based_range_falls_back():
    """NumPy 1.26 computes float16 * 300.0 in float32: not reproduced,
    so the kernel falls back."""
    def run():
        link = chainer.Link()
        with link.init_scope():
            link.w = chainer.Parameter(numpy.linspace(
                -1, 1, 6).astype(numpy.float16))
        opt = optimizers.SGD(lr=70000.0).setup(link)
        link.w.grad = numpy.full(6, 1e-4, numpy.float16)
        opt.update()
        return snapshot(link, opt)
    check_same(run, **FAST)
    st = chainer_fastpath.stats()['SGDRule.update_core_cpu']
    assert st['fallback'] == {'hyperparameter': 1}


def test_shared_parameter_is_updated_twice_as_stock():
    def run():
        shared = L.Linear(3, 3)
        model = chainer.ChainList(shared, chainer.Chain())
        with model[1].init_scope():
            model[1].w = shared.W      # the same Parameter, twice
        opt = optimizers.Adam().setup(model)
        rng = numpy.random.RandomState(0)
        for _ in range(3):
            for p in model.params():
                p.grad = rng.standard_normal(p.shape).astype(numpy.float32)
            opt.update()
        return snapshot(model, opt)
    check_same(run, **FAST)


def test_grads_from_backward_need_no_reallocation(python_calls):
    # After backward every gradient is held as a grad_var: nothing to
    # reallocate, so stock's reallocate_cleared_grads need not run.
    chainer_fastpath.enable()
    model = chainer.Sequential(L.Linear(3, 4), F.relu, L.Linear(4, 2))
    opt = optimizers.Adam().setup(model)
    x = numpy.ones((2, 3), numpy.float32)

    def step():
        model.cleargrads()
        F.sum(model(x)).backward()
        opt.update()

    step()
    assert python_calls(
        step, chainer.GradientMethod.reallocate_cleared_grads) == 0


def test_grad_var_without_array_is_reallocated():
    def run():
        model = Model(numpy.float32)
        opt = optimizers.MomentumSGD().setup(model)
        x = numpy.ones((2, 3), numpy.float32)
        model.cleargrads()
        F.sum(model(x)).backward()
        # The gradient Variable emptied in place: grad reads None.
        model.l1.W.grad_var.array = None
        opt.update()
        return snapshot(model, opt)
    check_same(run)


@pytest.mark.parametrize('name', ['_f32_to_f16_bits', '_f16_bits_to_f32'])
def test_float16_conversion_refuses_a_short_destination(name):
    src_dtype, dst_dtype = ((numpy.float32, numpy.uint16)
                            if name == '_f32_to_f16_bits'
                            else (numpy.uint16, numpy.float32))
    from chainer_fastpath.optimizers import _kernels
    with pytest.raises(ValueError):
        getattr(_kernels, name)(numpy.zeros(1 << 16, src_dtype),
                                numpy.zeros(1, dst_dtype))
