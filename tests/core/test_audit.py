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
