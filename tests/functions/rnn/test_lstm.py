"""F.lstm (``LSTM``) and its gradient node ``LSTMGrad``, stock vs patched;
and the one-pass cell kernels (``fused_forward``, ``fused_grad``) against the
stock ``LSTM.forward`` and ``LSTMGrad.forward`` they stand for: bit for bit,
the same warnings and errors, and None wherever they leave the work to
NumPy."""
import warnings

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.rnn import lstm

from chainer_fastpath.functions.rnn import lstm as kernel
from chainer_fastpath.testing import (
    applied, assert_same, check_same, gradients, run_both, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# (batch, cell batch, units, trailing shape)
SHAPES = [(8, 8, 64, ()), (3, 5, 7, ()), (2, 2, 3, (2,)), (1, 4, 1, (3, 2))]
DTYPES = [numpy.float32, numpy.float64]


def _bits(arrays):
    return [(a.dtype, a.shape, a.tobytes()) for a in arrays]


def _inputs(dtype, shape, scale, seed=0):
    batch, cell_batch, units, rest = shape
    rng = numpy.random.RandomState(seed)
    c = (rng.randn(cell_batch, units, *rest) * scale).astype(dtype)
    x = (rng.randn(batch, 4 * units, *rest) * scale).astype(dtype)
    gc = (rng.randn(cell_batch, units, *rest) * scale).astype(dtype)
    gh = (rng.randn(batch, units, *rest) * scale).astype(dtype)
    return c, x, gc, gh


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', SHAPES)
@pytest.mark.parametrize('scale', [0.1, 1, 100])
def test_forward_bit_for_bit(dtype, shape, scale):
    c, x, _, _ = _inputs(dtype, shape, scale)
    expected = lstm.LSTM().forward((c, x))
    got = kernel.fused_forward(c, x)
    assert got is not None
    assert _bits(got) == _bits(expected)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', SHAPES)
@pytest.mark.parametrize('scale', [0.1, 1, 100])
@pytest.mark.parametrize('has_gc', [True, False])
@pytest.mark.parametrize('has_gh', [True, False])
def test_grad_bit_for_bit(dtype, shape, scale, has_gc, has_gh):
    c, x, gc, gh = _inputs(dtype, shape, scale)
    c_next = lstm.LSTM().forward((c, x))[0]
    args = (c, x, c_next, gc if has_gc else None, gh if has_gh else None)
    expected = lstm.LSTMGrad().forward(args)
    got = kernel.fused_grad(*args)
    assert got is not None
    assert _bits(got) == _bits(expected)


def _unsupported():
    c, x, gc, gh = _inputs(numpy.float32, (2, 3, 4, ()), 1)
    return {
        'float16': (c.astype(numpy.float16), x.astype(numpy.float16)),
        'mixed dtypes': (c.astype(numpy.float64), x),
        'x not contiguous': (c, numpy.asfortranarray(x)),
        'x larger batch than c': (c[:1], x),
        'units do not match': (c[:, :3], x),
        'empty batch': (c, x[:0]),
        'ndim differs': (c[:, :, None], x),
    }


@pytest.mark.parametrize('case', sorted(_unsupported()))
def test_unsupported_inputs_are_left_to_numpy(case):
    c, x = _unsupported()[case]
    assert kernel.fused_forward(c, x) is None


def test_unsupported_gradients_are_left_to_numpy():
    c, x, gc, gh = _inputs(numpy.float32, (2, 3, 4, ()), 1)
    c_next = lstm.LSTM().forward((c, x))[0]
    assert kernel.fused_grad(c, x, c_next, gc.astype(numpy.float64),
                                gh) is None
    assert kernel.fused_grad(c, x, c_next, gc, gh[:1]) is None
    assert kernel.fused_grad(c, x, c_next[:2], gc, gh) is None
    assert kernel.fused_grad(c, x, c_next, gc,
                                numpy.asfortranarray(gh)) is None


def _saturated_forget_gate():
    # sigmoid(f) is exactly 0 and c_prev is inf: 0 * inf is invalid.
    c, x, _, _ = _inputs(numpy.float32, (2, 2, 3, ()), 1)
    c[0, 0] = numpy.inf
    x.reshape(2, 3, 4)[0, 0, 2] = -1000
    return c, x


def _overflowing_grad():
    # gh * sigmoid(o) * (1 - co**2) + gc overflows: 3e38 * 0.5 + 3e38.
    big = numpy.full((2, 3), 3e38, numpy.float32)
    x = numpy.zeros((2, 12), numpy.float32)
    return big * 0, x, big * 0, big, big


def _overflowing_grad_without_nan():
    # As above, with every gate open and c_prev 1: the gradients overflow
    # to inf, and no inf meets a zero.
    big = numpy.full((2, 3), 3e38, numpy.float32)
    return (numpy.ones((2, 3), numpy.float32),
            numpy.full((2, 12), 0.5, numpy.float32), big * 0, big, big)


def test_watched_exception_leaves_the_work_to_numpy():
    c, x = _saturated_forget_gate()
    assert kernel.fused_forward(c, x) is None
    assert kernel.fused_grad(*_overflowing_grad()) is None


def test_ignored_exception_is_computed_as_numpy_computes_it():
    # Under errstate all='ignore' NumPy neither warns nor raises: the
    # kernel's NaN and inf are NumPy's, bit for bit.
    c, x = _saturated_forget_gate()
    args = _overflowing_grad_without_nan()
    with numpy.errstate(all='ignore'):
        expected = lstm.LSTM().forward((c, x))
        got = kernel.fused_forward(c, x)
        expected_grad = lstm.LSTMGrad().forward(args)
        got_grad = kernel.fused_grad(*args)
    assert numpy.isnan(expected[0]).any()
    assert numpy.isinf(expected_grad[0]).any()
    assert not any(numpy.isnan(a).any() for a in expected_grad)
    assert _bits(got) == _bits(expected)
    assert _bits(got_grad) == _bits(expected_grad)
    # Where the ignored exception leaves a NaN in a gradient (inf * 0),
    # NumPy computes it (test_gradient_nans_are_left_to_numpy).
    with numpy.errstate(all='ignore'):
        assert kernel.fused_grad(*_overflowing_grad()) is None


@pytest.mark.parametrize('where', ['x', 'c_next'])
def test_nan_is_left_to_numpy(where):
    # tanh warns about a signaling NaN once per call, and stock makes more
    # calls than the kernels: NaNs go to the NumPy calls.
    c, x, gc, gh = _inputs(numpy.float32, (2, 3, 4, ()), 1)
    c_next = lstm.LSTM().forward((c, x))[0]
    if where == 'x':
        x[1, 5] = numpy.nan
        assert kernel.fused_forward(c, x) is None
    else:
        c_next[0, 2] = numpy.nan
    assert kernel.fused_grad(c, x, c_next, gc, gh) is None


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('signs', [(1, -1), (-1, 1), (1, 1)])
def test_gradient_nans_are_left_to_numpy(dtype, signs):
    # NaN gradients of the two outputs meet in one add: which NaN it keeps
    # is the loop's (stock kept gc's, the kernel gh's), so NaNs in the
    # results go to the NumPy calls.
    c, x, gc, gh = _inputs(dtype, (2, 3, 4, ()), 1)
    c_next = lstm.LSTM().forward((c, x))[0]
    gc[0, 1] = numpy.copysign(numpy.nan, signs[0])
    gh[0, 1] = numpy.copysign(numpy.nan, signs[1])
    assert kernel.fused_grad(c, x, c_next, gc, gh) is None

    def fn():
        cv, xv = chainer.Variable(c.copy()), chainer.Variable(x.copy())
        c_out, h_out = F.lstm(cv, xv)
        c_out.grad = gc.copy()
        h_out.grad = gh.copy()
        chainer.backward([c_out, h_out], [c_out.grad_var, h_out.grad_var])
        return cv.grad, xv.grad
    check_same(fn)


def test_huber_loss_nan_delta_gradients_through_lstm_as_stock():
    # The fuzzer's case: Huber loss of the cell and the output with a NaN
    # delta sends NaNs of both signs into LSTMGrad.
    def fn():
        c = chainer.Variable(numpy.ones((1, 2), numpy.float32))
        x = numpy.full((1, 8), 0.5, numpy.float32)
        c_out, h_out = F.lstm(c, x)
        F.sum(F.huber_loss(c_out, h_out, float('nan'))).backward()
        return c.grad
    stock, _ = check_same(fn)
    assert numpy.isnan(stock).all()


def test_watched_underflow_leaves_the_work_to_numpy():
    # Nothing underflows here; a watched underflow is enough, for the same
    # reason as NaNs.
    c, x, gc, gh = _inputs(numpy.float32, (2, 3, 4, ()), 1)
    c_next = lstm.LSTM().forward((c, x))[0]
    with numpy.errstate(under='warn'):
        assert kernel.fused_forward(c, x) is None
        assert kernel.fused_grad(c, x, c_next, gc, gh) is None
    assert kernel.fused_forward(c, x) is not None


def _tiny_cell():
    # sigmoid(f) * c_prev is subnormal: an underflow.
    c, x, _, _ = _inputs(numpy.float32, (2, 2, 3, ()), 1)
    c[...] = 1e-37
    x.reshape(2, 3, 4)[..., 2] = -8
    return c, x


def _lstm_warnings(inputs, errstate):
    """What F.lstm and its backward warn about or raise, and their results'
    bits."""
    c, x = (chainer.Variable(a) for a in inputs())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        try:
            with numpy.errstate(**errstate):
                c_next, h = F.lstm(c, x)
                F.sum(c_next + h).backward()
        except FloatingPointError as e:
            return 'raised: ' + str(e), [str(w.message) for w in caught]
    return ([str(w.message) for w in caught],
            _bits([c_next.array, h.array, c.grad, x.grad]))


@pytest.mark.parametrize('inputs,errstate,expected', [
    (_saturated_forget_gate, {}, 'invalid value encountered in multiply'),
    (_saturated_forget_gate, {'all': 'raise'}, 'raised: invalid value'),
    (_tiny_cell, {'under': 'warn'}, 'underflow encountered in multiply'),
    (_tiny_cell, {'under': 'raise'}, 'raised: underflow'),
])
def test_warnings_and_errors_as_stock(inputs, errstate, expected):
    stock, patched = run_both(lambda: _lstm_warnings(inputs, errstate))
    assert_same(stock, patched)
    assert expected in str(stock)


# -- F.lstm stock vs patched ---------------------------------------------

def _lstm_h(c, x):
    # The cell output stays alive, as in L.LSTM: only h gets a gradient.
    c_new, h = F.lstm(c, x)
    return (c, x, c_new), h


def _row_slice(*shape, dtype=numpy.float32):
    # The cell NStepLSTM passes after a Permutate along axis 1: rows of a
    # wider array, not C-contiguous, though empty_like of it is.
    wide = _v(shape[0], 2 * shape[1], dtype=dtype).array
    return chainer.Variable(wide[:, :shape[1]])


def _fortran(*shape, dtype=numpy.float32):
    # empty_like of it is F-ordered too: stock's layout, stock's forward.
    a = _v(*shape, dtype=dtype).array
    return chainer.Variable(numpy.asfortranarray(a))


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'lstm': lambda: (F.lstm, [_v(2, 3), _v(2, 12)]),
    'lstm_shrinking_batch': lambda: (F.lstm, [_v(3, 2), _v(2, 8)]),
    'lstm_3d_float64': lambda: (F.lstm, [
        _v(2, 3, 2, dtype=numpy.float64), _v(2, 12, 2, dtype=numpy.float64)]),
    'lstm_float16': lambda: (F.lstm, [_v(2, 3, dtype=numpy.float16),
                                      _v(2, 12, dtype=numpy.float16)]),
    'lstm_strided_cell': lambda: (F.lstm, [strided_variable(2, 3),
                                           _v(2, 12)]),
    'lstm_row_slice_cell': lambda: (F.lstm, [_row_slice(3, 2), _v(2, 8)]),
    'lstm_fortran_cell': lambda: (F.lstm, [_fortran(3, 2), _v(3, 8)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'lstm': lambda d: _lstm_h(_v(2, 3, dtype=d), _v(2, 12, dtype=d)),
    'lstm_3d_cell_kept': lambda d: _lstm_h(_v(2, 3, 2, dtype=d),
                                           _v(2, 12, 2, dtype=d)),
    'lstm_shrinking_batch_cell_kept': lambda d: _lstm_h(
        _v(3, 2, dtype=d), _v(2, 8, dtype=d)),
    'lstm_cell_dropped': lambda d: applied(
        lambda c, x: F.lstm(c, x)[1], _v(2, 3, dtype=d), _v(2, 12, dtype=d)),
    'lstm_both_outputs': lambda d: applied(
        lambda c, x: F.sum(F.lstm(c, x)[0]) + F.sum(F.lstm(c, x)[1]),
        _v(2, 3, dtype=d), _v(2, 12, dtype=d)),
    'lstm_shrinking_batch': lambda d: applied(
        lambda c, x: F.sum(F.lstm(c, x)[0]) + F.sum(F.lstm(c, x)[1]),
        _v(3, 2, dtype=d), _v(2, 8, dtype=d)),
    'lstm_3d': lambda d: applied(
        lambda c, x: F.lstm(c, x)[1], _v(2, 3, 2, dtype=d),
        _v(2, 12, 2, dtype=d)),
    'lstm_row_slice_cell': lambda d: applied(
        lambda c, x: F.lstm(c, x)[1], _row_slice(3, 2, dtype=d),
        _v(2, 8, dtype=d)),
    'lstm_row_slice_cell_kept': lambda d: _lstm_h(
        _row_slice(3, 2, dtype=d), _v(3, 8, dtype=d)),
}


def _ones(*shape):
    return chainer.Variable(numpy.ones(shape, numpy.float32))


# name -> (a call whose type check passes, a call that stock rejects)
TYPE_CHECK_SEQUENCES = {
    'lstm_other_units': (
        lambda: F.lstm(_ones(2, 3), _ones(2, 12)),
        lambda: F.lstm(_ones(2, 3), _ones(2, 8))),
    'lstm_larger_batch': (
        lambda: F.lstm(_ones(2, 3), _ones(2, 12)),
        lambda: F.lstm(_ones(2, 3), _ones(3, 12))),
}


def _float32_gradients():
    return gradients(BACKWARD_CASES['lstm'], numpy.float32)


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['lstm_cell_dropped', 'lstm_both_outputs'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    # float16 and an F-ordered cell: the kernel declines, stock's forward.
    compiled_forward=dict.fromkeys(
        ['lstm', 'lstm_shrinking_batch', 'lstm_3d_float64',
         'lstm_strided_cell', 'lstm_row_slice_cell'],
        lstm.LSTM.forward)))


def _dead_cell_rewired():
    # Stock's backward makes a fresh Variable for the dead output c and
    # points the node's outputs at it: the node after backward.
    c, x = _v(2, 3), _v(2, 12)
    h = F.lstm(c, x)[1]
    node = h.creator
    before = node.outputs[0]
    F.sum(h).backward()
    after = node.outputs[0]
    return (after is not before, after() is None, node.outputs[1]() is h.node,
            c.grad, x.grad)


def test_dead_cell_output_is_rewired_as_stock(compiled_backward_is_used):
    stock, patched = run_both(_dead_cell_rewired)
    assert_same(stock, patched)
    assert stock[:3] == (True, True, True)
    compiled_backward_is_used(BACKWARD_CASES['lstm_cell_dropped'])


@pytest.mark.parametrize('function', ['forward', 'grad_forward'])
def test_lstm_forwards_are_compiled(function, compiled_instead):
    target = (lstm.LSTM.forward if function == 'forward'
              else lstm.LSTMGrad.forward)
    assert compiled_instead(_float32_gradients, target) == 1


@pytest.mark.parametrize('name', ['_sigmoid', '_grad_tanh', '_extract_gates'])
def test_lstm_mocked_module_function_is_called(name, mock_is_called):
    mock_is_called(lstm, name, _float32_gradients)


def test_passed_type_check_is_cached(type_check_is_cached):
    c, x = _v(2, 3), _v(2, 12)
    type_check_is_cached(lstm.LSTM, lambda: F.lstm(c, x))


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_column_cell_outputs_laid_out_as_stock(dtype):
    # A (3, 1) cell transposed from a strided row is read from a copy; its
    # empty_like, stock's c_next and gc_prev, is C-contiguous with NumPy's
    # strides along the axis of length one: (itemsize, 3 * itemsize).
    def fn():
        row = chainer.Variable(
            numpy.arange(6, dtype=dtype).reshape(1, 6)[:, ::2])
        c_prev = F.transpose(row, (1, 0))
        x = chainer.Variable(
            numpy.linspace(-1, 1, 4).astype(dtype).reshape(1, 4))
        c, h = F.lstm(c_prev, x)
        (F.sum(c) + F.sum(h)).backward(retain_grad=True)
        return [(a.shape, a.strides, a.tobytes())
                for a in (c.array, h.array, c_prev.grad, row.grad, x.grad)]
    check_same(fn)
