"""F.linear (``LinearFunction``) and its gradient nodes, stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.connection import linear

import chainer_fastpath
from chainer_fastpath.testing import (
    applied, check_error_same, check_same, grad_vars, gradients, misaligned,
    run_both, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'linear': lambda: (F.linear, [_v(2, 4), _v(3, 4), _v(3)]),
    'linear_nobias': lambda: (F.linear, [_v(2, 4), _v(3, 4)]),
    'linear_float16': lambda: (F.linear, [
        _v(2, 4, dtype=numpy.float16), _v(3, 4, dtype=numpy.float16),
        _v(3, dtype=numpy.float16)]),
    'linear_n_batch_axes': lambda: (
        lambda x, W: F.linear(x, W, n_batch_axes=2), [_v(2, 3, 4), _v(5, 4)]),
    'linear_n_batch_axes_3_bias': lambda: (
        lambda x, W, b: F.linear(x, W, b, 3),
        [_v(2, 1, 3, 4), _v(5, 4), _v(5)]),
    'linear_n_batch_axes_past_ndim': lambda: (
        lambda x, W: F.linear(x, W, n_batch_axes=3), [_v(2, 3), _v(5, 1)]),
    'linear_3d': lambda: (F.linear, [_v(2, 3, 2), _v(4, 6), _v(4)]),
    'linear_4d_array': lambda: (lambda x, W: F.linear(x.array, W),
                                [_v(2, 1, 3, 2), _v(4, 6)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'linear': lambda d: applied(lambda x, W, b: F.linear(x, W, b),
                                _v(3, 4, dtype=d), _v(5, 4, dtype=d),
                                _v(5, dtype=d)),
    'linear_nobias': lambda d: applied(lambda x, W: F.linear(x, W),
                                       _v(1, 4, dtype=d), _v(5, 4, dtype=d)),
    'linear_x_const': lambda d: applied(
        lambda x, W, b: F.linear(x, W, b),
        _v(3, 4, dtype=d, requires_grad=False), _v(5, 4, dtype=d),
        _v(5, dtype=d)),
    # W in another dtype than x (float64 where x is float32, else float32):
    # the type check rejects it, unchecked the gradients are cast.
    'linear_mixed_dtypes': lambda d: applied(
        lambda x, W: F.linear(x, W), _v(3, 4, dtype=d),
        _v(5, 4, dtype=numpy.float64 if d == numpy.float32
           else numpy.float32)),
    # No output units: the bias gradient sums rows of nothing.
    'linear_no_units': lambda d: applied(lambda x, W, b: F.linear(x, W, b),
                                         _v(2, 3, dtype=d), _v(0, 3, dtype=d),
                                         _v(0, dtype=d)),
    'linear_n_batch_axes': lambda d: applied(
        lambda x, W, b: F.linear(x, W, b, n_batch_axes=2),
        _v(2, 3, 4, dtype=d), _v(5, 4, dtype=d), _v(5, dtype=d)),
    'linear_3d': lambda d: applied(lambda x, W: F.linear(x, W),
                                   _v(2, 3, 2, dtype=d), _v(4, 6, dtype=d)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['linear', 'linear_nobias'],
    # Mixed dtypes: the gradients are cast, stock's backward.
    compiled_backward=sorted(set(BACKWARD_CASES) - {'linear_mixed_dtypes'}),
    compiled_forward=dict.fromkeys(APPLY_CASES,
                                   linear.LinearFunction.forward)))


def test_mocked_gradient_node_is_called(patched_stats):
    calls = []
    original = linear.LinearGradWeight.forward

    def spy(self, inputs):
        calls.append(type(self).__name__)
        return original(self, inputs)

    linear.LinearGradWeight.forward = spy
    try:
        reasons = patched_stats(lambda: gradients(
            BACKWARD_CASES['linear'], numpy.float32))['fallback']
    finally:
        linear.LinearGradWeight.forward = original
    assert calls == ['LinearGradWeight']
    assert reasons == {'patched or mocked method': 1}


def test_bad_gradient_dtype_same_error_as_stock():
    # A float64 gradient given to a float32 linear output: stock casts
    # the data gradient back and then rejects the mismatch.
    def fn():
        x, W = _v(2, 3), _v(4, 3)
        y = F.linear(x, W)
        # Bypasses the setter's check, which would refuse it up front.
        y._set_grad_var_without_check(
            chainer.Variable(numpy.ones((2, 4), numpy.float64)))
        try:
            y.backward()
        except Exception as e:
            return type(e).__name__, str(e).splitlines()[0]
        return grad_vars(x, W)
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('scale', [1, 1e4])
@pytest.mark.parametrize('layout', ['misaligned', 'swapped'])
def test_odd_output_gradient_with_bias_is_stocks(dtype, scale, layout,
                                                patched_stats):
    # The bias gradient's check for a quiet sum reads gy as C floats: a
    # misaligned gy (an undefined load in C) or a byte-swapped one goes to
    # stock's backward.
    def fn():
        x, W, b = _v(3, 4, dtype=dtype), _v(5, 4, dtype=dtype), _v(
            5, dtype=dtype)
        y = F.linear(x, W, b)
        gy = numpy.random.uniform(-scale, scale, (3, 5)).astype(dtype)
        if layout == 'misaligned':
            gy = misaligned(gy)
            assert not gy.flags.aligned
            y.grad = gy
        else:
            # The setter refuses another byte order; backward takes it.
            y._set_grad_var_without_check(chainer.Variable(
                gy.astype(gy.dtype.newbyteorder())))
        try:
            y.backward()
        except Exception as e:
            return type(e).__name__, str(e)
        return grad_vars(x, W, b)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: LinearFunction': 1}


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
@pytest.mark.parametrize('gy_kind', ['signed_zeros', 'subnormals',
                                     'fortran', 'one_row', 'one_column'])
def test_bias_gradient_bits(dtype, gy_kind, patched_stats):
    # The bias gradient is Sum's forward, the rows of gy added in NumPy's
    # order: in C for a C-contiguous float32 or float64 gy, else NumPy's.
    rows, units = {'one_row': (1, 5), 'one_column': (4, 1)}.get(
        gy_kind, (3, 5))

    def fn():
        x, W, b = _v(rows, 4, dtype=dtype), _v(units, 4, dtype=dtype), _v(
            units, dtype=dtype)
        y = F.linear(x, W, b)
        gy = numpy.random.uniform(-1, 1, (rows, units)).astype(dtype)
        if gy_kind == 'signed_zeros':
            gy[:, 0] = -0.0
            gy[0, 1], gy[1:, 1] = -0.0, 0.0
            gy[:, 2] = [0.0, -0.0, -0.0]
        elif gy_kind == 'subnormals':
            gy *= numpy.finfo(dtype).tiny / 4
        elif gy_kind == 'fortran':
            gy = numpy.asfortranarray(gy)
        y.grad = gy
        y.backward()
        return grad_vars(x, W, b)
    check_same(fn)
    # The check for a quiet sum reads a float32 or float64 gy as C floats.
    left = gy_kind == 'fortran' and dtype != numpy.float16
    assert patched_stats(fn)['fallback'] == (
        {'case left to stock: LinearFunction': 1} if left else {})


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('gy_kind', ['overflow', 'nan', 'inf', 'large'])
@pytest.mark.parametrize('overflow', ['warn', 'raise', 'ignore'])
def test_bias_gradient_exceptional_sums_as_stock(dtype, gy_kind, overflow,
                                                 patched_stats):
    # A bias sum that overflows or meets a NaN or an infinity warns (or
    # raises) from stock's line, with stock's bits: stock's whole backward
    # runs. A large sum that does not overflow, or one whose overflow
    # NumPy ignores, is computed here.
    big = numpy.finfo(dtype).max / 2

    def fn():
        x, W, b = _v(3, 4, dtype=dtype), _v(5, 4, dtype=dtype), _v(
            5, dtype=dtype)
        y = F.linear(x, W, b)
        gy = numpy.random.uniform(-1, 1, (3, 5)).astype(dtype)
        gy[:, 1] = {'overflow': [big, big, big], 'large': [big, 1, -big],
                    'nan': [1, numpy.nan, 2],
                    'inf': [numpy.inf, 1, -numpy.inf]}[gy_kind]
        y.grad = gy
        with numpy.errstate(over=overflow, invalid=overflow):
            return warned(y.backward), grad_vars(x, W, b)
    check_same(fn)
    quiet = gy_kind == 'large' or (gy_kind == 'overflow'
                                   and overflow == 'ignore')
    assert patched_stats(fn)['fallback'] == (
        {} if quiet else {'case left to stock: LinearFunction': 1})


def test_linear_static_method_patched_on_the_class_is_called(monkeypatch):
    chainer_fastpath.enable()
    calls = []
    original = linear.LinearFunction.static_linear_no_bias

    def spy(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(linear.LinearFunction, 'static_linear_no_bias', spy)
    F.linear(_v(2, 4), _v(3, 4))
    assert calls == [1]


def test_retained_inputs_hold_their_arrays():
    def build():
        x, w = _v(2, 4), _v(3, 4)
        y = F.linear(x, w)
        node = y.creator_node
        return [n.data for n in node.inputs], node.get_retained_inputs()

    stock, patched = run_both(build)
    for s, p in zip(stock[0], patched[0]):
        numpy.testing.assert_array_equal(s, p)
    assert len(patched[1]) == 2


def test_base_method_replaced_after_fast_calls_is_called(monkeypatch):
    # The compiled linear forward calls retain_inputs as FunctionNode
    # defines it; replacing it on the base class after the class was
    # verified must still be seen, and undoing it restores the fast path.
    chainer_fastpath.enable()
    args = _v(2, 4), _v(3, 4)
    F.linear(*args)
    F.linear(*args)
    calls = []
    original = chainer.FunctionNode.retain_inputs

    def spy(self, indexes):
        calls.append(indexes)
        return original(self, indexes)

    monkeypatch.setattr(chainer.FunctionNode, 'retain_inputs', spy)
    F.linear(*args)
    assert calls == [(0, 1)]
    monkeypatch.undo()
    F.linear(*args)
    assert calls == [(0, 1)]


def test_passed_type_check_is_cached(type_check_is_cached):
    x, w = _v(2, 3), _v(4, 3)
    type_check_is_cached(linear.LinearFunction,
                         lambda: F.linear(x, w))


@pytest.mark.parametrize('call', [
    lambda: F.linear(_v(2, 3, 4), _v(5, 4), n_batch_axes=2),
    lambda: F.linear(_v(2, 3, 2), _v(5, 6)),
])
def test_reshaping_linear_is_counted_fast(call):
    chainer_fastpath.enable()
    chainer_fastpath.reset_stats()
    call()
    assert chainer_fastpath.stats()['linear.linear'] == {
        'fast': 1, 'fallback': {}}


def test_reshaping_linear_in_debug_mode_is_stocks(patched_stats):
    def fn():
        with chainer.using_config('debug', True):
            return F.linear(_v(2, 3, 4), _v(5, 4), n_batch_axes=2).array
    check_same(fn)
    chainer_fastpath.enable()
    chainer_fastpath.reset_stats()
    fn()
    assert chainer_fastpath.stats()['linear.linear'] == {
        'fast': 0, 'fallback': {'debug mode': 1}}


@pytest.mark.parametrize('owner,name', [
    (chainer.Variable, 'reshape'), (F, 'reshape'),
    (chainer.utils, 'size_of_shape')])
def test_mocked_reshape_is_called(owner, name, spy):
    calls = spy(owner, name)

    def fn():
        return F.linear(_v(2, 3, 4), _v(5, 4), n_batch_axes=2).array
    fn()
    stock = len(calls)
    del calls[:]
    with chainer_fastpath.enabled():
        fn()
    assert stock >= 1 and len(calls) == stock


@pytest.mark.parametrize('call', [
    # Reshaped to (0, -1): stock's Reshape raises.
    lambda: F.linear(_v(0, 3, 4), _v(5, 4), n_batch_axes=2),
    lambda: F.linear(_v(2, 3, 4), _v(5, 3), n_batch_axes=2),
    lambda: F.linear(_v(2, 3, 4), _v(5, 4), n_batch_axes=-1),
    lambda: F.linear(_v(2, 3, 4, 1), _v(5, 4), n_batch_axes=2),
])
def test_bad_reshaping_linear_same_error_as_stock(call):
    check_error_same(lambda: call().array)
