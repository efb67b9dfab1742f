"""``_audit.pyx``: methods are checked as the interpreter looks them up,
without building the instance's ``__dict__`` (which CPython 3.11 keeps as
inline values until something asks for it); a NumPy function or a graph
class's property replaced is seen as stock sees it."""
import gc
import sys
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F

import chainer_fastpath
from chainer_fastpath._core import _attrs
from chainer_fastpath.testing import check_same


def _has_dict_of_its_own(obj):
    # A materialized instance dict is one referent; inline values are not.
    return any(type(r) is dict for r in gc.get_referents(obj))


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('fn', [F.tanh, F.relu, lambda x: x + x,
                                lambda x: F.linear(x, x)])
def test_fast_path_leaves_node_dict_as_stock(fn, type_check):
    def node_dicts():
        x = chainer.Variable(numpy.ones((3, 3), numpy.float32))
        with chainer.using_config('type_check', type_check):
            y = fn(x)
        node = y.creator_node
        own = _has_dict_of_its_own(node)
        # From 3.11 a class's shared key table stops growing once enough
        # instances were made (a process whose first ones ran without
        # backprop has no room for the graph's names): then a node gets a
        # dict of its own, stock and patched alike.
        keys = _attrs.shared_keys(type(node))
        fits = keys is None or set(node.__dict__) <= set(keys[0])
        return own, fits

    stock = node_dicts()
    with chainer_fastpath.enabled():
        patched = node_dicts()
    assert patched == stock
    # Before 3.11 every instance has its dict from the start.
    if stock[1]:
        assert stock[0] is (sys.version_info < (3, 11))


# --- StockMethods: what an instance finds, as its class's memo changes ---

def _set_on_instance(node):
    node.forward = lambda inputs: inputs


def _set_in_dict(node):
    node.__dict__['forward'] = lambda inputs: inputs


def _replace_dict(node):
    # A dict of the instance's own, the shared key table unchanged.
    node.__dict__ = {'forward': lambda inputs: inputs}


def _patch_class(node):
    type(node).forward = lambda self, inputs: inputs


def _patch_base(node):
    type(node).__bases__[0].check_type_forward = (
        lambda self, in_types: None)


@pytest.mark.parametrize('change', [_set_on_instance, _set_in_dict,
                                    _replace_dict, _patch_class,
                                    _patch_base])
def test_found_by_sees_a_change_after_the_class_was_found(change):
    from chainer_fastpath._core._audit import StockMethods
    # Classes of their own: the shared key table starts empty.
    base = type('Base', (chainer.FunctionNode,), {})
    cls = type('Node', (base,), {})
    methods = StockMethods(cls, ('forward', 'check_type_forward'))
    first = cls()
    assert methods.found(first) and methods.found(first)
    changed = cls()
    change(changed)
    assert not methods.found(changed)
    # Instances untouched still find the class's, unless the class changed.
    class_changed = change in (_patch_class, _patch_base)
    assert methods.found(first) is not class_changed
    assert methods.found(cls()) is not class_changed


def test_found_by_an_instance_of_a_class_whose_instances_set_the_name():
    from chainer_fastpath._core._audit import StockMethods
    # A class of its own: its shared key table starts empty.
    cls = type('Node', (chainer.FunctionNode,), {})
    methods = StockMethods(cls, ('forward',))
    shadowing = cls()
    _set_on_instance(shadowing)
    plain = cls()
    assert not methods.found(shadowing)
    assert methods.found(plain) and methods.found(plain)
    assert not methods.found(shadowing)
    del shadowing.forward
    assert methods.found(shadowing)



def test_found_by_an_instance_of_a_class_with_a_staticmethod():
    # CpuDevice.from_array is a staticmethod: found as the class holds it
    # (a fuzz finding: every CpuDevice went to stock's converter), not when
    # an instance or the class replaces it.
    from chainer.backends import _cpu
    from chainer_fastpath._core._audit import StockMethods

    methods = StockMethods(_cpu.CpuDevice, ('from_array', 'send'))
    plain = _cpu.CpuDevice()
    assert methods.found(plain) and methods.found(plain)
    shadowing = _cpu.CpuDevice()
    shadowing.from_array = lambda array: None
    assert not methods.found(shadowing)
    assert methods.found(plain)
    with mock.patch.object(_cpu.CpuDevice, 'from_array',
                           staticmethod(lambda array: None)):
        assert not methods.found(_cpu.CpuDevice())
    assert methods.found(_cpu.CpuDevice())

# name -> (NumPy function to replace, a program calling it in stock): stock
# looks its NumPy functions up per call, so a replacement is seen.
NUMPY_CALLS = {
    'exp': ('exp', lambda x: F.exp(x)),
    'tanh': ('tanh', lambda x: F.tanh(x)),
    'sigmoid_tanh': ('tanh', lambda x: F.sigmoid(x)),
    'relu_maximum': ('maximum', lambda x: F.relu(x)),
    'linear_dot': ('dot', lambda x: F.linear(x, x)),
    'backward_exp': ('exp', lambda x: chainer.grad(
        [F.sum(F.exp(x) * x)], [x])[0]),
    'adam_sqrt': ('sqrt', lambda x: _adam_step(x)),
}


def _adam_step(x):
    link = chainer.Link()
    with link.init_scope():
        link.w = chainer.Parameter(x.array.copy())
    opt = chainer.optimizers.Adam()
    opt.setup(link)
    link.w.grad = x.array * 2
    opt.update()
    return link.w


@pytest.mark.parametrize('changed', [False, True])
@pytest.mark.parametrize('case', sorted(NUMPY_CALLS))
def test_numpy_function_replaced_is_called_as_stock(case, changed):
    name, program = NUMPY_CALLS[case]
    original = getattr(numpy, name)

    def replacement(*args, **kwargs):
        y = original(*args, **kwargs)
        return y * 0 if changed else y

    def run():
        x = chainer.Variable(
            numpy.linspace(0.5, 2, 9, dtype=numpy.float32).reshape(3, 3))
        with mock.patch.object(numpy, name, wraps=replacement) as spy:
            y = program(x)
        return y.array, spy.call_count
    check_same(run)


def test_numpy_function_restored_takes_the_fast_path_again():
    chainer_fastpath.enable()
    x = chainer.Variable(numpy.ones(3, numpy.float32))
    chainer_fastpath.reset_stats()
    with mock.patch.object(numpy, 'exp', wraps=numpy.exp):
        F.exp(x)
    F.exp(x)
    assert chainer_fastpath.stats()['FunctionNode.apply'] == {
        'fast': 1, 'fallback': {'numpy.exp replaced': 1}}


@pytest.mark.parametrize('name', ['grad', 'grad_var', 'array', 'data',
                                  'node', 'creator_node', 'requires_grad'])
def test_variable_property_replaced_is_used_as_stock(name):
    prop = vars(chainer.Variable)[name]

    def run():
        log = []

        def get(self):
            log.append('get')
            return prop.fget(self)

        def set_(self, value):
            log.append('set')
            prop.fset(self, value)

        with mock.patch.object(chainer.Variable, name, property(
                get, set_ if prop.fset else None)):
            x = chainer.Variable(numpy.ones(3, numpy.float32))
            loss = F.sum(F.relu(x) * 2)
            loss.backward()
        return x.grad, log
    check_same(run)


@pytest.mark.parametrize('name', ['creator_node', 'array', 'grad'])
def test_property_mock_on_the_class_counts_stock_reads(name):
    # The audit of a class's properties looks them up in the class without
    # running them: a PropertyMock counts only the reads stock makes.
    def run():
        x = chainer.Variable(numpy.ones(3, numpy.float32))
        y = F.relu(x)
        with mock.patch.object(chainer.Variable, name,
                               new_callable=mock.PropertyMock,
                               return_value=None) as read:
            y.unchain_backward()
            return read.call_count
    check_same(run)
