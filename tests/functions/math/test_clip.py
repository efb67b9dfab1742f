"""F.clip (``Clip``) and its gradient node, stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import clip

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of, gradients, grad_vars,
    special_variable as _specials, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _clip(x_min, x_max):
    return lambda x: F.clip(x, x_min, x_max)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'clip': lambda: (_clip(-0.5, 0.5), [_v(3, 4)]),
    'min_only': lambda: (_clip(0.0, None), [_v(3, 4)]),
    'max_only': lambda: (_clip(None, 0.25), [_v(3, 4)]),
    'int_bounds': lambda: (_clip(-1, 0), [_v(5, low=-2, high=2)]),
    'numpy_bounds': lambda: (_clip(numpy.float64(-0.3), numpy.int32(1)),
                             [_v(5, dtype=numpy.float16)]),
    # -1e5 is no float16: NumPy clips in float32, cast back.
    'float16_wide_bounds': lambda: (_clip(-1e5, 0.5), [
        _v(3, 4, dtype=numpy.float16)]),
    'float64': lambda: (_clip(-0.1, 0.1), [_v(3, 4, dtype=numpy.float64)]),
    'signed_zero_bounds': lambda: (_clip(-0.0, 0.0 + 1e-30), [
        _specials((5, 7))]),
    'specials': lambda: (_clip(-1.0, 1.0), [_specials((5, 7))]),
    'specials_float16': lambda: (_clip(-1.0, None), [
        _specials((9,), numpy.float16)]),
    'specials_float64': lambda: (_clip(None, 0.5), [
        _specials((11,), numpy.float64, take=True)]),
    '0d': lambda: (_clip(-0.5, 0.5), [_v()]),
    'empty': lambda: (_clip(-0.5, 0.5), [_v(0, 3)]),
    'strided': lambda: (_clip(-0.5, 0.5), [strided_variable(2, 3)]),
    'transposed': lambda: (_clip(-0.5, 0.5), [
        chainer.Variable(_v(3, 4).array.T)]),
}


def _at_bounds(d):
    # Elements equal to the bounds: their gradient is 1.
    x = chainer.Variable(numpy.array([-1, -0.5, 0, 0.5, 1], d))
    return applied(_clip(-0.5, 0.5), x)


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'clip': lambda d: applied(_clip(-0.5, 0.5), _v(3, 4, dtype=d)),
    'min_only': lambda d: applied(_clip(0.0, None), _v(3, 4, dtype=d)),
    'max_only': lambda d: applied(_clip(None, 0.0), _v(3, 4, dtype=d)),
    'at_bounds': _at_bounds,
    'numpy_bounds': lambda d: applied(
        _clip(numpy.float32(-0.2), numpy.float64(0.2)), _v(7, dtype=d)),
    '0d': lambda d: applied(_clip(-0.5, 0.5), _v(dtype=d)),
    'strided': lambda d: applied(_clip(-0.5, 0.5),
                                 strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(_clip(-0.5, 0.5), _v(0, 2, dtype=d)),
}

TYPE_CHECK_SEQUENCES = {
    'integer': (lambda: F.clip(_v(3), -1.0, 1.0),
                lambda: F.clip(numpy.ones(3, numpy.int32), -1.0, 1.0)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['clip', 'min_only'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(APPLY_CASES, clip.Clip.forward_cpu)))


@pytest.mark.parametrize('x_min,x_max', [
    (None, None), (1.0, 1.0), (2, 1), (numpy.float32(0.5), 0.5),
    (float('nan'), 1.0), (0.0, float('nan')),
    (numpy.array([0.0, 0.1]), 1.0), ('a', 'b')])
def test_bounds_validation_same_as_stock(x_min, x_max):
    # Clip.__init__ checks the bounds: stock's errors and messages (and
    # NaN bounds, which pass its checks).
    def fn():
        with numpy.errstate(invalid='ignore'):
            return F.clip(_v(4), x_min, x_max).array
    check_error_same(fn)


@pytest.mark.parametrize('x_min,x_max', [
    (numpy.array([-0.5, -0.1, 0.0]), None), (numpy.array(-0.5), None),
    (None, numpy.array([[0.5], [0.0]])), (True, None),
    (numpy.bool_(False), None)],
    ids=['array', '0d_array', 'broadcasting', 'bool', 'numpy_bool'])
def test_unusual_bounds_are_stocks(x_min, x_max, patched_stats):
    def fn():
        x = _v(3)
        y = F.clip(x, x_min, x_max)
        y.grad = numpy.ones(y.shape, y.dtype)
        return error_of(y.backward), y.array, grad_vars(x)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {'case left to stock: Clip': 1}


def test_gradient_of_another_shape_is_left_to_stock(patched_stats):
    def fn():
        x = _v(2, 3)
        y = F.clip(x, -0.5, 0.5)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((3,), numpy.float32)))
        return error_of(y.backward), grad_vars(x)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {'case left to stock: Clip': 1}


def test_gradient_of_another_float_dtype_same_as_stock(patched_stats):
    def fn():
        x = _v(2, 3)
        y = F.clip(x, -0.5, 0.5)
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((2, 3), numpy.float64)))
        return error_of(y.backward), grad_vars(x)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {}


def test_bounds_changed_after_init_same_as_stock():
    def fn():
        x = _v(4)
        node = clip.Clip(-0.5, 0.5)
        node.x_min = None
        y, = node.apply((x,))
        y.grad = numpy.ones_like(y.array)
        y.backward()
        return y.array, x.grad
    check_same(fn)


@pytest.mark.parametrize('owner,name', [
    (clip.ClipGrad, 'forward_cpu'), (clip.ClipGrad, '__init__'),
    (clip.Clip, 'retain_inputs')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['clip'], numpy.float32))


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 4)
    type_check_is_cached(clip.Clip, lambda: F.clip(x, -0.5, 0.5))
