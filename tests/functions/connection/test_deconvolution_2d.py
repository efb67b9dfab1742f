"""F.deconvolution_2d (``Deconvolution2DFunction``), stock vs patched."""
import subprocess
import sys

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.connection import convolution_2d
from chainer.functions.connection import deconvolution_2d
from chainer.utils import conv

import chainer_fastpath
from chainer_fastpath.testing import (
    FLOAT_DTYPES, applied, applied_state, bits, check_error_same, check_same,
    error_of, grad_vars, gradients, misaligned, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _deconv(**kwargs):
    return lambda *args: F.deconvolution_2d(*args, **kwargs)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'deconv': lambda: (_deconv(stride=2, pad=1),
                       [_v(2, 3, 4, 4), _v(3, 2, 4, 4), _v(2)]),
    'nobias': lambda: (_deconv(), [_v(2, 3, 4, 5), _v(3, 4, 3, 2)]),
    # Patches that overlap: several additions into one element.
    'overlapping': lambda: (_deconv(stride=1, pad=1),
                            [_v(2, 3, 4, 4), _v(3, 2, 3, 3), _v(2)]),
    'stride_over_kernel': lambda: (_deconv(stride=(3, 2)),
                                   [_v(1, 2, 3, 4), _v(2, 3, 2, 1)]),
    'dilate': lambda: (_deconv(stride=2, pad=2, dilate=(2, 3)),
                       [_v(2, 3, 4, 3), _v(3, 2, 3, 3)]),
    'outsize_cover_all': lambda: (_deconv(stride=2, outsize=(8, 7)),
                                  [_v(2, 3, 3, 3), _v(3, 2, 3, 3)]),
    'strided_input': lambda: (_deconv(stride=2),
                              [strided_variable(2, 3, 3, 3),
                               _v(3, 2, 2, 2)]),
    'empty_batch': lambda: (_deconv(stride=2), [_v(0, 3, 3, 3),
                                                _v(3, 2, 2, 2)]),
    'float64': lambda: (_deconv(stride=2, pad=1), [
        _v(2, 3, 4, 4, dtype=numpy.float64),
        _v(3, 2, 4, 4, dtype=numpy.float64),
        _v(2, dtype=numpy.float64)]),
    # Left to stock: float16, a cast after the product, grouped.
    'float16': lambda: (_deconv(stride=2), [
        _v(2, 3, 3, 3, dtype=numpy.float16),
        _v(3, 2, 2, 2, dtype=numpy.float16)]),
    'mixed_dtypes': lambda: (_deconv(), [_v(2, 3, 4, 4),
                                         _v(3, 2, 3, 3,
                                            dtype=numpy.float64)]),
    'groups': lambda: (_deconv(groups=3), [_v(2, 6, 4, 4), _v(6, 1, 3, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'deconv': lambda d: applied(_deconv(stride=2, pad=1),
                                _v(2, 3, 4, 4, dtype=d),
                                _v(3, 2, 4, 4, dtype=d), _v(2, dtype=d)),
    'overlapping': lambda d: applied(_deconv(pad=1), _v(2, 3, 4, 4, dtype=d),
                                     _v(3, 2, 3, 3, dtype=d)),
    'outsize_dilate': lambda d: applied(
        _deconv(stride=2, outsize=(8, 7), dilate=2),
        _v(2, 2, 3, 3, dtype=d), _v(2, 3, 2, 2, dtype=d), _v(3, dtype=d)),
    'stride_over_kernel': lambda d: applied(
        _deconv(stride=(3, 2)), _v(2, 2, 3, 4, dtype=d),
        _v(2, 3, 2, 1, dtype=d), _v(3, dtype=d)),
    'dilate': lambda d: applied(
        _deconv(stride=2, pad=2, dilate=(2, 3)), _v(2, 3, 4, 3, dtype=d),
        _v(3, 2, 3, 3, dtype=d)),
    'batch_of_one': lambda d: applied(
        _deconv(stride=2, pad=1), _v(1, 3, 4, 4, dtype=d),
        _v(3, 2, 4, 4, dtype=d), _v(2, dtype=d)),
    'strided_input': lambda d: applied(
        _deconv(stride=2), strided_variable(2, 3, 3, 3, dtype=d),
        _v(3, 2, 2, 2, dtype=d)),
    'empty_batch': lambda d: applied(
        _deconv(stride=2), _v(0, 3, 3, 3, dtype=d), _v(3, 2, 2, 2, dtype=d),
        _v(2, dtype=d)),
    # W's gradient alone, with x's: cover_all is set by x's.
    'W_const': lambda d: applied(
        _deconv(stride=2, outsize=(8, 7)), _v(2, 3, 3, 3, dtype=d),
        _v(3, 2, 3, 3, dtype=d, requires_grad=False), _v(2, dtype=d)),
    'b_only': lambda d: applied(
        _deconv(), _v(2, 3, 3, 3, dtype=d, requires_grad=False),
        _v(3, 2, 2, 2, dtype=d, requires_grad=False), _v(2, dtype=d)),
    'groups': lambda d: applied(
        _deconv(groups=3, stride=2), _v(2, 6, 3, 3, dtype=d),
        _v(6, 1, 3, 3, dtype=d), _v(3, dtype=d)),
    'mixed_dtypes': lambda d: applied(
        _deconv(), _v(2, 3, 4, 4, dtype=d),
        _v(3, 2, 3, 3, dtype=numpy.float64)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['deconv', 'overlapping']))


def test_output_is_stock_view_of_padded_image():
    x, W = _v(2, 3, 4, 4), _v(3, 2, 3, 3)

    def fn():
        y = F.deconvolution_2d(x, W, stride=2, pad=1).array
        return y.shape, y.strides, y.base.shape, y.flags.c_contiguous
    check_same(fn)


def test_forward_is_compiled(compiled_instead):
    x, W = _v(2, 3, 4, 4), _v(3, 2, 3, 3)
    compiled_instead(
        lambda: F.deconvolution_2d(x, W, stride=2),
        deconvolution_2d.Deconvolution2DFunction._forward_cpu_core)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('product', ['misaligned', 'nan'])
def test_tensordot_a_hook_installs_is_called_once(dtype, product,
                                                  patched_stats):
    # A function hook may replace numpy.tensordot once the node's callees
    # were checked. Its product may be one the compiled loop declines
    # (misaligned: the loop loads C floats; a NaN: which one an add keeps
    # is the stock loop's): the replacement is called once, as stock calls
    # it, by the node's own forward.
    x, W = _v(2, 3, 4, 4, dtype=dtype), _v(3, 2, 3, 3, dtype=dtype)
    original = numpy.tensordot

    class Hook(chainer.FunctionHook):
        def __init__(self):
            self.calls = []

        def replacement(self, a, b, axes):
            self.calls.append(axes)
            col = original(a, b, axes)
            if product == 'nan':
                col[0, 0, 0, 0, 0, 0] = numpy.nan
                return col
            col = misaligned(col)
            assert not col.flags.aligned
            return col

        def forward_preprocess(self, function, in_data):
            numpy.tensordot = self.replacement

        def forward_postprocess(self, function, in_data):
            numpy.tensordot = original

    def fn():
        hook = Hook()
        try:
            with hook:
                y = F.deconvolution_2d(x, W, stride=2, pad=1)
        finally:
            numpy.tensordot = original
        return y.array, hook.calls
    stock, _ = check_same(fn)
    assert len(stock[1]) == 1
    assert patched_stats(fn, 'FunctionNode.apply')['fallback'] == {}


def test_mocked_tensordot_is_called_once(mock_is_called):
    # The image holds a NaN, where the compiled loop declines.
    def fn():
        x = _v(2, 3, 4, 4)
        x.array[0, 0, 0, 0] = numpy.nan
        return F.deconvolution_2d(x, _v(3, 2, 3, 3), stride=2).array
    mock_is_called(numpy, 'tensordot', fn)


@pytest.mark.parametrize('name', ['col2im_cpu', 'get_deconv_outsize'])
def test_mocked_helper_is_called(name, mock_is_called):
    mock_is_called(conv, name, lambda: gradients(BACKWARD_CASES['deconv'],
                                                 numpy.float32))


def test_passed_type_check_is_cached(type_check_is_cached):
    x, W = _v(2, 3, 4, 4), _v(3, 2, 3, 3)
    type_check_is_cached(deconvolution_2d.Deconvolution2DFunction,
                         lambda: F.deconvolution_2d(x, W, stride=2))


@pytest.mark.parametrize('make', [
    # Type check: a 3-d input, channels that differ, an outsize the input
    # cannot give.
    lambda: F.deconvolution_2d(_v(3, 4, 4), _v(3, 2, 3, 3)),
    lambda: F.deconvolution_2d(_v(2, 4, 4, 4), _v(3, 2, 3, 3)),
    lambda: F.deconvolution_2d(_v(2, 3, 4, 4), _v(3, 2, 3, 3),
                               outsize=(20, 20)),
    lambda: F.deconvolution_2d(_v(2, 3, 4, 4), _v(3, 2, 3, 3),
                               outsize=(3, 3)),
    # An output of no height.
    lambda: F.deconvolution_2d(_v(2, 3, 1, 4), _v(3, 2, 1, 3), pad=(1, 0)),
    lambda: F.deconvolution_2d(_v(2, 3, 4, 4), _v(3, 2, 3, 3), dilate=0),
])
@pytest.mark.parametrize('type_check', [True, False])
def test_bad_input_same_error_as_stock(make, type_check):
    check_error_same(make, type_check)


@pytest.mark.parametrize('bias', [False, True])
def test_overflow_acts_as_stock(bias, errstate_acts_as_stock):
    def fn():
        big = numpy.finfo(numpy.float32).max
        x = chainer.Variable(numpy.full((1, 1, 2, 2), big, numpy.float32))
        W = chainer.Variable(numpy.ones((1, 1, 2, 2), numpy.float32))
        if not bias:    # overlapping patches: the image's sums overflow
            return F.deconvolution_2d(x, W).array
        b = chainer.Variable(numpy.full((1,), big, numpy.float32))
        return F.deconvolution_2d(x, W, b, stride=2).array
    for mode in ('raise', 'call', 'warn'):
        errstate_acts_as_stock(fn, mode)


def _nans(shape, dtype):
    # NaNs of both signs and several payloads among numbers.
    x = numpy.random.uniform(-1, 1, shape).astype(dtype)
    flat = x.reshape(-1).view('u{}'.format(x.itemsize))
    nan = int(numpy.array(numpy.nan, dtype).view(flat.dtype))
    sign = 1 << (8 * x.itemsize - 1)
    for i in range(0, flat.size, 3):
        flat[i] = (nan | i) ^ (sign if i % 2 else 0)
    return x


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_overlapping_nans_same_bits_as_stock(dtype):
    # Which of two NaNs an add keeps follows its operands' order: the
    # image's sums keep stock's NaNs.
    def fn():
        x = chainer.Variable(_nans((2, 2, 4, 3), dtype))
        W = chainer.Variable(_nans((2, 1, 3, 2), dtype))
        return F.deconvolution_2d(x, W).array
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('x_shape, w_shape, stride, pad', [
    # one input channel: the gradients' products have a dimension of 1
    ((1, 1, 4, 4), (1, 2, 3, 3), 2, 0),
    ((1, 1, 2, 3), (1, 2, 3, 3), 1, 1),
    ((1, 1, 3, 3), (1, 2, 2, 2), 1, 0),
    ((1, 1, 4, 2), (1, 1, 3, 3), 2, 1),
    ((1, 1, 3, 1), (1, 1, 3, 1), 2, 0),
    ((2, 2, 3, 3), (2, 2, 2, 2), 1, 0),
])
def test_gradients_same_bits_as_stock(dtype, x_shape, w_shape, stride, pad):
    rng = numpy.random.RandomState(0)
    x = rng.randn(*x_shape).astype(dtype)
    W = rng.randn(*w_shape).astype(dtype)

    def grads():
        xv, wv = chainer.Variable(x), chainer.Variable(W)
        y = F.deconvolution_2d(xv, wv, stride=stride, pad=pad)
        return [g.array for g in chainer.grad([F.sum(y * y)], [xv, wv])]

    stock = grads()
    with chainer_fastpath.enabled():
        patched = grads()
    assert [bits(g) for g in patched] == [bits(g) for g in stock]


# Geometry the compiled image sums do not take, with an outsize that the
# type check passes where it runs: stock's slices raise, or index as
# Python's slices do. A write outside the image would crash, so the cases
# run in a child process.
BAD_GEOMETRY = [
    dict(stride=-1, outsize=(3, 3)),
    dict(stride=-1, outsize=(2, 2)),
    dict(stride=(1, -1), outsize=(6, 3)),
    dict(stride=-2, outsize=(1, 1)),
    dict(stride=0, outsize=(6, 6)),
    dict(stride=(2, 0), outsize=(9, 6)),
    dict(pad=(0, -1)),
    dict(pad=-2),
    dict(outsize=(-3, 6)),
    dict(outsize=(6, 2 ** 40)),
    dict(stride=2 ** 62),
    dict(stride=(numpy.int64(2), 1)),
    dict(pad=(1, numpy.int64(1))),
    dict(outsize=(numpy.int64(6), 6)),
]

_CHILD = '''
import sys
import subprocess
import sys

import numpy
import chainer
from chainer.functions.connection import deconvolution_2d
from chainer_fastpath.testing import applied_state, check_same, variable

kwargs = eval(sys.argv[1], {'numpy': numpy})
def fn():
    x, W, b = variable(2, 3, 4, 4), variable(3, 2, 3, 3), variable(2)
    node = deconvolution_2d.Deconvolution2DFunction(**kwargs)
    return applied_state(node, (x, W, b))
for type_check in (True, False):
    with chainer.using_config('type_check', type_check):
        check_same(fn)
'''


@pytest.mark.parametrize('kwargs', BAD_GEOMETRY, ids=repr)
def test_bad_geometry_as_stock(kwargs):
    child = subprocess.run([sys.executable, '-c', _CHILD, repr(kwargs)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
    assert child.returncode == 0, child.stdout[-3000:]


@pytest.mark.parametrize('inputs', [
    lambda: (_v(2, 3, 4, 4), _v(3, 2, 3, 3), _v(3)),   # bias of 3 for 2
    lambda: (_v(2, 3, 1, 4), _v(3, 2, 1, 3)),           # no height
])
def test_forward_error_retains_as_stock(inputs):
    def fn():
        pad = 0 if inputs()[0].shape[2] > 1 else (1, 0)
        node = deconvolution_2d.Deconvolution2DFunction(pad=pad)
        return applied_state(node, inputs())
    with chainer.using_config('type_check', False):
        check_same(fn)


def test_backward_is_compiled(compiled_instead):
    compiled_instead(
        lambda: gradients(BACKWARD_CASES['deconv'], numpy.float32),
        deconvolution_2d.Deconvolution2DFunction.backward)


@pytest.mark.parametrize('owner,name', [
    (convolution_2d.Convolution2DFunction, '_forward_cpu_core'),
    (convolution_2d.Convolution2DGradW, '__init__'),
    (deconvolution_2d.Deconvolution2DFunction, '_set_cover_all'),
    (conv, 'im2col_cpu'),
    (conv, 'get_conv_outsize'),
    (F, 'convolution_2d'),
])
def test_mocked_callee_of_the_backward_is_called(owner, name,
                                                 mock_is_called):
    mock_is_called(owner, name,
                   lambda: gradients(BACKWARD_CASES['deconv'], numpy.float32))


@pytest.mark.parametrize('case', ['deconv', 'outsize_dilate', 'W_const'])
def test_cover_all_set_as_stock(case):
    # The backward sets the node's cover_all, as stock's does.
    def fn():
        inputs, y = BACKWARD_CASES[case](numpy.float32)
        node = y.creator
        before = node.cover_all
        y.grad = _v(*y.shape).array
        y.backward(retain_grad=True)
        return before, node.cover_all, grad_vars(*inputs)
    check_same(fn)


@pytest.mark.parametrize('x_shape,w_shape', [
    ((2, 3, 4, 4), (3, 2, 3, 3)),
    # Stock unpacks x and W (Variables) as their shapes.
    ((4, 4, 4, 4), (4, 2, 3, 3)),
])
def test_weight_gradient_alone_as_stock(x_shape, w_shape):
    # x requires no gradient: stock's backward hands _set_cover_all the
    # retained Variables.
    def fn():
        x = _v(*x_shape, requires_grad=False)
        W, b = _v(*w_shape), _v(w_shape[1])
        y = F.deconvolution_2d(x, W, b, stride=2)
        y.grad = _v(*y.shape).array
        return error_of(y.backward), y.creator.cover_all, grad_vars(W, b)
    check_same(fn)


@pytest.mark.parametrize('layout', ['transposed', 'strided', 'channels_last'])
@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
def test_gradients_of_odd_layouts_same_as_stock(layout, dtype,
                                                odd_layout_gradients_same):
    odd_layout_gradients_same(BACKWARD_CASES['outsize_dilate'], layout,
                              dtype)


# A node's geometry changed between its forward and its backward: the
# gradient nodes get it as stock's do, and their checks give stock's
# errors.
BACKWARD_GEOMETRY = [
    dict(sy=-1), dict(sx=0), dict(ph=-1), dict(pw=2 ** 40), dict(dy=0),
    dict(dx=-2), dict(sy=2 ** 63), dict(sy=numpy.int64(2)), dict(ph=True),
    dict(groups=2), dict(groups=0), dict(outh=3), dict(outw=2 ** 40),
    dict(outh=-1), dict(cover_all=True), dict(sy=1),
]


@pytest.mark.parametrize('attributes', BACKWARD_GEOMETRY, ids=repr)
@pytest.mark.parametrize('type_check', [True, False])
def test_geometry_changed_before_the_backward_as_stock(
        attributes, type_check, changed_geometry_same):
    changed_geometry_same(
        lambda x, W, b: F.deconvolution_2d(x, W, b, stride=2, pad=1),
        attributes, type_check)
