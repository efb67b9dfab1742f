"""F.separate (``Separate``), stock vs patched: compiled forward."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import separate
from chainer.functions.array import stack

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, gradients, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _separated(axis, x):
    return lambda: (lambda a: F.separate(a, axis), [x()])


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'axis0': _separated(0, lambda: _v(3, 2)),
    'axis1': _separated(1, lambda: _v(2, 3, 4)),
    'negative_axis': _separated(-1, lambda: _v(2, 3)),
    'most_negative_axis': _separated(-2, lambda: _v(2, 3)),
    'vector': _separated(0, lambda: _v(4)),
    'one': _separated(0, lambda: _v(1, 3)),
    'empty_other_axis': _separated(1, lambda: _v(0, 3)),
    'strided': _separated(1, lambda: strided_variable(2, 3)),
    'fortran': _separated(0, lambda: chainer.Variable(
        numpy.asfortranarray(_v(3, 4).array))),
    'array': _separated(0, lambda: _v(3, 2).array),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'axis0': lambda d: applied(lambda a: F.separate(a, 0)[1],
                               _v(3, 2, dtype=d)),
    'negative_axis': lambda d: applied(
        lambda a: F.concat(F.separate(a, -1), 0), _v(2, 3, dtype=d)),
    # Gradients for some outputs only: zeros for the others.
    'some_outputs': lambda d: applied(
        lambda a: F.separate(a, 1)[0] * 2 + F.separate(a, 1)[2],
        _v(2, 3, 4, dtype=d)),
    'middle_axis': lambda d: applied(
        lambda a: F.stack(F.separate(a, 1)[::-1], 0), _v(2, 3, 4, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=sorted(BACKWARD_CASES)))


def test_node_state_same_as_stock():
    # The forward leaves _xp, _shape and _dtype on the node, in that order.
    def fn():
        y = F.separate(_v(3, 2), 1)[0]
        state = vars(y.creator)
        return list(state), state['_shape'], state['_dtype']
    check_same(fn)


def test_views_share_the_input_as_stock():
    def fn():
        x = _v(3, 2)
        ys = F.separate(x, 1)
        return [(y.array.base is x.array, y.array.flags.writeable,
                 y.array.strides) for y in ys]
    check_same(fn)


def test_forward_is_compiled(compiled_instead):
    x = _v(3, 2)
    compiled_instead(lambda: F.separate(x, 1), separate.Separate.forward)


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 2)
    type_check_is_cached(separate.Separate, lambda: F.separate(x, 1))


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('x,axis', [
    (numpy.zeros((2, 3), numpy.float32), 2),
    (numpy.zeros((2, 3), numpy.float32), -3),
    (numpy.zeros((0, 3), numpy.float32), 0),
    (numpy.zeros((), numpy.float32), 0),
], ids=['axis', 'negative_axis', 'zero_length_axis', '0d'])
def test_bad_input_same_error_as_stock(x, axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return [y.array for y in F.separate(x, axis)]
    check_error_same(fn)


@pytest.mark.parametrize('owner,name', [
    (separate.Separate, 'forward'), (numpy, 'split'), (numpy, 'squeeze'),
    (separate.Separate, 'backward'), (numpy, 'zeros'), (numpy, 'stack'),
    (stack, 'stack'), (stack.Stack, 'forward')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['some_outputs'], numpy.float32))
