"""F.max_pooling_2d (``MaxPoolingND``, ``MaxPoolingNDGrad``,
``MaxPoolingNDWithIndexes``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.pooling import max_pooling_nd
from chainer.utils import conv_nd

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, gradients, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _pool(*args, **kwargs):
    return lambda x: F.max_pooling_2d(x, *args, **kwargs)


def _channels_last(n, c, h, w, dtype=numpy.float32):
    # An (n, c, h, w) view of an array laid out (n, h, w, c).
    return chainer.Variable(_v(n, h, w, c, dtype=dtype).array
                            .transpose(0, 3, 1, 2))


def _steps(shape, dtype=numpy.float32):
    # Few distinct values: windows with equal maxima (argmax: the first).
    x = numpy.random.randint(-2, 3, shape).astype(dtype)
    return chainer.Variable(x)


def _specials(shape, dtype=numpy.float32, zeros=False):
    # Infinities and subnormals among numbers; with ``zeros``, zeros of
    # both signs the maxima of some windows (which NumPy's max keeps is
    # its loop's: stock's).
    x = numpy.random.uniform(-1, 1, shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::5] = numpy.inf
    flat[1::7] = -numpy.inf
    flat[2::9] = numpy.finfo(dtype).tiny / 4
    if zeros:
        flat[:] = numpy.where(flat > 0, -flat, flat)
        flat[::3] = 0.0
        flat[1::3] = -0.0
    return chainer.Variable(x)


def _nans(shape, dtype=numpy.float32):
    # NaNs of both signs and several payloads among numbers.
    x = numpy.random.uniform(-1, 1, shape).astype(dtype)
    flat = x.reshape(-1).view('u{}'.format(x.itemsize))
    nan = int(numpy.array(numpy.nan, dtype).view(flat.dtype))
    sign = 1 << (8 * x.itemsize - 1)
    for i in range(0, flat.size, 7):
        flat[i] = (nan | (i + 1)) ^ (sign if i % 2 else 0)
    return chainer.Variable(x)


def _return_indices(x):
    y, indexes = F.max_pooling_2d(x, 3, 2, 1, return_indices=True)
    return y, chainer.Variable(indexes.astype(numpy.float32))


def _with_indexes_node(x):
    # MaxPoolingNDWithIndexes applied directly (double backprop applies
    # it), the indexes of a forward without a graph.
    pool = max_pooling_nd.MaxPoolingND(2, 3, 2, 1)
    pool.apply((x.array,))
    return max_pooling_nd.MaxPoolingNDWithIndexes(pool).apply((x,))[0]


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'pool': lambda: (_pool(3, 2, 1), [_v(2, 3, 7, 6)]),
    'no_cover_all': lambda: (_pool(3, 2, 1, cover_all=False),
                             [_v(2, 3, 7, 6)]),
    'default_stride': lambda: (_pool(2), [_v(2, 2, 5, 4)]),
    'stride_over_kernel': lambda: (_pool(2, 3), [_v(2, 2, 7, 8)]),
    'rectangular': lambda: (_pool((2, 3), (1, 2), (1, 0)), [_v(2, 2, 5, 7)]),
    # Windows wholly in the padding: -inf, index 0.
    'pad_over_kernel': lambda: (_pool(1, 1, 2), [_v(1, 2, 3, 2)]),
    'kernel_over_image': lambda: (_pool(4, 2), [_v(2, 2, 3, 3)]),
    'one_by_one': lambda: (_pool(1), [_v(2, 3, 2, 2)]),
    'float16': lambda: (_pool(3, 2, 1),
                        [_v(2, 3, 5, 6, dtype=numpy.float16)]),
    'float64': lambda: (_pool(3, 2, 1),
                        [_v(2, 3, 5, 6, dtype=numpy.float64)]),
    'strided_input': lambda: (_pool(2, 1), [strided_variable(2, 3, 4, 4)]),
    'channels_last': lambda: (_pool(3, 2, 1), [_channels_last(2, 3, 5, 4)]),
    'equal_maxima': lambda: (_pool(3, 1, 1), [_steps((2, 3, 5, 5))]),
    'equal_maxima_float16': lambda: (
        _pool(3, 1, 1), [_steps((2, 3, 5, 5), numpy.float16)]),
    'specials': lambda: (_pool(3, 2, 1), [_specials((2, 3, 6, 6))]),
    'specials_float16': lambda: (
        _pool(3, 2, 1), [_specials((2, 3, 6, 6), numpy.float16)]),
    'return_indices': lambda: (_return_indices, [_v(2, 2, 5, 5)]),
    'with_indexes': lambda: (_with_indexes_node, [_v(2, 3, 7, 6)]),
    # Left to stock: zeros of both signs, NaNs, other spatial dims.
    'signed_zeros': lambda: (_pool(3, 1, 1),
                             [_specials((2, 2, 5, 5), zeros=True)]),
    'nans': lambda: (_pool(3, 2, 1), [_nans((2, 2, 5, 5))]),
    'nans_float16': lambda: (_pool(2), [_nans((2, 2, 4, 4),
                                               numpy.float16)]),
    'max_pooling_1d': lambda: (lambda x: F.max_pooling_1d(x, 2),
                               [_v(2, 3, 5)]),
    'max_pooling_3d': lambda: (lambda x: F.max_pooling_3d(x, 2),
                               [_v(1, 2, 3, 4, 4)]),
}


def _grad_node(x):
    # MaxPoolingNDGrad applied directly, after a forward without a graph.
    pool = max_pooling_nd.MaxPoolingND(2, 3, 2, 1)
    pool.apply((x.array,))
    return max_pooling_nd.MaxPoolingNDGrad(pool).apply((x[:, :, :4, :4],))[0]


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'pool': lambda d: applied(_pool(3, 2, 1), _v(2, 3, 7, 6, dtype=d)),
    'non_overlapping': lambda d: applied(_pool(2), _v(2, 3, 6, 5, dtype=d)),
    'rectangular': lambda d: applied(_pool((2, 3), (2, 3), (1, 1)),
                                     _v(2, 2, 5, 7, dtype=d)),
    'stride_one': lambda d: applied(_pool(3, 1, 1),
                                    _v(2, 2, 5, 5, dtype=d)),
    'equal_maxima': lambda d: applied(_pool(2, 1),
                                      _steps((2, 2, 5, 4), d)),
    'grad_node': lambda d: applied(_grad_node, _v(2, 3, 7, 6, dtype=d)),
}

globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['pool', 'non_overlapping', 'grad_node'],
    compiled_forward=dict(
        dict.fromkeys([name for name in APPLY_CASES if name not in (
            'signed_zeros', 'nans', 'nans_float16', 'max_pooling_1d',
            'max_pooling_3d', 'with_indexes')],
            max_pooling_nd.MaxPoolingND.forward_cpu),
        with_indexes=max_pooling_nd.MaxPoolingNDWithIndexes.forward_cpu)))


def test_node_state_same_as_stock():
    def fn():
        x = _v(2, 3, 7, 6)
        y = F.max_pooling_2d(x, 3, 2, 1)
        node = y.creator
        return (node.indexes, node.indexes.strides, node._in_shape,
                str(node._in_dtype), y.array.strides, sorted(vars(node)))
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
@pytest.mark.parametrize('kwargs', [dict(ksize=3, stride=2, pad=1),
                                    dict(ksize=2, stride=1),
                                    dict(ksize=2)])
def test_gradient_is_stock_view_of_padded_image(dtype, kwargs):
    def fn():
        x = _v(2, 3, 6, 5, dtype=dtype)
        y = F.max_pooling_2d(x, **kwargs)
        y.grad = numpy.random.uniform(-1, 1, y.shape).astype(dtype)
        y.backward()
        g = x.grad
        return g, g.strides, g.base.shape, g.base
    check_same(fn)


def test_broadcast_gradient_same_as_stock():
    # F.sum's gradient reaches the pooling as a view of zero strides.
    def fn():
        x = _v(2, 3, 6, 5)
        F.sum(F.max_pooling_2d(x, 3, 2, 1)).backward()
        return x.grad
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
def test_nan_gradients_same_as_stock(dtype):
    def fn():
        x = _v(2, 2, 5, 5, dtype=dtype)
        y = F.max_pooling_2d(x, 3, 1, 1)
        y.grad = _nans(y.shape, dtype).array
        y.backward()
        return x.grad
    check_same(fn)


def test_overflowing_gradient_acts_as_stock(errstate_acts_as_stock):
    # Overlapping windows whose maximum is one element: its gradient sums
    # several, and overflows.
    def fn():
        x = numpy.zeros((1, 1, 4, 4), numpy.float32)
        x[0, 0, 1, 1] = 1
        x = chainer.Variable(x)
        y = F.max_pooling_2d(x, 3, 1, 1)
        y.grad = numpy.full(y.shape, numpy.finfo(numpy.float32).max,
                            numpy.float32)
        y.backward()
        return x.grad
    for mode in ('raise', 'call', 'warn'):
        errstate_acts_as_stock(fn, mode)


def test_forward_is_compiled_for_double_backprop(compiled_instead):
    def fn():
        x = _v(2, 2, 5, 5)
        y = F.max_pooling_2d(x, 3, 2, 1)
        gx, = chainer.grad([y], [x], [_v(*y.shape)],
                           enable_double_backprop=True)
        F.sum(gx * gx).backward()
    for function in (max_pooling_nd.MaxPoolingNDGrad.forward_cpu,
                     max_pooling_nd.MaxPoolingNDWithIndexes.forward_cpu):
        compiled_instead(fn, function)


@pytest.mark.parametrize('owner, name', [
    (conv_nd, 'im2col_nd_cpu'), (conv_nd, 'get_conv_outsize'),
    (conv_nd, 'col2im_nd_cpu'),
    (max_pooling_nd.MaxPoolingNDGrad, 'forward_cpu'),
    (max_pooling_nd.MaxPoolingND, 'forward_cpu')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(BACKWARD_CASES['pool'],
                                                  numpy.float32))


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3, 4, 4)
    type_check_is_cached(max_pooling_nd.MaxPoolingND,
                         lambda: F.max_pooling_2d(x, 2))


@pytest.mark.parametrize('make', [
    lambda: F.max_pooling_2d(_v(3, 4, 4), 2),
    lambda: F.max_pooling_2d(_v(0, 3, 4, 4), 2),    # empty: stock's
    lambda: F.max_pooling_2d(_v(2, 3, 4, 4), 5, cover_all=False),
    lambda: F.max_pooling_2d(_v(2, 3, 4, 4), (2, 2, 2)),
    lambda: max_pooling_nd.MaxPoolingND(2, 2).apply((_v(2, 3, 4),)),
    lambda: max_pooling_nd.MaxPoolingND(2, 2).apply(
        (_v(2, 3, 4, 4).array.astype(numpy.int32),)),
])
@pytest.mark.parametrize('type_check', [True, False])
def test_bad_input_same_error_as_stock(make, type_check):
    check_error_same(make, type_check)


def _with_indexes(indexes):
    def fn():
        x = _v(2, 2, 5, 5)
        pool = max_pooling_nd.MaxPoolingND(2, 3, 2, 1)
        pool.apply((x.array,))
        pool.indexes = indexes(pool.indexes)
        node = max_pooling_nd.MaxPoolingNDWithIndexes(pool)
        try:
            return node.apply((x.array * 2,))[0].array
        except Exception as e:
            return type(e).__name__, str(e)
    return fn


@pytest.mark.parametrize('indexes', [
    lambda i: i,
    lambda i: i - 1,            # -1 wraps in stock's fancy index
    lambda i: i + 7,            # out of the window: IndexError
    lambda i: i.astype(numpy.int32),
    lambda i: i[..., ::-1],
    lambda i: i[:, :1],
], ids=['as_made', 'wrapping', 'outside', 'int32', 'reversed', 'fewer'])
def test_indexes_forward_as_stock(indexes):
    check_same(_with_indexes(indexes))


@pytest.mark.parametrize('indexes', [
    lambda i: i - 1, lambda i: i + 9, lambda i: i.astype(numpy.int32),
    lambda i: i[:, :1]], ids=['wrapping', 'outside', 'int32', 'fewer'])
def test_gradient_of_odd_indexes_as_stock(indexes):
    def fn():
        x = _v(2, 2, 5, 5)
        pool = max_pooling_nd.MaxPoolingND(2, 3, 2, 1)
        y, = pool.apply((x.array,))
        pool.indexes = indexes(pool.indexes)
        node = max_pooling_nd.MaxPoolingNDGrad(pool)
        try:
            return node.apply((y.array,))[0].array
        except Exception as e:
            return type(e).__name__, str(e)
    check_same(fn)


def test_bad_geometry_as_stock(bad_geometry, geometry_as_stock):
    geometry_as_stock('max_pooling_nd.MaxPoolingND(2, **kwargs)',
                      'F.max_pooling_2d', bad_geometry)


@pytest.mark.parametrize('kwargs', [
    dict(ksize=5, stride=-1, cover_all=False),
    dict(ksize=9, cover_all=False),
    dict(ksize=2, cover_all=numpy.bool_(False)),
], ids=repr)
def test_bad_geometry_without_cover_all_as_stock(kwargs, geometry_as_stock):
    geometry_as_stock('max_pooling_nd.MaxPoolingND(2, **kwargs)',
                      'F.max_pooling_2d', kwargs)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_signaling_nan_acts_as_stock(dtype):
    # Comparing a signaling NaN raises the invalid flag; stock's max and
    # argmax act on none.
    def fn():
        x = _v(1, 2, 4, 4, dtype=dtype)
        bits = x.array.reshape(-1).view('u{}'.format(x.array.itemsize))
        bits[5] = 0x7fa00000 if dtype == numpy.float32 else (
            0x7ff4000000000000)
        with numpy.errstate(all='raise'):
            y = F.max_pooling_2d(x, 2, 1)
            empty = numpy.zeros(0, dtype) + 1
        return y.array, y.creator.indexes, empty
    check_same(fn)
