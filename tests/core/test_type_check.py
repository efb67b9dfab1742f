"""The type-check cache: a check that passed is skipped only for inputs and
node attributes it provably cannot tell apart; everything else raises as
stock does."""
import pickle

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import basic_math
from chainer.utils import type_check

import chainer_fastpath
from chainer_fastpath._core._registry import Compiled
from chainer_fastpath.testing import check_error_after_passing


def _v(array):
    return chainer.Variable(array)


def _native(shape=(3,), dtype=numpy.float32):
    return numpy.ones(shape, dtype)


# name -> (a call that passes, a call that stock rejects or accepts): what
# the cache's keys must tell apart. The sequences of a function's own key
# (its node attributes) are in tests/functions/<family>/test_<name>.py.
SEQUENCES = {
    'byteswapped_dtype': (
        lambda: F.add(_v(_native()), _v(_native())),
        lambda: F.add(_v(_native()), _v(_native().astype('>f4')))),
    'other_dtype_same_shape': (
        lambda: F.add(_v(_native()), _v(_native())),
        lambda: F.add(_v(_native()), _v(_native(dtype=numpy.float64)))),
    'other_shape': (
        lambda: F.add(_v(_native((2, 3))), _v(_native((2, 3)))),
        lambda: F.add(_v(_native((2, 3))), _v(_native((3, 2))))),
    'other_ndim_same_size': (
        lambda: F.linear(_v(_native((2, 4))), _v(_native((3, 4)))),
        lambda: F.linear(_v(_native((2, 4))), _v(_native((3, 2, 2))))),
    'unpickled_dtype_accepted': (
        lambda: F.add(_v(_native()), _v(_native())),
        lambda: F.add(_v(pickle.loads(pickle.dumps(_native()))),
                      _v(_native()))),
    'unpickled_dtype_rejected': (
        lambda: F.add(_v(pickle.loads(pickle.dumps(_native()))),
                      _v(pickle.loads(pickle.dumps(_native())))),
        lambda: F.add(_v(pickle.loads(pickle.dumps(_native()))),
                      _v(_native(dtype=numpy.float64)))),
    # Two passed keys taking turns (the last pass is compared first, the
    # others looked up), then one that fails.
    'alternating_then_rejected': (
        lambda: [F.add(_v(_native(shape)), _v(_native(shape)))
                 for shape in ((2,), (3,), (2,), (3,), (2,))],
        lambda: F.add(_v(_native((2,))), _v(_native((3,))))),
    # Attribute values equal to the passed ones but of other types: the
    # check reads them its own way (``transa ^ transb`` raises on a float).
    'attribute_float_equal_to_int': (
        lambda: F.matmul(_v(_native((3, 3))), _v(_native((3, 3))), transa=1),
        lambda: F.matmul(_v(_native((3, 3))), _v(_native((3, 3))),
                         transa=1.0)),
    'attribute_numpy_float_equal_to_bool': (
        lambda: F.matmul(_v(_native((3, 3))), _v(_native((3, 3))),
                         transb=True),
        lambda: F.matmul(_v(_native((3, 3))), _v(_native((3, 3))),
                         transb=numpy.float64(1))),
    # Many inputs, as a CRF's concat of its time steps: a long key.
    'many_inputs': (
        lambda: F.concat([_v(_native((3, 4)))] * 60, 0),
        lambda: F.concat([_v(_native((3, 4)))] * 59
                         + [_v(_native((3, 5)))], 0)),
    # The same for a class without a checker, through the cache.
    'many_inputs_cached': (
        lambda: F.stack([_v(_native((3, 4)))] * 60, 0),
        lambda: F.stack([_v(_native((3, 4)))] * 59
                        + [_v(_native((3, 5)))], 0)),
    # Too many inputs and dimensions for a key: checked every time.
    'many_dimensions': (
        lambda: F.concat([_v(_native((1,) * 16))] * 32, 0),
        lambda: F.concat([_v(_native((1,) * 16))] * 31
                         + [_v(_native((1,) * 16, numpy.float16))], 0)),
}


def test_a_key_is_kept_only_for_the_check_as_read():
    # The key was read off the class's own check, run by the base class's
    # data check: a subclass inheriting the check, or running it another
    # way, is not what was read.
    class Inherited(basic_math.Add):
        pass

    class OtherDataCheck(basic_math.Add):
        def _check_data_type_forward(self, in_data):
            pass

        def check_type_forward(self, in_types):
            pass

    assert Compiled(basic_math.Add, type_check=()).check_methods is not None
    assert Compiled(basic_math.Add).check_methods is None
    assert Compiled(Inherited, type_check=()).check_methods is None
    assert Compiled(OtherDataCheck, type_check=()).check_methods is None
    # Unless the check read is named as the base's.
    assert Compiled(Inherited, type_check=(),
                    check_owner=basic_math.Add).check_methods is not None
    assert Compiled(OtherDataCheck, type_check=(),
                    check_owner=basic_math.Add).check_methods is None


@pytest.mark.parametrize('name', sorted(SEQUENCES))
def test_error_after_a_cached_pass_is_stocks(name):
    stock = check_error_after_passing(*SEQUENCES[name])
    expect_error = name not in ('unpickled_dtype_accepted',)
    assert (stock is not None) == expect_error


@pytest.mark.parametrize('inputs, cached', [(60, True), (32 * 8, False)])
def test_long_keys_are_cached_up_to_4_kb(monkeypatch, inputs, cached):
    # Sixty (3, 4) inputs make a key of 1,448 bytes; 256 make 6,152.
    # (Stack, whose check has no checker before the cache.)
    chainer_fastpath.enable()
    xs = [_v(_native((3, 4))) for _ in range(inputs)]
    F.stack(xs, 0)
    expects = []
    original = type_check.expect

    def spy(*conditions):
        expects.append(len(conditions))
        return original(*conditions)

    monkeypatch.setattr(type_check, 'expect', spy)
    F.stack(xs, 0)
    assert (expects == []) == cached


def test_the_cache_empties_itself_at_4_mb():
    # Keys of 170 (n, 4) inputs, 4,088 bytes each: 1,026 of them are more
    # than 4 MB.
    from chainer_fastpath._core import _type_check
    chainer_fastpath.enable()
    before = _type_check.held()[0]
    emptied = False
    for n in range(1, 1100):
        F.stack([_v(_native((n, 4)))] * 170, 0)
        keys, held = _type_check.held()
        assert 0 < held <= 1 << 22
        emptied = emptied or keys < before
        before = keys
    assert emptied


def test_cached_class_check_replaced_later_is_called(monkeypatch):
    chainer_fastpath.enable()
    x = _v(_native())
    F.add(x, x)
    F.add(x, x)      # now cached, the class verified
    calls = []

    def check(self, in_types):
        calls.append(len(in_types))
        type_check.expect(in_types[0].dtype == numpy.float64)

    monkeypatch.setattr(basic_math.Add, 'check_type_forward', check)
    with pytest.raises(type_check.InvalidType):
        F.add(x, x)
    # Stock runs a failing check twice, the second time for the message.
    assert calls == [2, 2]
    monkeypatch.undo()
    F.add(x, x)
    assert calls == [2, 2]


def test_base_class_method_replaced_later_is_called(monkeypatch):
    # Replacing a FunctionNode method must be seen by every subclass whose
    # check was verified before.
    chainer_fastpath.enable()
    x = _v(_native())
    F.add(x, x)
    calls = []
    original = chainer.FunctionNode._check_data_type_forward

    def spy(self, in_data):
        calls.append(type(self).__name__)
        return original(self, in_data)

    monkeypatch.setattr(chainer.FunctionNode, '_check_data_type_forward',
                        spy)
    F.add(x, x)
    assert calls == ['Add']
