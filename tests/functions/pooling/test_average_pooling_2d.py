"""F.average_pooling_2d (``AveragePooling2D``, ``AveragePooling2DGrad``),
stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.pooling import average_pooling_2d
from chainer.utils import conv

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, gradients, strided_variable,
    variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests


def _pool(*args):
    return lambda x: F.average_pooling_2d(x, *args)


def _channels_last(n, c, h, w, dtype=numpy.float32):
    # An (n, c, h, w) view of an array laid out (n, h, w, c).
    return chainer.Variable(_v(n, h, w, c, dtype=dtype).array
                            .transpose(0, 3, 1, 2))


def _specials(shape, dtype=numpy.float32):
    # Infinities, subnormals, zeros of both signs, NaNs with payloads.
    x = numpy.random.uniform(-1, 1, shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::5] = numpy.inf
    flat[2::9] = numpy.finfo(dtype).tiny / 4
    flat[3::11] = -0.0
    bits = flat.view('u{}'.format(x.itemsize))
    bits[4::13] = int(numpy.array(numpy.nan, dtype).view(bits.dtype)) | 5
    return chainer.Variable(x)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'pool': lambda: (_pool(3, 2, 1), [_v(2, 3, 7, 6)]),
    'default_stride': lambda: (_pool(2), [_v(2, 2, 5, 4)]),
    'stride_over_kernel': lambda: (_pool(2, 3), [_v(2, 2, 7, 8)]),
    'rectangular': lambda: (_pool((2, 3), (1, 2), (1, 0)), [_v(2, 2, 5, 7)]),
    'pad_over_kernel': lambda: (_pool(1, 1, 2), [_v(1, 2, 3, 2)]),
    'one_by_one': lambda: (_pool(1), [_v(2, 3, 2, 2)]),
    'whole_image': lambda: (_pool((5, 4)), [_v(2, 3, 5, 4)]),
    'float16': lambda: (_pool(3, 2, 1), [_v(2, 3, 5, 6, dtype=numpy.float16)]),
    'float64': lambda: (_pool(3, 2, 1), [_v(2, 3, 5, 6, dtype=numpy.float64)]),
    'strided_input': lambda: (_pool(2, 1), [strided_variable(2, 3, 4, 4)]),
    'channels_last': lambda: (_pool(3, 2, 1), [_channels_last(2, 3, 5, 4)]),
    'specials': lambda: (_pool(3, 2, 1), [_specials((2, 3, 6, 6))]),
    'specials_float16': lambda: (_pool(2), [_specials((2, 2, 6, 6),
                                                      numpy.float16)]),
}

def _grad_node(x):
    # AveragePooling2DGrad applied directly, after a forward without a
    # graph.
    pool = average_pooling_2d.AveragePooling2D(3, 2, 1)
    pool.apply((x.array,))
    grad = average_pooling_2d.AveragePooling2DGrad(pool)
    return grad.apply((x[:, :, :4, :3],))[0]


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'pool': lambda d: applied(_pool(3, 2, 1), _v(2, 3, 7, 6, dtype=d)),
    'non_overlapping': lambda d: applied(_pool(2), _v(2, 3, 6, 5, dtype=d)),
    'rectangular': lambda d: applied(_pool((2, 3), (2, 1), (1, 1)),
                                     _v(2, 2, 5, 7, dtype=d)),
    'stride_one': lambda d: applied(_pool(3, 1, 1), _v(2, 2, 5, 5, dtype=d)),
    'grad_node': lambda d: applied(_grad_node, _v(2, 3, 7, 6, dtype=d)),
}

# The compiled forwards, every case: NumPy's mean runs on the patches.
globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['pool', 'rectangular', 'grad_node'],
    compiled_forward=dict.fromkeys(
        APPLY_CASES, average_pooling_2d.AveragePooling2D.forward_cpu)))


def test_node_state_same_as_stock():
    def fn():
        x = _v(2, 3, 7, 6)
        y = F.average_pooling_2d(x, 3, 2, 1)
        node = y.creator
        return (node._in_shape, str(node._in_dtype), y.array.strides,
                sorted(vars(node)))
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
@pytest.mark.parametrize('args', [(3, 2, 1), (2, 1), (2,), ((1, 3), 2, 1)])
def test_gradient_is_stock_view_of_padded_image(dtype, args):
    def fn():
        x = _v(2, 3, 6, 5, dtype=dtype)
        y = F.average_pooling_2d(x, *args)
        y.grad = numpy.random.uniform(-1, 1, y.shape).astype(dtype)
        y.backward()
        g = x.grad
        return g, g.strides, g.base.shape, g.base
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_special_gradients_same_as_stock(dtype):
    # NaNs (left to stock), infinities and subnormals.
    def fn():
        x = _v(2, 2, 5, 5, dtype=dtype)
        y = F.average_pooling_2d(x, 3, 1, 1)
        y.grad = _specials(y.shape, dtype).array
        y.backward()
        return x.grad
    check_same(fn)


def test_broadcast_gradient_same_as_stock():
    # F.sum's gradient reaches the pooling as a view of zero strides.
    def fn():
        x = _v(2, 3, 6, 5)
        F.sum(F.average_pooling_2d(x, 3, 2, 1)).backward()
        return x.grad
    check_same(fn)


@pytest.mark.parametrize('which', ['forward', 'backward'])
def test_overflow_acts_as_stock(which, errstate_acts_as_stock):
    big = numpy.finfo(numpy.float32).max

    def fn():
        x = chainer.Variable(numpy.full((1, 1, 4, 4), big, numpy.float32))
        y = F.average_pooling_2d(x, 3, 1, 1)
        if which == 'forward':
            return y.array
        y.grad = numpy.full(y.shape, big, numpy.float32)
        y.backward()
        return x.grad
    for mode in ('raise', 'call', 'warn'):
        errstate_acts_as_stock(fn, mode)


@pytest.mark.parametrize('which', ['forward', 'backward'])
def test_invalid_sum_acts_as_stock(which, errstate_acts_as_stock):
    # Infinities of both signs in a window: their sum is NaN.
    def fn():
        x = numpy.zeros((1, 1, 4, 4), numpy.float32)
        x[0, 0, 1, 1], x[0, 0, 1, 2] = numpy.inf, -numpy.inf
        x = chainer.Variable(x)
        y = F.average_pooling_2d(x, 3, 1, 1)
        if which == 'forward':
            return y.array
        y.grad = x.array[:, :, :y.shape[2], :y.shape[3]].copy()
        y.backward()
        return x.grad
    for mode in ('raise', 'call', 'warn'):
        errstate_acts_as_stock(fn, mode)


@pytest.mark.parametrize('mode', ['raise', 'warn', 'ignore'])
def test_underflowing_division_acts_as_stock(mode):
    def fn():
        x = _v(1, 1, 4, 4)
        y = F.average_pooling_2d(x, 3, 1, 1)
        y.grad = numpy.full(y.shape, 1e-44, numpy.float32)
        with numpy.errstate(under=mode):
            error, caught = warned(y.backward)
        return error, caught, x.grad
    check_same(fn)


def test_forward_is_compiled_for_double_backprop(compiled_instead):
    def fn():
        x = _v(2, 2, 5, 5)
        y = F.average_pooling_2d(x, 3, 2, 1)
        gx, = chainer.grad([y], [x], [_v(*y.shape)],
                           enable_double_backprop=True)
        F.sum(gx * gx).backward()
    compiled_instead(fn, average_pooling_2d.AveragePooling2DGrad.forward_cpu)


@pytest.mark.parametrize('owner, name', [
    (conv, 'im2col_cpu'), (conv, 'get_conv_outsize'), (conv, 'col2im_cpu'),
    (average_pooling_2d.AveragePooling2DGrad, 'forward_cpu'),
    (average_pooling_2d.AveragePooling2D, 'forward_cpu')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(BACKWARD_CASES['pool'],
                                                  numpy.float32))


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3, 4, 4)
    type_check_is_cached(average_pooling_2d.AveragePooling2D,
                         lambda: F.average_pooling_2d(x, 2))


@pytest.mark.parametrize('make', [
    lambda: F.average_pooling_2d(_v(3, 4, 4), 2),
    lambda: F.average_pooling_2d(_v(2, 3, 4, 4), 5),
    lambda: F.average_pooling_2d(_v(0, 3, 4, 4), 2),
    lambda: average_pooling_2d.AveragePooling2D(2).apply((_v(2, 3, 4),)),
    lambda: average_pooling_2d.AveragePooling2D(2).apply(
        (_v(2, 3, 4, 4).array.astype(numpy.int32),)),
])
@pytest.mark.parametrize('type_check', [True, False])
def test_bad_input_same_error_as_stock(make, type_check):
    check_error_same(make, type_check)


def test_bad_geometry_as_stock(bad_geometry, geometry_as_stock):
    geometry_as_stock('average_pooling_2d.AveragePooling2D(**kwargs)',
                      'F.average_pooling_2d', bad_geometry)


def _grad_node_geometry(attributes):
    # AveragePooling2DGrad with its attributes changed after it was made:
    # stock's slices raise or broadcast for what the forward did not make.
    def fn():
        x = _v(2, 2, 5, 5)
        pool = average_pooling_2d.AveragePooling2D(3, 2, 1)
        y, = pool.apply((x.array,))
        node = average_pooling_2d.AveragePooling2DGrad(pool)
        for name, value in attributes.items():
            setattr(node, name, value)
        try:
            return node.apply((y.array,))[0].array
        except Exception as e:
            return type(e).__name__, str(e)
    return fn


@pytest.mark.parametrize('attributes', [
    dict(), dict(_in_shape=(2, 2, 1, 1)), dict(_in_shape=(2, 2, 9, 9)),
    dict(kh=7), dict(sy=5), dict(ph=0), dict(_in_shape=(2, 2, 5)),
], ids=repr)
def test_grad_node_geometry_as_stock(attributes):
    check_same(_grad_node_geometry(attributes))
