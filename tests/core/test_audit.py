"""``_audit.pyx``: methods are checked as the interpreter looks them up,
without building the instance's ``__dict__`` (which CPython 3.11 keeps as
inline values until something asks for it)."""
import gc
import sys

import numpy
import pytest

import chainer
import chainer.functions as F

import chainer_fastpath


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
        return _has_dict_of_its_own(y.creator_node)

    stock = node_dicts()
    with chainer_fastpath.enabled():
        patched = node_dicts()
    # Before 3.11 every instance has its dict from the start.
    assert stock is (sys.version_info < (3, 11))
    assert patched is stock


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
