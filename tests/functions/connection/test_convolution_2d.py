"""F.convolution_2d (``Convolution2DFunction``, ``Convolution2DGradW``),
stock vs patched."""
import warnings

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.connection import convolution_2d
from chainer.functions.connection import deconvolution_2d
from chainer.utils import conv

from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, applied_state, check_error_same, check_same,
    grad_vars, gradients, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _conv(**kwargs):
    return lambda *args: F.convolution_2d(*args, **kwargs)


def _nchw_view(n, c, h, w, dtype=numpy.float32):
    # Channels last in memory: an (n, c, h, w) view no axis of which is
    # contiguous in the order NumPy reads it.
    base = _v(n, h, w, c, dtype=dtype).array
    return chainer.Variable(base.transpose(0, 3, 1, 2))


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'conv': lambda: (_conv(pad=1), [_v(2, 3, 5, 5), _v(4, 3, 3, 3),
                                    _v(4)]),
    'nobias': lambda: (_conv(), [_v(2, 3, 5, 4), _v(4, 3, 3, 2)]),
    'stride_pad': lambda: (_conv(stride=2, pad=1),
                           [_v(2, 3, 7, 6), _v(4, 3, 4, 4), _v(4)]),
    'stride_over_kernel': lambda: (_conv(stride=(3, 2)),
                                   [_v(1, 2, 8, 7), _v(3, 2, 2, 1)]),
    'pad_over_kernel': lambda: (_conv(pad=(3, 2)),
                                [_v(2, 2, 3, 4), _v(3, 2, 2, 2)]),
    'cover_all': lambda: (_conv(stride=2, cover_all=True),
                          [_v(2, 3, 6, 5), _v(4, 3, 3, 3), _v(4)]),
    'dilate': lambda: (_conv(pad=2, dilate=(2, 3)),
                       [_v(2, 3, 7, 8), _v(4, 3, 3, 3)]),
    'one_by_one': lambda: (_conv(), [_v(3, 4, 2, 2), _v(5, 4, 1, 1)]),
    # The product of one row: BLAS's vector path.
    'one_output_pixel': lambda: (_conv(), [_v(1, 3, 3, 3), _v(2, 3, 3, 3)]),
    'channels_last_input': lambda: (_conv(pad=1),
                                    [_nchw_view(2, 3, 4, 5),
                                     _v(4, 3, 3, 3), _v(4)]),
    'strided_input': lambda: (_conv(), [strided_variable(2, 3, 4, 4),
                                        _v(2, 3, 2, 2)]),
    'empty_batch': lambda: (_conv(pad=1), [_v(0, 3, 4, 4), _v(2, 3, 3, 3)]),
    'no_output_channels': lambda: (_conv(), [_v(2, 3, 4, 4),
                                             _v(0, 3, 3, 3)]),
    'float64': lambda: (_conv(pad=1), [
        _v(2, 3, 4, 4, dtype=numpy.float64),
        _v(2, 3, 3, 3, dtype=numpy.float64),
        _v(2, dtype=numpy.float64)]),
    'float16': lambda: (_conv(pad=1), [
        _v(2, 3, 4, 4, dtype=numpy.float16),
        _v(2, 3, 3, 3, dtype=numpy.float16),
        _v(2, dtype=numpy.float16)]),
    # Left to stock: a cast after the product, and grouped convolutions.
    'mixed_dtypes': lambda: (_conv(), [_v(2, 3, 4, 4),
                                       _v(2, 3, 3, 3,
                                          dtype=numpy.float64)]),
    'groups': lambda: (_conv(groups=3), [_v(2, 6, 4, 4), _v(3, 2, 3, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'conv': lambda d: applied(_conv(pad=1), _v(2, 3, 5, 5, dtype=d),
                              _v(4, 3, 3, 3, dtype=d), _v(4, dtype=d)),
    'nobias': lambda d: applied(_conv(stride=2), _v(2, 2, 6, 5, dtype=d),
                                _v(3, 2, 2, 3, dtype=d)),
    'cover_all_dilate': lambda d: applied(
        _conv(stride=2, pad=1, cover_all=True, dilate=2),
        _v(2, 2, 7, 6, dtype=d), _v(3, 2, 2, 2, dtype=d), _v(3, dtype=d)),
    'x_const': lambda d: applied(
        _conv(pad=1), _v(1, 2, 4, 4, dtype=d, requires_grad=False),
        _v(3, 2, 3, 3, dtype=d)),
    'channels_last_input': lambda d: applied(
        _conv(pad=1), _nchw_view(2, 3, 4, 5, dtype=d),
        _v(2, 3, 3, 3, dtype=d)),
    'stride_over_kernel': lambda d: applied(
        _conv(stride=(3, 2)), _v(2, 2, 8, 7, dtype=d),
        _v(3, 2, 2, 1, dtype=d), _v(3, dtype=d)),
    'pad_over_kernel': lambda d: applied(
        _conv(pad=(3, 2)), _v(2, 2, 3, 4, dtype=d), _v(3, 2, 2, 2, dtype=d)),
    'dilate': lambda d: applied(
        _conv(pad=2, dilate=(2, 3)), _v(2, 3, 7, 8, dtype=d),
        _v(4, 3, 3, 3, dtype=d), _v(4, dtype=d)),
    # Stock's code for the products: a batch of one, one output pixel.
    'batch_of_one': lambda d: applied(
        _conv(stride=2, pad=1), _v(1, 3, 6, 5, dtype=d),
        _v(2, 3, 3, 3, dtype=d), _v(2, dtype=d)),
    'one_output_pixel': lambda d: applied(
        _conv(), _v(2, 3, 3, 3, dtype=d), _v(2, 3, 3, 3, dtype=d)),
    'one_by_one': lambda d: applied(
        _conv(), _v(3, 4, 2, 2, dtype=d), _v(5, 4, 1, 1, dtype=d)),
    'strided_input': lambda d: applied(
        _conv(), strided_variable(2, 3, 4, 4, dtype=d),
        _v(2, 3, 2, 2, dtype=d)),
    'empty_batch': lambda d: applied(
        _conv(pad=1), _v(0, 3, 4, 4, dtype=d), _v(2, 3, 3, 3, dtype=d),
        _v(2, dtype=d)),
    'W_const': lambda d: applied(
        _conv(stride=2), _v(2, 2, 5, 5, dtype=d),
        _v(3, 2, 3, 3, dtype=d, requires_grad=False), _v(3, dtype=d)),
    'b_only': lambda d: applied(
        _conv(), _v(2, 2, 4, 4, dtype=d, requires_grad=False),
        _v(3, 2, 3, 3, dtype=d, requires_grad=False), _v(3, dtype=d)),
    # The gradient nodes' forwards are stock's (grouped), the backward's
    # is compiled.
    'groups': lambda d: applied(
        _conv(groups=3, pad=1), _v(2, 6, 4, 4, dtype=d),
        _v(3, 2, 3, 3, dtype=d), _v(3, dtype=d)),
    'mixed_dtypes': lambda d: applied(
        _conv(), _v(2, 3, 4, 4, dtype=d),
        _v(2, 3, 3, 3, dtype=numpy.float64)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['conv', 'cover_all_dilate']))


@pytest.mark.parametrize('shape,kwargs', [
    ((2, 3, 5, 5), dict(pad=1)),
    ((2, 3, 9, 9), dict(stride=3, pad=2, dilate=2, cover_all=True)),
])
def test_patches_have_stock_values(shape, kwargs):
    # What the product is handed: stock's patch matrix, bit for bit.
    x, W = _v(*shape), _v(4, 3, 3, 3)

    def fn():
        calls = []
        original = numpy.tensordot

        def spy(a, b, axes):
            calls.append(a.transpose(0, 4, 5, 1, 2, 3).copy())
            return original(a, b, axes)
        numpy.tensordot = spy
        try:
            F.convolution_2d(x, W, **kwargs)
        finally:
            numpy.tensordot = original
        return calls
    stock, patched = check_same(fn)
    assert len(stock) == 1


@pytest.mark.parametrize('n', [1, 2])
@pytest.mark.parametrize('shape,kwargs', [
    ((3, 5, 5), dict(pad=1)),
    ((3, 3, 3), {}),     # one output pixel
])
def test_blas_gets_stock_matrices(n, shape, kwargs):
    # The matrices ``tensordot`` hands to ``dot``, forward and weight
    # gradient: the same shapes and strides as stock's (BLAS may sum
    # another memory order in another order; for a batch of one stock's
    # patch matrix is an uncopied transposed view).
    x, W = _v(n, *shape), _v(4, 3, 3, 3)
    numeric = numpy.core.numeric

    def fn():
        calls = []
        original = numeric.dot

        def spy(a, b, *args):
            calls.append([(m.shape, m.strides) for m in (a, b)])
            return original(a, b, *args)
        numeric.dot = spy
        try:
            y = F.convolution_2d(x, W, **kwargs)
            y.grad = numpy.ones_like(y.array)
            y.backward()
        finally:
            numeric.dot = original
        return calls
    stock, patched = check_same(fn)
    assert len(stock) == 3   # forward, input and weight gradients


def test_forward_is_compiled(compiled_instead):
    x, W = _v(2, 3, 4, 4), _v(2, 3, 3, 3)
    compiled_instead(lambda: F.convolution_2d(x, W, pad=1),
                     convolution_2d.Convolution2DFunction._forward_cpu_core)


def test_weight_gradient_forward_is_compiled(compiled_instead):
    compiled_instead(lambda: gradients(BACKWARD_CASES['conv'], numpy.float32),
                     convolution_2d.Convolution2DGradW._forward_cpu_core)


@pytest.mark.parametrize('name,fn', [
    ('im2col_cpu', lambda: gradients(BACKWARD_CASES['conv'], numpy.float32)),
    # The forward alone: the input gradient's deconvolution calls it from
    # its type check too, which the patch runs once for the same types.
    ('get_conv_outsize', lambda: F.convolution_2d(_v(2, 3, 4, 4),
                                                  _v(2, 3, 3, 3), pad=1)),
])
def test_mocked_helper_is_called(name, fn, mock_is_called):
    mock_is_called(conv, name, fn)


def test_passed_type_check_is_cached(type_check_is_cached):
    x, W = _v(2, 3, 4, 4), _v(2, 3, 3, 3)
    type_check_is_cached(convolution_2d.Convolution2DFunction,
                         lambda: F.convolution_2d(x, W))


@pytest.mark.parametrize('make', [
    # Type check: a 3-d input, an int weight, a bias of the wrong size.
    lambda: F.convolution_2d(_v(3, 4, 4), _v(2, 3, 3, 3)),
    lambda: F.convolution_2d(_v(2, 3, 4, 4),
                             numpy.ones((2, 3, 3, 3), numpy.int32)),
    lambda: F.convolution_2d(_v(2, 3, 4, 4), _v(2, 3, 3, 3), _v(3)),
    # A kernel larger than the padded input: im2col's assertion.
    lambda: F.convolution_2d(_v(2, 3, 2, 2), _v(2, 3, 3, 3)),
    lambda: F.convolution_2d(_v(2, 3, 4, 4), _v(2, 3, 3, 3),
                             cudnn_fast=True),
    lambda: F.convolution_2d(_v(2, 3, 4, 4), _v(2, 3, 3, 3), dilate=0),
])
@pytest.mark.parametrize('type_check', [True, False])
def test_bad_input_same_error_as_stock(make, type_check):
    check_error_same(make, type_check)


def test_bias_overflow_acts_as_stock(errstate_acts_as_stock):
    def fn():
        big = numpy.finfo(numpy.float32).max
        x = chainer.Variable(numpy.full((1, 1, 2, 2), big, numpy.float32))
        W = chainer.Variable(numpy.ones((1, 1, 1, 1), numpy.float32))
        b = chainer.Variable(numpy.full((1,), big, numpy.float32))
        return F.convolution_2d(x, W, b).array
    for mode in ('raise', 'call', 'warn'):
        errstate_acts_as_stock(fn, mode)



@pytest.mark.parametrize('name', ['tensordot', 'ascontiguousarray'])
def test_numpy_function_a_hook_installs_is_called_once(name):
    # A function hook may replace a NumPy function once the node's callees
    # were checked (a rebinding before is seen by the audit of NumPy's
    # namespace). The bias's add overflows, where the compiled forward
    # declines after the product; the weight gradient's output gradient is
    # a non-contiguous view with a dimension of 1, which stock makes
    # contiguous. The replacement is called as often as stock calls it.
    big = numpy.finfo(numpy.float32).max
    original = getattr(numpy, name)

    class Hook(chainer.FunctionHook):
        def __init__(self):
            self.calls = 0

        def replacement(self, *args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        def forward_preprocess(self, function, in_data):
            setattr(numpy, name, self.replacement)

        def forward_postprocess(self, function, in_data):
            setattr(numpy, name, original)

    def fn():
        x = chainer.Variable(numpy.full((2, 1, 2, 2), big, numpy.float32))
        W = chainer.Variable(numpy.ones((1, 1, 1, 1), numpy.float32))
        b = chainer.Variable(numpy.full((1,), big, numpy.float32))
        gy = numpy.ones((2, 1, 2, 4), numpy.float32)[..., ::2]
        assert not (gy.flags.c_contiguous or gy.flags.f_contiguous)
        hook = Hook()
        try:
            with hook, warnings.catch_warnings():
                warnings.simplefilter('ignore', RuntimeWarning)
                y = F.convolution_2d(x, W, b)
                gW, = chainer.grad([y], [W], [chainer.Variable(gy)])
        finally:
            setattr(numpy, name, original)
        return y.array, gW.array, hook.calls
    stock, _ = check_same(fn)
    assert stock[2] >= 1


# Geometry the compiled patches do not take: stock's slices and numpy.pad
# raise, or index as Python's slices do (a dilation below 1 is refused by
# the node's constructor).
BAD_GEOMETRY = [
    dict(pad=(0, -1)),
    dict(pad=-1),
    dict(stride=-1),
    dict(stride=(1, -2)),
    dict(stride=0),
    dict(pad=2 ** 40),
    dict(stride=2 ** 63),
    dict(stride=(numpy.int64(2), 1)),
    dict(pad=(1, numpy.int64(1))),
    dict(stride=True),
]


@pytest.mark.parametrize('kwargs', BAD_GEOMETRY)
@pytest.mark.parametrize('kernel', [2, 5])    # 5: larger than the image
@pytest.mark.parametrize('type_check', [True, False])
def test_bad_geometry_as_stock(kwargs, kernel, type_check):
    def fn():
        x, W, b = _v(2, 3, 4, 4), _v(2, 3, kernel, kernel), _v(2)
        node = convolution_2d.Convolution2DFunction(**kwargs)
        return applied_state(node, (x, W, b))
    with chainer.using_config('type_check', type_check):
        check_same(fn)


@pytest.mark.parametrize('kwargs', BAD_GEOMETRY)
def test_bad_geometry_grad_w_as_stock(kwargs):
    def fn():
        x, gy = _v(2, 3, 4, 4), _v(2, 2, 3, 3)
        conv2d = convolution_2d.Convolution2DFunction(**kwargs)
        node = convolution_2d.Convolution2DGradW(
            conv2d, (2, 3, 2, 2), numpy.float32, None)
        return applied_state(node, (x, gy))
    with chainer.using_config('type_check', False):
        check_same(fn)


@pytest.mark.parametrize('inputs', [
    lambda: (_v(2, 3, 4, 4), _v(2, 3, 3, 3), _v(3)),   # bias of 3 for 2
    lambda: (_v(2, 3, 4, 4), _v(2, 4, 3, 3)),           # channels differ
])
def test_forward_error_retains_as_stock(inputs):
    def fn():
        node = convolution_2d.Convolution2DFunction()
        return applied_state(node, inputs())
    with chainer.using_config('type_check', False):
        check_same(fn)


def test_backward_is_compiled(compiled_instead):
    compiled_instead(lambda: gradients(BACKWARD_CASES['conv'], numpy.float32),
                     convolution_2d.Convolution2DFunction.backward)


@pytest.mark.parametrize('owner,name', [
    (deconvolution_2d.Deconvolution2DFunction, '_forward_cpu_core'),
    (convolution_2d.Convolution2DGradW, '__init__'),
    (conv, 'col2im_cpu'),
    (F, 'deconvolution_2d'),
])
def test_mocked_callee_of_the_backward_is_called(owner, name,
                                                 mock_is_called):
    mock_is_called(owner, name,
                   lambda: gradients(BACKWARD_CASES['conv'], numpy.float32))


@pytest.mark.parametrize('layout', ['transposed', 'strided', 'channels_last'])
@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
def test_gradients_of_odd_layouts_same_as_stock(layout, dtype,
                                                odd_layout_gradients_same):
    odd_layout_gradients_same(BACKWARD_CASES['cover_all_dilate'], layout,
                              dtype)


@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
def test_gradients_of_non_finite_values_same_as_stock(dtype):
    def fn():
        x, W, b = (_v(2, 3, 4, 4, dtype=dtype), _v(2, 3, 3, 3, dtype=dtype),
                   _v(2, dtype=dtype))
        x.array[0, 1, 2] = numpy.nan
        W.array[1, 0, 0, 1] = numpy.inf
        y = F.convolution_2d(x, W, b, pad=1)
        gy = _v(*y.shape, dtype=dtype).array
        gy[1, 0, 1, 1] = -numpy.inf
        y.grad = gy
        with numpy.errstate(all='ignore'):
            y.backward()
        return grad_vars(x, W, b)
    check_same(fn)


# A node's geometry changed between its forward and its backward: the
# gradient nodes get it as stock's do, and their checks (type checks,
# constructors, the compiled forwards' geometry) give stock's errors.
BACKWARD_GEOMETRY = [
    dict(sy=-1), dict(sx=0), dict(ph=-1), dict(pw=2 ** 40), dict(dy=0),
    dict(dx=-2), dict(sy=2 ** 63), dict(sy=numpy.int64(1)), dict(ph=True),
    dict(groups=2), dict(groups=0), dict(cover_all=True), dict(sy=3),
]


@pytest.mark.parametrize('attributes', BACKWARD_GEOMETRY, ids=repr)
@pytest.mark.parametrize('type_check', [True, False])
def test_geometry_changed_before_the_backward_as_stock(
        attributes, type_check, changed_geometry_same):
    changed_geometry_same(lambda x, W, b: F.convolution_2d(x, W, b, pad=1),
                          attributes, type_check)
