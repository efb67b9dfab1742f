"""F.linear_interpolate (``LinearInterpolate``) and its gradient node, stock
vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import linear_interpolate

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of, gradients, grad_vars,
    special_variable as _specials, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests

lerp = F.linear_interpolate


def _three(*shape, dtype=numpy.float32):
    return [_v(*shape, dtype=dtype, low=0, high=1), _v(*shape, dtype=dtype),
            _v(*shape, dtype=dtype)]


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'lerp': lambda: (lerp, _three(3, 4)),
    'float16': lambda: (lerp, _three(3, 4, dtype=numpy.float16)),
    'float64': lambda: (lerp, _three(5, dtype=numpy.float64)),
    'arrays': lambda: (lambda p, x, y: lerp(p.array, x, y.array),
                       _three(2, 3)),
    '0d': lambda: (lerp, _three()),
    'empty': lambda: (lerp, _three(0, 3)),
    'strided': lambda: (lerp, [strided_variable(2, 3), _v(2, 3),
                               strided_variable(2, 3)]),
    'transposed': lambda: (lerp, [chainer.Variable(_v(3, 4).array.T),
                                  _v(4, 3), _v(4, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'lerp': lambda d: applied(lerp, *_three(3, 4, dtype=d)),
    '0d': lambda d: applied(lerp, *_three(dtype=d)),
    'const_p': lambda d: applied(
        lambda x, y: lerp(numpy.full((3,), 0.25, d), x, y),
        _v(3, dtype=d), _v(3, dtype=d)),
    'strided': lambda d: applied(lerp, strided_variable(2, 3, dtype=d),
                                 _v(2, 3, dtype=d), _v(2, 3, dtype=d)),
    'empty': lambda d: applied(lerp, *_three(0, 2, dtype=d)),
}


def _ones(dtype=numpy.float32, shape=(3,)):
    return chainer.Variable(numpy.ones(shape, dtype))


TYPE_CHECK_SEQUENCES = {
    'other_dtype': (lambda: lerp(_ones(), _ones(), _ones()),
                    lambda: lerp(_ones(), _ones(numpy.float64), _ones())),
    'other_shape': (lambda: lerp(_ones(), _ones(), _ones()),
                    lambda: lerp(_ones(), _ones(), _ones(shape=(1,)))),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['lerp', '0d'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(
        APPLY_CASES, linear_interpolate.LinearInterpolate.forward_cpu)))


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
@pytest.mark.parametrize('special', [0, 1, 2])
def test_specials_same_as_stock(dtype, special, patched_stats):
    # NaNs, infinities and signed zeros in one operand (inf - inf among
    # them): under an error state that ignores them, forward and backward
    # are compiled.
    def fn():
        xs = _three(5, 7, dtype=dtype)
        xs[special] = _specials((5, 7), dtype)
        with numpy.errstate(all='ignore'):
            z = lerp(*xs)
            z.grad = _specials((5, 7), dtype, take=True).array
            z.backward()
        return z.array, grad_vars(*xs)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {}


@pytest.mark.parametrize('shapes,dtypes', [
    (((3,), (3,), (3,)), ('int32', 'int32', 'int32')),
    (((3,), (3,), (3,)), ('float32', 'float64', 'float32')),
    (((2, 3), (3,), (3,)), ('float32',) * 3),
    (((2, 3), (2,), (3,)), ('float32',) * 3),
], ids=['int', 'mixed', 'broadcast', 'mismatch'])
def test_unchecked_input_is_stocks(shapes, dtypes):
    def fn():
        args = [numpy.ones(s, d) for s, d in zip(shapes, dtypes)]
        with chainer.using_config('type_check', False):
            return lerp(*args).array
    check_error_same(fn)
    if error_of(fn) is None:
        check_same(fn)


def test_gradient_of_another_dtype_is_left_to_stock(patched_stats):
    def fn():
        p, x, y = _three(2, 3)
        z = lerp(p, x, y)
        z._set_grad_var_without_check(chainer.Variable(
            numpy.ones((2, 3), numpy.float64)))
        return error_of(z.backward), grad_vars(p, x, y)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: LinearInterpolate': 1}


@pytest.mark.parametrize('name', ['forward_cpu', '__init__'])
def test_mocked_gradient_node_is_called(name, mock_is_called):
    mock_is_called(linear_interpolate.LinearInterpolateGrad, name,
                   lambda: gradients(BACKWARD_CASES['lerp'], numpy.float32))


def test_passed_type_check_is_cached(type_check_is_cached):
    p, x, y = _three(2, 3)
    type_check_is_cached(linear_interpolate.LinearInterpolate,
                         lambda: lerp(p, x, y))
