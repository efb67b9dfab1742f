"""F.identity (``Identity``), stock vs patched."""
import numpy

import chainer
import chainer.functions as F
from chainer.functions.math import identity

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, grad_vars,
    special_variable as _specials, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _second(a, b):
    return F.identity(a, b)[1] * 2.0


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'identity': lambda: (F.identity, [_v(3, 4)]),
    'several': lambda: (F.identity, [_v(3), _v(2, 2), _v()]),
    'float16': lambda: (F.identity, [_v(3, dtype=numpy.float16)]),
    'array': lambda: (lambda a: F.identity(a.array), [_v(3)]),
    'integer': lambda: (lambda a: F.identity(a, numpy.arange(3))[0],
                        [_v(3)]),
    'specials': lambda: (F.identity, [_specials((5, 7))]),
    'empty': lambda: (F.identity, [_v(0, 3)]),
    'strided': lambda: (F.identity, [strided_variable(2, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'identity': lambda d: applied(F.identity, _v(3, 4, dtype=d)),
    '0d': lambda d: applied(F.identity, _v(dtype=d)),
    'one_of_two_used': lambda d: applied(_second, _v(3, dtype=d),
                                         _v(2, dtype=d)),
    'both_used': lambda d: applied(
        lambda a, b: sum(F.identity(a, b)), _v(3, dtype=d), _v(3, dtype=d)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['identity', 'both_used'],
    compiled_forward=dict.fromkeys(APPLY_CASES, identity.Identity.forward)))


def test_outputs_hold_the_inputs_arrays_as_stock():
    def fn():
        x = _v(3)
        y = F.identity(x)
        return y.array is x.array, y.requires_grad
    check_same(fn)


def test_gradient_is_the_output_gradient_as_stock():
    def fn():
        x = _v(3)
        y = F.identity(x)
        gy = chainer.Variable(numpy.ones(3, numpy.float32))
        y.grad_var = gy
        y.backward()
        return x.grad_var is gy, x.grad_var.array is gy.array, grad_vars(x)
    check_same(fn)


def test_no_input_is_stocks():
    check_error_same(lambda: F.identity())


def test_mocked_forward_is_called(mock_is_called):
    mock_is_called(identity.Identity, 'forward',
                   lambda: F.identity(_v(3)))
