"""Globals that stock's code reads on every call (a node class, a helper,
``chainer.config``), read by the compiled paths through memos kept on the
dict's version: a replacement made between two calls, after many calls,
is seen by the next one, and the original again once it is put back."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer import configuration
from chainer import utils
from chainer.functions.activation import relu
from chainer.functions.array import concat
from chainer.functions.array import split_axis
from chainer.functions.connection import linear
from chainer.functions.math import basic_math
from chainer.functions.math import sum as sum_mod

from chainer_fastpath.testing import run_both


def _v(*shape):
    return chainer.Variable(
        numpy.arange(numpy.prod(shape), dtype=numpy.float32).reshape(shape))


# name -> (module, global, call); each call reads the global once or more.
CASES = {
    'ReLU': (relu, 'ReLU', lambda: F.relu(_v(2, 3))),
    'Sum': (sum_mod, 'Sum', lambda: F.sum(_v(2, 3), axis=1)),
    'Concat': (concat, 'Concat', lambda: F.concat((_v(2, 3), _v(2, 3)))),
    'SplitAxis': (split_axis, 'SplitAxis',
                  lambda: F.split_axis(_v(2, 4), 2, 1)[1]),
    'LinearFunction': (linear, 'LinearFunction',
                       lambda: F.linear(_v(2, 3), _v(4, 3), _v(4))),
    'Add': (basic_math, 'Add', lambda: F.add(_v(2), _v(2))),
    'Sub': (basic_math, 'Sub', lambda: _v(2) - _v(2)),
    'Mul': (basic_math, 'Mul', lambda: _v(2) * _v(2)),
    'AddConstant': (basic_math, 'AddConstant', lambda: _v(2) + 1.5),
    '_preprocess_rhs': (basic_math, '_preprocess_rhs',
                        lambda: _v(2) * numpy.ones(2, numpy.float32)),
    'force_array': (utils, 'force_array', lambda: F.relu(_v(2, 3))),
}


def _recording(original, log, name):
    """A stand-in for ``original`` (a class: a subclass with an
    ``__init__`` of its own; a function: a wrapper) that logs ``name``
    whenever it is used."""
    if isinstance(original, type):
        def __init__(self, *args, **kwargs):
            log.append(name)
            original.__init__(self, *args, **kwargs)
        return type(original.__name__, (original,), {'__init__': __init__})

    def wrapper(*args, **kwargs):
        log.append(name)
        return original(*args, **kwargs)
    return wrapper


@pytest.mark.parametrize('name', sorted(CASES))
def test_a_global_replaced_between_calls_is_seen(name):
    module, attribute, call = CASES[name]

    def run():
        log = []
        outputs = [call().array for _ in range(5)]
        stand_in = _recording(getattr(module, attribute), log, name)
        with mock.patch.object(module, attribute, stand_in):
            outputs.append(call().array)
            uses = len(log)
            outputs.append(call().array)
        outputs.append(call().array)
        return outputs, uses, len(log)

    stock, patched = run_both(run)
    assert stock[1] >= 1
    assert stock[2] == 2 * stock[1]     # nothing after the patch ended
    assert patched[1:] == stock[1:]
    for a, b in zip(stock[0], patched[0]):
        numpy.testing.assert_array_equal(a, b)


def test_a_config_object_swapped_between_calls_is_seen():
    def run():
        seen = [F.relu(_v(2)).creator is not None for _ in range(3)]
        other = configuration.LocalConfig(configuration.GlobalConfig())
        other.enable_backprop = False
        with mock.patch.object(configuration, 'config', other):
            seen.append(F.relu(_v(2)).creator is not None)
        seen.append(F.relu(_v(2)).creator is not None)
        return seen

    stock, patched = run_both(run)
    assert stock == patched == [True, True, True, False, True]


def test_debug_mode_set_between_calls_is_seen():
    def run():
        stacks = [F.relu(_v(2)).creator.stack for _ in range(3)]
        chainer.set_debug(True)
        try:
            stacks.append(F.relu(_v(2)).creator.stack)
        finally:
            chainer.set_debug(False)
        stacks.append(F.relu(_v(2)).creator.stack)
        return [s is not None for s in stacks]

    stock, patched = run_both(run)
    assert stock == patched == [False, False, False, True, False]


@pytest.mark.parametrize('cls, call', [
    (relu.ReLU, CASES['ReLU'][2]),
    (basic_math.Add, CASES['Add'][2]),
    (basic_math.Mul, CASES['Mul'][2]),
])
@pytest.mark.parametrize('method', ['__init__', '__new__'])
def test_a_constructor_given_to_the_class_between_calls_runs(
        cls, call, method):
    # The nodes these calls make are built without a call of the class
    # while it has object's own constructor.
    def run():
        log = []

        def __init__(self, *args, **kwargs):
            log.append(method)

        def __new__(klass, *args, **kwargs):
            log.append(method)
            return object.__new__(klass)

        stand_in = __init__ if method == '__init__' else __new__
        outputs = [call().array for _ in range(3)]
        with mock.patch.object(cls, method, stand_in, create=True):
            outputs.append(call().array)
        outputs.append(call().array)
        return outputs, log

    stock, patched = run_both(run)
    assert stock[1] == patched[1] == [method]
    for a, b in zip(stock[0], patched[0]):
        numpy.testing.assert_array_equal(a, b)
