"""F.batch_normalization and F.fixed_batch_normalization
(``BatchNormalization``, ``FixedBatchNormalization`` and their gradient
nodes), stock vs patched: outputs, gradients and the running averages
updated in place, bit for bit."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L
from chainer.functions.normalization import batch_normalization as bn

from chainer_fastpath.testing import (
    applied, applied_state, check_error_same, check_same, misaligned,
    strided_variable, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests
from chainer_fastpath.functions.normalization.batch_normalization import (
    kernel_blocks)

_f16, _f32, _f64 = numpy.float16, numpy.float32, numpy.float64


def _stats(c, dtype=_f32):
    """Running averages of ``c`` channels: a mean and a positive
    variance."""
    return (numpy.random.uniform(-1, 1, c).astype(dtype),
            numpy.random.uniform(0.5, 2, c).astype(dtype))


def _bn(**kwargs):
    return lambda x, g, b: F.batch_normalization(x, g, b, **kwargs)


def _running(dtype=_f32, **kwargs):
    # The outputs, and the running averages as the forward left them (in
    # the output's dtype, for the loss to sum them; bit for bit in
    # test_running_averages_updated_as_stock).
    def fn(x, g, b):
        mean, var = _stats(g.shape[0], dtype)
        y = F.batch_normalization(x, g, b, running_mean=mean,
                                  running_var=var, **kwargs)
        return y, chainer.Variable(mean.astype(y.dtype)), chainer.Variable(
            var.astype(y.dtype))
    return fn


def _fixed(axis=None):
    def fn(x, g, b):
        mean, var = _stats(g.shape[0], g.dtype)
        if axis is None:
            return F.fixed_batch_normalization(x, g, b, mean, var)
        return F.fixed_batch_normalization(x, g, b, mean, var, axis=axis)
    return fn


def _quietly(fn):
    # Under errstate 'ignore': the compiled forward runs on the infinities
    # (the output is cut from the graph: the loss's backward runs outside).
    def run(*args):
        with numpy.errstate(all='ignore'):
            return chainer.Variable(fn(*args).array)
    return run


def _fixed_variables(x, g, b, mean, var):
    return F.fixed_batch_normalization(x, g, b, mean, var)


def _params(c, dtype=_f32):
    return [_v(c, dtype=dtype), _v(c, dtype=dtype)]


def _with(x, *values):
    x.array.flat[:len(values)] = values
    return x


def _transposed(*shape):
    return chainer.Variable(_v(*shape).array.T)


def _laid_out(layout, *shape, dtype=_f32):
    """An array of ``shape`` in memory as ``layout`` says: 'c'
    (C-contiguous), 'last' (channels last, as a convolution's output),
    'reversed' (a transpose), 'padded' (the inner window of a
    C-contiguous array, as a convolution's input gradient) or 'misaligned'
    (C-contiguous at an odd address)."""
    if layout == 'misaligned':
        return misaligned(_laid_out('c', *shape, dtype=dtype))
    if layout == 'reversed':
        a = numpy.random.uniform(-1, 1, shape[::-1])
        return a.astype(dtype).T
    if layout == 'last':
        order = (0,) + tuple(range(2, len(shape))) + (1,)
        a = numpy.random.uniform(-1, 1, [shape[k] for k in order])
        return a.astype(dtype).transpose(numpy.argsort(order))
    if layout == 'padded':
        a = numpy.random.uniform(
            -1, 1, shape[:2] + tuple(n + 2 for n in shape[2:]))
        return a.astype(dtype)[(slice(None),) * 2
                               + (slice(1, -1),) * (len(shape) - 2)]
    return numpy.random.uniform(-1, 1, shape).astype(dtype)


def _link(train):
    def fn(x):
        link = L.BatchNormalization(x.shape[1], dtype=x.dtype)
        link.avg_mean[:], link.avg_var[:] = _stats(x.shape[1], x.dtype)
        with chainer.using_config('train', train):
            y = link(x)
        return (y, chainer.Variable(link.avg_mean),
                chainer.Variable(link.avg_var))
    return fn


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'bn_2d': lambda: (_bn(), [_v(5, 3)] + _params(3)),
    'bn_4d': lambda: (_bn(), [_v(4, 3, 2, 5)] + _params(3)),
    'bn_3d': lambda: (_bn(), [_v(3, 4, 6)] + _params(4)),
    'bn_axis_int': lambda: (_bn(axis=0), [_v(6, 2)] + _params(2)),
    'bn_axis_tuple': lambda: (_bn(axis=(0, 2, 3)),
                              [_v(3, 2, 4, 5)] + _params(2)),
    'bn_axis_last_kept': lambda: (_bn(axis=(0, 1)),
                                  [_v(3, 4, 2)] + _params(2)),
    'bn_gamma_2d': lambda: (_bn(), [_v(3, 4, 2, 2),
                                    _v(4, 2), _v(4, 2)]),
    'bn_eps_decay': lambda: (_running(eps=1e-3, decay=0.5),
                             [_v(7, 3)] + _params(3)),
    'bn_float16': lambda: (_bn(), [_v(6, 3, dtype=_f16)] + _params(3, _f16)),
    'bn_float64': lambda: (_bn(), [_v(6, 3, 2, dtype=_f64)]
                           + _params(3, _f64)),
    'bn_x16_gamma32': lambda: (_bn(), [_v(5, 3, dtype=_f16)] + _params(3)),
    'bn_x32_gamma64': lambda: (_running(),
                               [_v(5, 3)] + _params(3, _f64)),
    'bn_x64_gamma16': lambda: (_bn(), [_v(5, 3, dtype=_f64)]
                               + _params(3, _f16)),
    'bn_strided': lambda: (_bn(), [strided_variable(5, 3)] + _params(3)),
    'bn_transposed': lambda: (_bn(), [_transposed(3, 6)] + _params(3)),
    'bn_nan': lambda: (_bn(), [_with(_v(5, 3), numpy.nan)] + _params(3)),
    'bn_inf': lambda: (_quietly(_bn()), [_with(_v(5, 3), numpy.inf)]
                       + _params(3)),
    'bn_large': lambda: (_quietly(_bn()), [
        _v(5, 3, low=6e4, high=6.5e4, dtype=_f16)] + _params(3, _f16)),
    'bn_running': lambda: (_running(), [_v(5, 3, 4)] + _params(3)),
    'bn_running_float16': lambda: (_running(_f16),
                                   [_v(5, 3, dtype=_f16)]
                                   + _params(3, _f16)),
    'bn_running_mixed': lambda: (_running(_f64),
                                 [_v(5, 3, dtype=_f16)] + _params(3)),
    'fixed_2d': lambda: (_fixed(), [_v(5, 3)] + _params(3)),
    'fixed_4d': lambda: (_fixed(), [_v(2, 3, 4, 2)] + _params(3)),
    'fixed_axis': lambda: (_fixed(axis=(0, 1)), [_v(2, 4, 3)] + _params(3)),
    'fixed_float16': lambda: (_fixed(), [_v(4, 3, dtype=_f16)]
                              + _params(3, _f16)),
    'fixed_float64': lambda: (_fixed(), [_v(4, 3, dtype=_f64)]
                              + _params(3, _f64)),
    'fixed_x16_gamma32': lambda: (_fixed(), [_v(4, 3, dtype=_f16)]
                                  + _params(3)),
    'fixed_strided': lambda: (_fixed(), [strided_variable(4, 3)]
                              + _params(3)),
    'fixed_one_sample': lambda: (_fixed(), [_v(1, 3)] + _params(3)),
    'fixed_channels_last': lambda: (_fixed(), [
        chainer.Variable(_laid_out('last', 4, 3, 5, 2))] + _params(3)),
    'fixed_one_channel': lambda: (_fixed(), [_v(3, 1, 4, 4)] + _params(1)),
    'fixed_specials': lambda: (_quietly(_fixed()), [
        _with(_v(4, 3, 2, 2), numpy.nan, numpy.inf, -0.0)] + _params(3)),
    'fixed_empty': lambda: (_fixed(), [_v(0, 3)] + _params(3)),
    'fixed_nan': lambda: (_quietly(_fixed()), [
        _with(_v(4, 3), numpy.nan, -numpy.inf)] + _params(3)),
    'fixed_variables': lambda: (_fixed_variables, [_v(4, 3)] + _params(3) + [
        _v(3), _v(3, low=0.5, high=2)]),
    'bn_channels_last': lambda: (_bn(), [
        chainer.Variable(_laid_out('last', 4, 3, 5, 2))] + _params(3)),
    'bn_long_rows': lambda: (_bn(), [_v(2, 3, 1, 300)] + _params(3)),
    'bn_specials': lambda: (_quietly(_bn()), [
        _with(_v(4, 3, 2, 2), numpy.nan, numpy.inf, -0.0)] + _params(3)),
    'link_train': lambda: (_link(True), [_v(6, 3, 2, 2)]),
    'link_test': lambda: (_link(False), [_v(6, 3, 2, 2)]),
    'link_train_float16': lambda: (_link(True), [_v(5, 4, dtype=_f16)]),
}


def _grad_case(fn, *shape, params=None, gamma_dtype=None):
    def build(dtype):
        c = params or shape[1]
        g = gamma_dtype or dtype
        return applied(fn, _v(*shape, dtype=dtype), _v(c, dtype=g),
                       _v(c, dtype=g))
    return build


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'bn_2d': _grad_case(_bn(), 6, 3),
    'bn_4d': _grad_case(_bn(), 3, 2, 4, 3),
    'bn_axis': _grad_case(_bn(axis=(0, 1)), 3, 4, 2, params=2),
    'bn_mixed': _grad_case(_bn(), 5, 3, gamma_dtype=_f32),
    'bn_running': _grad_case(lambda x, g, b: _running()(x, g, b)[0], 5, 3),
    'bn_long_rows': _grad_case(_bn(), 2, 3, 1, 200),
    'bn_channels_last': lambda d: applied(
        _bn(), chainer.Variable(_laid_out('last', 3, 4, 3, 5, dtype=d)),
        _v(4, dtype=d), _v(4, dtype=d)),
    'fixed_2d': _grad_case(_fixed(), 6, 3),
    'fixed_4d': _grad_case(_fixed(), 2, 3, 2, 2),
    'fixed_mixed': _grad_case(_fixed(), 5, 3, gamma_dtype=_f64),
    'fixed_variables': lambda d: applied(
        _fixed_variables, _v(5, 3, dtype=d), _v(3, dtype=d), _v(3, dtype=d),
        _v(3, dtype=d), _v(3, dtype=d, low=0.5, high=2)),
}


def _first():
    F.batch_normalization(_v(4, 3), *_params(3))


def _bad_gamma():
    F.batch_normalization(_v(4, 3), *_params(4))


def _first_fixed():
    F.fixed_batch_normalization(_v(4, 3), *(_params(3) + list(_stats(3))))


def _bad_var():
    mean, var = _stats(3)
    F.fixed_batch_normalization(_v(4, 3), *_params(3), mean, var[:2])


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    # Mixed dtypes: the first gradients' squares do not add up.
    second_order=[c for c in sorted(BACKWARD_CASES) if 'mixed' not in c],
    type_check_sequences={'bn': (_first, _bad_gamma),
                          'fixed': (_first_fixed, _bad_var)},
    compiled_forward=dict(
        dict.fromkeys(['bn_2d', 'bn_4d', 'bn_axis_tuple', 'bn_float16',
                       'bn_x16_gamma32', 'bn_running', 'bn_running_mixed',
                       'bn_channels_last', 'bn_long_rows', 'link_train'],
                      bn.BatchNormalization.forward),
        **dict.fromkeys(['fixed_2d', 'fixed_4d', 'fixed_float16',
                         'fixed_x16_gamma32', 'fixed_channels_last',
                         'fixed_one_channel', 'link_test'],
                        bn.FixedBatchNormalization.forward))))


# -- the running averages ----------------------------------------------------

@pytest.mark.parametrize('x_dtype, stats_dtype', [
    (_f32, _f32), (_f16, _f16), (_f64, _f64), (_f32, _f16), (_f16, _f64)])
@pytest.mark.parametrize('decay', [0.9, 0.0, 1.0, 0.999])
def test_running_averages_updated_as_stock(x_dtype, stats_dtype, decay):
    def fn():
        x = _v(4, 3, 2, dtype=x_dtype)
        mean, var = _stats(3, stats_dtype)
        ids = id(mean), id(var)
        for _ in range(3):
            F.batch_normalization(x, *_params(3), running_mean=mean,
                                  running_var=var, decay=decay)
        return mean, var, (id(mean), id(var)) == ids
    check_same(fn)


def test_strided_running_averages():
    def fn():
        mean = numpy.zeros(6, _f32)[::2]
        var = numpy.ones((3, 2), _f32)[:, 0]
        F.batch_normalization(_v(5, 3), *_params(3), running_mean=mean,
                              running_var=var)
        return mean.base, var.base
    check_same(fn)


def test_running_mean_and_var_one_array():
    # Updated one after the other in place: left to stock, same result.
    def fn():
        both = _stats(3)[1]
        y = F.batch_normalization(_v(5, 3), *_params(3), running_mean=both,
                                  running_var=both)
        return y.array, both
    check_same(fn)


def test_read_only_running_average_is_stocks_error():
    def fn():
        mean, var = _stats(3)
        var.flags.writeable = False
        F.batch_normalization(_v(5, 3), *_params(3), running_mean=mean,
                              running_var=var)
    assert check_error_same(fn) is not None


def test_errors_leave_running_averages_as_stock():
    # An overflow NumPy raises on: stock's partial update, if any.
    def fn():
        mean, var = _stats(3, _f16)
        x = _v(5, 3, dtype=_f16, low=-6e4, high=6e4)
        with numpy.errstate(all='raise'):
            try:
                F.batch_normalization(x, *_params(3, _f16),
                                      running_mean=mean, running_var=var)
            except FloatingPointError as e:
                return str(e), mean, var
        return None, mean, var
    stock, _ = check_same(fn)
    assert stock[0] is not None


# -- the kernels' passes over x and gy --------------------------------------

# Shapes about NumPy's reduction order: rows of every pairwise-sum branch,
# a row as long as NumPy's buffer and one longer (NumPy's calls then), one
# channel (NumPy's), one sample, unit axes.
KERNEL_SHAPES = [(4, 3, 5, 6), (2, 3, 1, 300), (3, 2, 1, 8192),
                 (2, 2, 1, 8193), (3, 1, 4, 4), (1, 3, 5, 5), (6, 4),
                 (5, 3, 1, 1), (3, 4, 7), (2, 5, 3, 129)]


def _train_step(shape, dtype, x_layout, gy_layout):
    # Forward with running averages, backward, and the layouts stock's
    # outputs have.
    def fn():
        x = chainer.Variable(_laid_out(x_layout, *shape, dtype=dtype))
        g, b = _params(shape[1], dtype)
        mean, var = _stats(shape[1], dtype)
        y = F.batch_normalization(x, g, b, running_mean=mean,
                                  running_var=var)
        y.grad = _laid_out(gy_layout, *shape, dtype=dtype)
        y.backward()
        return (y.array, y.array.strides, x.grad, x.grad.strides, g.grad,
                b.grad, mean, var)
    return fn


@pytest.mark.parametrize('dtype', [_f32, _f64])
@pytest.mark.parametrize('shape', KERNEL_SHAPES, ids=str)
@pytest.mark.parametrize('x_layout, gy_layout', [
    ('c', 'c'), ('last', 'last'), ('last', 'c'), ('padded', 'c'),
    ('reversed', 'c'), ('c', 'last'), ('last', 'padded'),
    ('padded', 'padded'), ('misaligned', 'c'), ('c', 'misaligned')])
def test_kernel_passes_same_as_stock(shape, dtype, x_layout, gy_layout):
    check_same(_train_step(shape, dtype, x_layout, gy_layout))


@pytest.mark.parametrize('bufsize', [16, 8192, 16384])
@pytest.mark.parametrize('shape', [(2, 3, 1, 300), (2, 2, 1, 9000)],
                         ids=str)
def test_kernel_follows_numpys_buffer_size(shape, bufsize):
    def fn():
        old = numpy.setbufsize(bufsize)
        try:
            return _train_step(shape, _f32, 'c', 'c')()
        finally:
            numpy.setbufsize(old)
    check_same(fn)


@pytest.mark.parametrize('shape, layout, blocks', [
    ((4, 3, 5, 6), 'c', (4, 3, 30)),
    ((4, 3, 5, 6), 'last', (120, 3, 1)),
    ((6, 4), 'c', (6, 4, 1)),
    ((3, 2, 1, 8192), 'c', (3, 2, 8192)),
    ((2, 2, 1, 8193), 'c', None),       # a row longer than the buffer
    ((2, 2, 3, 3000), 'last', (18000, 2, 1)),
    ((3, 1, 4, 4), 'c', None),          # one channel
    ((4, 3, 5, 6), 'padded', None),
    ((4, 3, 1, 6), 'last', None),       # unit axis: outputs' strides
])
def test_kernels_take_the_layouts_they_reproduce(shape, layout, blocks):
    # The differential tests pass either way; this says which way.
    x = _laid_out(layout, *shape)
    axis = (0,) + tuple(range(2, len(shape)))
    assert kernel_blocks(x, axis) == blocks


def test_kernels_follow_a_smaller_buffer():
    x = _laid_out('c', 2, 3, 1, 300)
    old = numpy.setbufsize(16)
    try:
        assert kernel_blocks(x, (0, 2, 3)) is None
    finally:
        numpy.setbufsize(old)
    assert kernel_blocks(x, (0, 2, 3)) == (2, 3, 300)


@pytest.mark.parametrize('mode', ['ignore', 'warn', 'raise'])
@pytest.mark.parametrize('layout', ['c', 'last'])
@pytest.mark.parametrize('where', ['x', 'gy'])
def test_kernel_special_values_as_stock(where, layout, mode):
    def fn():
        x = chainer.Variable(_laid_out(layout, 4, 3, 5, 5))
        gy = _laid_out(layout, 4, 3, 5, 5)
        (x.array if where == 'x' else gy).ravel(order='K')[
            [0, 7, 20, 33, 41]] = [numpy.nan, numpy.inf, -numpy.inf, -0.0,
                                   1e-45]
        g, b = _params(3)

        def step():
            y = F.batch_normalization(x, g, b)
            y.grad = gy
            y.backward()
            return y.array, x.grad, g.grad, b.grad
        with numpy.errstate(all=mode):
            return warned(step)
    check_same(fn)


_NANS = (numpy.nan, -numpy.nan, numpy.inf, -numpy.inf)


@pytest.mark.parametrize('dtype', [_f32, _f64])
@pytest.mark.parametrize('layout', ['c', 'last'])
@pytest.mark.parametrize('where', ['x', 'gy', 'gamma', 'beta', 'x_inf'])
def test_kernel_nans_of_both_signs_as_stock(where, layout, dtype):
    # Of two NaNs an operation meets, NumPy's loops keep the one of their
    # own choosing: x's NaN beside its channel's NaN statistics, gy's
    # beside x_hat's, a NaN parameter beside a NaN element.
    def fn():
        x = _laid_out(layout, 3, 2, 4, 5, dtype=dtype)
        gy = _laid_out(layout, 3, 2, 4, 5, dtype=dtype)
        g, b = (v.array for v in _params(2, dtype))
        flat = {'x': x, 'gy': gy}.get(where, x).ravel(order='K')
        if where in ('x', 'gy'):
            flat[[1, 5, 22, 40, 63, 77]] = _NANS[:2] * 3
        elif where == 'x_inf':
            flat[[1, 2, 3, 41]] = _NANS[2:] + (numpy.inf, -numpy.inf)
        else:
            {'gamma': g, 'beta': b}[where][0] = -numpy.nan
            flat[[3, 44]] = _NANS[:2]
        x = chainer.Variable(x)
        mean, var = _stats(2, dtype)
        with numpy.errstate(all='ignore'):
            y = F.batch_normalization(x, chainer.Variable(g),
                                      chainer.Variable(b))
            y.grad = gy
            y.backward()
            fixed = F.fixed_batch_normalization(x, g, b, mean, var)
        return y.array, x.grad, fixed.array
    check_same(fn)


# -- warnings, errors, floating-point exceptions ----------------------------

@pytest.mark.parametrize('shape, axis, c', [
    ((1, 3), None, (3,)), ((1, 1, 3), (0, 1), (3,)), ((4, 1, 3), (1,), (4, 3)),
    ((0, 3), None, (3,))])
def test_one_sample_warning_is_stocks(shape, axis, c):
    def fn():
        return warned(lambda: F.batch_normalization(
            _v(*shape), _v(*c), _v(*c), axis=axis).array)
    stock, _ = check_same(fn)
    assert stock[1]


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('case', [
    lambda: F.batch_normalization(_v(4, 3), *_params(2)),
    lambda: F.batch_normalization(_v(4, 3), _v(3), _v(2)),
    lambda: F.batch_normalization(_v(4, 3), _v(3), _v(3, dtype=_f64)),
    lambda: F.batch_normalization(_v(4, 3), *_params(3), axis=(1, 0)),
    lambda: F.batch_normalization(_v(4, 3), *_params(3), axis=2),
    lambda: F.batch_normalization(_v(4, 3), *_params(3), axis=(0, 1)),
    lambda: F.batch_normalization(_v(4, 3), *_params(3), axis='0'),
    lambda: F.batch_normalization(_v(4, 3), *_params(3), axis=[0]),
    lambda: F.batch_normalization(_v(4, 3), *_params(3), axis=-2),
    lambda: F.batch_normalization(_v(3), _v(), _v()),
    lambda: F.batch_normalization(_v(4, 3), *_params(3),
                                  running_mean=_stats(2)[0],
                                  running_var=_stats(2)[1]),
    lambda: F.batch_normalization(_v(4, 3), *_params(3),
                                  running_mean=_stats(3)[0]),
    lambda: F.fixed_batch_normalization(_v(4, 3), *_params(3),
                                        *_stats(2)),
    lambda: F.fixed_batch_normalization(_v(4, 3), *_params(2), *_stats(2)),
    lambda: F.fixed_batch_normalization(_v(4, 3), *_params(3), *_stats(3),
                                        axis=(0, 1)),
    lambda: F.fixed_batch_normalization(_v(4, 3), *_params(3), *_stats(3),
                                        axis=5),
    lambda: F.fixed_batch_normalization(
        _v(4, 3), *_params(3), *_stats(3, _f64)),
], ids=lambda _: '')
def test_bad_input_is_stocks_error(case, type_check):
    check_error_same(case, type_check)


@pytest.mark.parametrize('mode', ['raise', 'call', 'warn'])
@pytest.mark.parametrize('case', [
    lambda: F.batch_normalization(_with(_v(4, 3), numpy.inf), *_params(3)),
    lambda: F.batch_normalization(_v(4, 3, dtype=_f16, low=6e4, high=6.5e4),
                                  *_params(3, _f16)),
    lambda: F.fixed_batch_normalization(
        _with(_v(4, 3), numpy.inf), _with(_v(3), 0.0), _v(3), *_stats(3)),
    lambda: F.fixed_batch_normalization(
        _v(4, 3), *_params(3), numpy.zeros(3, _f32), numpy.zeros(3, _f32),
        eps=0.0),
], ids=['bn_inf', 'bn_overflow', 'fixed_inf', 'fixed_zero_var'])
def test_errstate_acts_as_stock(case, mode, errstate_acts_as_stock):
    errstate_acts_as_stock(case, mode)


@pytest.mark.parametrize('mode', ['raise', 'warn'])
@pytest.mark.parametrize('fn', [_bn(), _fixed()], ids=['bn', 'fixed'])
def test_errstate_in_backward_acts_as_stock(fn, mode, errstate_acts_as_stock):
    def run():
        x, g, b = _v(4, 3), *_params(3)
        y = fn(x, g, b)
        y.grad = numpy.full(y.shape, numpy.inf, _f32)
        y.backward()
        return x.grad, g.grad, b.grad
    errstate_acts_as_stock(run, mode)


# -- what stock's code calls ------------------------------------------------

@pytest.mark.parametrize('owner, name', [
    (bn.GeneralBatchNormalizationImpl, 'forward'),
    (bn.GeneralBatchNormalizationImpl, 'get_mean_and_var'),
    (bn.GeneralBatchNormalizationImpl, 'backward'),
    (bn.GeneralBatchNormalizationImpl, 'get_ggamma_and_gbeta'),
    (bn._BNMode, 'can_use_ideep'),
    (bn, '_x_hat'),
    (bn.BatchNormalizationGrad, 'forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    def fn():
        x, g, b = _v(5, 3), *_params(3)
        y = F.batch_normalization(x, g, b)
        y.grad = numpy.ones(y.shape, _f32)
        y.backward()
    mock_is_called(owner, name, fn)


@pytest.mark.parametrize('owner, name', [
    (bn._BNMode, '__init__'),
    (bn, '_apply_bn_fwd'),
    (bn.FixedBatchNormalizationGrad, 'forward'),
])
def test_mocked_fixed_callee_is_called(owner, name, mock_is_called):
    def fn():
        x, g, b = _v(5, 3), *_params(3)
        y = F.fixed_batch_normalization(x, g, b, *_stats(3))
        y.grad = numpy.ones(y.shape, _f32)
        y.backward()
    mock_is_called(owner, name, fn)


def test_replaced_impl_class_is_used():
    class Impl(bn.GeneralBatchNormalizationImpl):
        calls = []

        def forward(self, *args, **kwargs):
            self.calls.append(1)
            return super().forward(*args, **kwargs)

    def fn():
        del Impl.calls[:]
        with mock.patch.object(bn, 'GeneralBatchNormalizationImpl', Impl):
            y = F.batch_normalization(_v(5, 3), *_params(3))
        return y.array, len(Impl.calls)
    stock, _ = check_same(fn)
    assert stock[1] == 1


def test_own_impl_selector_is_used():
    calls = []

    def selector(node, inputs):
        calls.append(1)
        return bn._impl_selector(node, inputs)

    def fn():
        del calls[:]
        node = bn.BatchNormalization(impl_selector=selector)
        y, = node.apply((_v(5, 3), *_params(3)))
        return y.array, len(calls)
    stock, _ = check_same(fn)
    assert stock[1] == 1


def test_node_state_is_stocks():
    def fn():
        node = bn.BatchNormalization(mean=_stats(3)[0], var=_stats(3)[1])
        node.apply((_v(4, 3, 2), *_params(3)))
        fixed = bn.FixedBatchNormalization()
        fixed.apply((_v(4, 3), *_params(3), *_stats(3)))
        return [(n.axis, n.key_axis, n.expander, n._input_indexes_to_retain,
                 n._output_layouts) for n in (node, fixed)] + [
            type(node._impl), node.mean, node.var, node.inv_std,
            node.forward_data, node.running_mean, node.running_var,
            fixed.inv_std, fixed.inv_var]
    check_same(fn)


def test_grad_node_state_is_stocks():
    def fn():
        x, g, b = _v(4, 3), *_params(3)
        y = F.batch_normalization(x, g, b)
        gx, = chainer.grad([y], [x], [_v(4, 3)], enable_double_backprop=True)
        grad = gx.creator
        fy = F.fixed_batch_normalization(x, g, b, *_stats(3))
        fgx, = chainer.grad([fy], [x], [_v(4, 3)],
                            enable_double_backprop=True)
        fgrad = fgx.creator
        return [grad._input_indexes_to_retain, grad._output_indexes_to_retain,
                grad._output_layouts, fgrad._input_indexes_to_retain,
                fgrad._output_indexes_to_retain, fgrad.inv_std, fgrad.inv_var,
                fgrad.gamma_over_std, type(grad).__name__,
                type(fgrad).__name__]
    check_same(fn)


# -- gradient nodes applied directly ----------------------------------------

def _bn_grad_node(axis=(0,), expander=(None, slice(None)), mean_dtype=_f32):
    mean, var = _stats(3, mean_dtype)
    return bn.BatchNormalizationGrad(
        2e-5, expander, axis, mean, None, 1 / numpy.sqrt(var), (1,),
        bn.GeneralBatchNormalizationImpl(), None)


@pytest.mark.parametrize('make', [
    lambda: _bn_grad_node(),
    lambda: _bn_grad_node(mean_dtype=_f64),     # stock's assertion
    lambda: _bn_grad_node(axis=(1,)),
    lambda: _bn_grad_node(expander=(slice(None), None)),
    lambda: _bn_grad_node(axis=None),
    lambda: _bn_grad_node(axis=[0]),
], ids=['stock', 'mean_float64', 'axis', 'expander', 'axis_none',
        'axis_list'])
def test_grad_node_applied_directly(make):
    def fn():
        node = make()
        state = applied_state(node, (_v(4, 3), _v(3), _v(4, 3)))
        return state, node._output_indexes_to_retain
    check_same(fn)


@pytest.mark.parametrize('given', [True, False])
@pytest.mark.parametrize('x_dtype', [_f16, _f32, _f64])
def test_fixed_grad_node_applied_directly(given, x_dtype):
    def fn():
        mean, var = _stats(3)
        inv_var = 1 / (var + 2e-5) if given else None
        inv_std = numpy.sqrt(inv_var) if given else None
        node = bn.FixedBatchNormalizationGrad(
            2e-5, (None, slice(None)), (0,), inv_std, inv_var)
        state = applied_state(node, (_v(4, 3, dtype=x_dtype), _v(3),
                                     chainer.Variable(mean),
                                     chainer.Variable(var),
                                     _v(4, 3, dtype=x_dtype)))
        return (state, node._output_indexes_to_retain, node.inv_std,
                node.inv_var, getattr(node, 'gamma_over_std', None))
    check_same(fn)


def test_byte_swapped_and_subclass_inputs_are_stocks():
    class Sub(numpy.ndarray):
        pass

    def fn():
        x = _v(5, 3).array
        out = []
        for a in (x.astype('>f4'), x.view(Sub)):
            y = F.batch_normalization(a, *_params(3))
            out.append(y.array.view(numpy.ndarray))
            out.append(F.fixed_batch_normalization(
                a, *_params(3), *_stats(3)).array.view(numpy.ndarray))
        return out
    check_same(fn)
