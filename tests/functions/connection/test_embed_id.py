"""F.embed_id (``EmbedIDFunction``) and its gradient node ``EmbedIDGrad``,
stock vs patched; and the weight's gradient summed row by row."""
import warnings

from unittest import mock

import numpy
import pytest

import chainer
from chainer import function_hook
import chainer.functions as F
from chainer.functions.connection import embed_id

import chainer_fastpath
from chainer_fastpath.testing import (
    applied, check_same, gradients, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _ints(high, *shape):
    return numpy.random.randint(0, high, shape).astype(numpy.int32)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'embed_id': lambda: (
        lambda w: F.embed_id(_ints(6, 3, 2), w), [_v(6, 4)]),
    'embed_id_ignore_label': lambda: (
        lambda w: F.embed_id(numpy.array([0, 5, -1, 2], numpy.int32), w,
                             ignore_label=-1), [_v(6, 4)]),
    'embed_id_float16_int64_ids': lambda: (
        lambda w: F.embed_id(_ints(6, 5).astype(numpy.int64), w),
        [_v(6, 4, dtype=numpy.float16)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'embed_id_no_ignore': lambda d: applied(
        lambda W: F.embed_id(numpy.array([[0, 3], [3, 4]], numpy.int32), W),
        _v(5, 3, dtype=d)),
    'embed_id_negative_index_2d': lambda d: applied(
        lambda W: F.embed_id(numpy.array([[-1, 3, 0], [3, -5, -1]],
                                         numpy.int64), W), _v(5, 3, dtype=d)),
    'embed_id_ignore_negative': lambda d: applied(
        lambda W: F.embed_id(numpy.array([-1, 2, -1, 4], numpy.int8), W,
                             ignore_label=-1), _v(5, 2, dtype=d)),
    'embed_id': lambda d: applied(
        lambda W: F.embed_id(numpy.array([0, 3, 3, 1], numpy.int32), W,
                             ignore_label=1), _v(5, 3, dtype=d)),
    # The gradient comes broadcast from the sum's backward: its rows are
    # read where they lie, 0 bytes apart.
    'embed_id_summed_over_words': lambda d: applied(
        lambda W: F.sum(F.embed_id(_ints(5, 4, 3, 6), W, ignore_label=0),
                        axis=-2), _v(5, 3, dtype=d)),
    'embed_id_summed_over_units': lambda d: applied(
        lambda W: F.sum(F.embed_id(_ints(5, 4, 6), W), axis=-1),
        _v(5, 3, dtype=d)),
    'embed_id_transposed_gradient': lambda d: applied(
        lambda W: F.transpose(F.embed_id(_ints(5, 4, 6), W), (2, 1, 0)),
        _v(5, 3, dtype=d)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['embed_id', 'embed_id_negative_index_2d'],
    compiled_forward=dict.fromkeys(APPLY_CASES,
                                   embed_id.EmbedIDFunction.forward)))


@pytest.mark.parametrize('dtype,compiled', [
    (numpy.float32, True), (numpy.float64, True), (numpy.float16, False)])
def test_embed_id_gradient_node_forward(dtype, compiled, python_calls):
    # EmbedIDGrad's forward, a Python loop in stock, is compiled for
    # float32 and float64; float16 (rounded through float) stays stock's.
    with chainer_fastpath.enabled():
        calls = python_calls(
            lambda: gradients(BACKWARD_CASES['embed_id'], dtype),
            embed_id.EmbedIDGrad.forward)
    assert calls == (0 if compiled else 1)


@pytest.mark.parametrize('ids, ignore, error', [
    ([0, 3], None, True), ([0, -4], None, True), ([0, -3], None, False),
    ([2, 3], 3, False), ([2, -9], 3, True), ([-4, 1], -4, False),
    ([0, 2 ** 62], None, True), ([-2 ** 63, 1], None, True),
    ([1, 2 ** 63 - 1], 2 ** 63 - 1, False),
])
def test_embed_id_gradient_node_indices_as_stock(ids, ignore, error):
    # Stock fails in the forward; the gradient node would fail the same
    # way: the compiled forward leaves out-of-range indices to stock. Those
    # within [-rows, rows) or the ignore label are taken.
    def fn():
        node = embed_id.EmbedIDGrad((3, 2), ignore)
        try:
            gW, = node.apply((numpy.array(ids, numpy.int64),
                              numpy.arange(4, dtype=numpy.float32).reshape(
                                  2, 2)))
        except Exception as e:
            return type(e).__name__, str(e)
        return gW.array
    stock, patched = check_same(fn)
    assert (type(stock) is tuple and stock[0] == 'IndexError') == error


@pytest.mark.parametrize('errstate', [{}, {'over': 'raise'},
                                      {'over': 'ignore'}])
def test_embed_id_gradient_overflow_warns_as_stock(errstate):
    # Two rows of one index summed past float32's range: stock's add warns
    # (or raises); the compiled gradient leaves that case to it.
    def fn():
        W = chainer.Parameter(numpy.zeros((5, 3), numpy.float32))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            try:
                with numpy.errstate(**errstate):
                    y = F.embed_id(numpy.array([1, 1, 2], numpy.int32), W)
                    y.grad = numpy.full((3, 3), 3e38, numpy.float32)
                    y.backward()
            except FloatingPointError as e:
                return 'raised: ' + str(e), [str(w.message) for w in caught]
        return W.grad, [str(w.message) for w in caught]
    stock, patched = check_same(fn)
    assert 'overflow' in str(stock) or errstate == {'over': 'ignore'}


# -- the weight's gradient, summed row by row ------------------------------

_INDEXES = [
    numpy.array([3, 1, 3, 0], numpy.int32),        # one row twice
    numpy.array([[-1, 2], [4, -5]], numpy.int64),  # negatives wrap
    numpy.array([2, 2, 2, 1], numpy.int32),
    numpy.array([0, 4, -1, 1], numpy.int32),
    numpy.array([1, 3, 3, 3], numpy.int8),
]


def _embed_loss(W, ignore_label=None, tokens=5):
    loss = 0
    for x in _INDEXES[:tokens]:
        y = F.embed_id(x, W, ignore_label=ignore_label)
        loss += F.sum(y * _v(*y.shape, dtype=W.dtype))
    return loss


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('ignore_label', [None, -1, 3])
def test_embed_id_weight_gradient_summed_in_place(dtype, ignore_label,
                                                  python_calls):
    # From the second token on (backward meets the last first), W's
    # gradient is added into the first token's dense one, which nobody else
    # holds, without building EmbedIDGrad's dense gradient: bit for bit
    # stock's sum.
    def fn():
        W = chainer.Parameter(_v(5, 3, dtype=dtype).array)
        _embed_loss(W, ignore_label).backward()
        return W.grad
    check_same(fn)
    with chainer_fastpath.enabled():
        built = python_calls(fn, embed_id.EmbedIDGrad.__init__)
    assert built == 1
    assert python_calls(fn, embed_id.EmbedIDGrad.__init__) == 5


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('units', [0, 1, 7, 33])
@pytest.mark.parametrize('gradient', ['dense', 'broadcast'])
def test_embed_id_weight_gradients_of_every_width_summed_as_stock(
        dtype, units, gradient):
    # The first token's gradient is made dense, the next ones' rows added
    # into it: rows of any width, the output gradient dense or broadcast
    # (the backward of a sum).
    def fn():
        W = chainer.Parameter(_v(6, units, dtype=dtype).array)
        loss = 0
        for k in range(3):
            x = numpy.array([[k, 5 - k, k], [1, 1, 2]], numpy.int32)
            y = F.embed_id(x, W)
            if gradient == 'dense':
                y = y * _v(*y.shape, dtype=dtype)
            loss += F.sum(y)
        loss.backward()
        return W.grad
    check_same(fn)


def test_embed_id_dense_gradient_held_elsewhere_is_not_summed_into(
        python_calls):
    # A replaced backward that keeps the dense gradient it returns: the
    # table must not sum into it (stock's sums are new arrays), so the
    # kept arrays stay as they were made.
    kept = []
    backward = embed_id.EmbedIDFunction.backward

    def keeping(self, indexes, grad_outputs):
        gxs = backward(self, indexes, grad_outputs)
        kept.append(gxs[1])
        return gxs

    def fn():
        del kept[:]
        W = chainer.Parameter(_v(5, 3).array)
        with mock.patch.object(embed_id.EmbedIDFunction, 'backward',
                               keeping):
            _embed_loss(W).backward()
        return W.grad, [k.array.copy() for k in kept]
    stock, _ = check_same(fn)
    assert len(stock[1]) == 5
    assert not numpy.array_equal(stock[1][0], stock[0])


def test_embed_id_weight_gradient_with_a_hook_is_dense(python_calls):
    def fn():
        W = chainer.Parameter(_v(5, 3).array)
        with function_hook.FunctionHook():
            _embed_loss(W).backward()
        return W.grad
    check_same(fn)
    with chainer_fastpath.enabled():
        assert python_calls(fn, embed_id.EmbedIDGrad.__init__) == 5


def test_embed_id_gradient_into_a_sum_holding_negative_zeros():
    # W * c with c = -0.0 gives W the gradient -0.0; two of them, of a
    # higher rank than the EmbedID nodes, are summed first, to -0.0. Stock
    # then adds the dense gradients, whose zeros make that +0.0 in row 5,
    # which no index names: it must not stay -0.0.
    def fn():
        W = chainer.Parameter(_v(7, 3).array)
        c = F.identity(F.identity(
            chainer.Variable(numpy.full((7, 3), -0.0, numpy.float32))))
        loss = _embed_loss(W)
        loss += F.sum(W * c) + F.sum(W * c)
        loss.backward()
        return W.grad
    stock, patched = check_same(fn)
    assert not numpy.signbit(stock[5]).any() and not stock[5].any()


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_embed_id_gradients_of_negative_zeros_into_a_dense_one(dtype):
    # The gradients are -0.0, NaN-free: the dense gradient EmbedIDGrad
    # makes from zeros holds +0.0 in their rows, so the next tokens' rows
    # are added into it without reading it first.
    def fn():
        W = chainer.Parameter(_v(5, 3, dtype=dtype).array)
        loss = 0
        for i, x in enumerate(_INDEXES):
            y = F.embed_id(x, W)
            # backward meets the last token first
            c = numpy.full(y.shape, 0.5 if i % 2 else -0.0, dtype)
            loss += F.sum(y * c)
        loss.backward()
        return W.grad
    stock, _ = check_same(fn)
    assert (stock == 0).any() and not numpy.signbit(stock).any()


@pytest.mark.parametrize('errstate', [{}, {'over': 'raise'}])
@pytest.mark.parametrize('rows,scales', [
    ([1, 1, 2], (2e38, 1, 1)),              # in the row's own sum
    ([1, 2, 3], (1.5e38, 1.5e38, 1.5e38)),  # where it meets the sum
])
def test_embed_id_gradient_overflow_into_a_sum_warns_as_stock(
        errstate, rows, scales):
    # Backward takes the tokens last first: the first token's gradient is
    # the one added into the sum of the other two, and it overflows
    # float32 there.
    def fn():
        W = chainer.Parameter(numpy.zeros((5, 3), numpy.float32))
        loss = 0
        for scale in scales:
            y = F.embed_id(numpy.array(rows, numpy.int32), W)
            loss += F.sum(y * numpy.float32(scale))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            try:
                with numpy.errstate(**errstate):
                    loss.backward()
            except FloatingPointError as e:
                return 'raised: ' + str(e), [str(w.message) for w in caught]
        return W.grad, [str(w.message) for w in caught]
    stock, patched = check_same(fn)
    assert 'overflow' in str(stock)


def test_passed_type_check_is_cached(type_check_is_cached):
    ids, w = numpy.array([0, 2], numpy.int32), _v(3, 4)
    type_check_is_cached(embed_id.EmbedIDFunction,
                         lambda: F.embed_id(ids, w))


def test_embed_id_backward_of_a_read_only_gradient():
    # A gradient the user set from a read-only array: stock reads it.
    def fn():
        w = _v(3, 2)
        y = F.embed_id(numpy.array([0, 2, 0], numpy.int32), w)
        gy = numpy.random.uniform(-1, 1, (3, 2)).astype(numpy.float32)
        gy.flags.writeable = False
        y.grad = gy
        y.backward()
        return w.grad
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_embed_id_gradient_node_sums_nans_as_stock(dtype):
    # Rows of NaNs of both signs summed into one row: NumPy's add picks
    # which NaN the sum is.
    def fn():
        gy = numpy.array([[-numpy.nan, -numpy.nan], [numpy.nan, numpy.nan],
                          [1, -numpy.nan]], dtype)
        node = embed_id.EmbedIDGrad((2, 2))
        gw, = node.apply((numpy.zeros(3, numpy.int32), gy))
        return gw.array
    check_same(fn)


def test_misaligned_output_gradient_as_stock():
    # A float32 gradient at an odd byte offset: stock's NumPy path (the
    # compiled loops load items as C floats, aligned only).
    def fn():
        W = chainer.Parameter(numpy.arange(6, dtype=numpy.float32)
                              .reshape(3, 2))
        y = F.embed_id(numpy.array([0, 2, 2], numpy.int32), W)
        raw = numpy.zeros(3 * 2 * 4 + 1, numpy.uint8)[1:]
        gy = raw.view(numpy.float32).reshape(3, 2)
        gy[...] = numpy.arange(6, dtype=numpy.float32).reshape(3, 2)
        assert not gy.flags.aligned
        y.grad = gy
        y.backward()
        return W.grad
    check_same(fn)


def _weights(layout, dtype):
    W = numpy.random.RandomState(4).standard_normal((6, 5)).astype(dtype)
    if layout == 'fortran':
        return numpy.asfortranarray(W)
    if layout == 'reversed':
        return W[::-1, ::-2]
    return W


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('index_dtype', [numpy.int32, numpy.int64,
                                         numpy.int16])
@pytest.mark.parametrize('ids', [
    [[0, 5, 2], [2, 2, 1]],         # copied row by row
    [[[1]], [[4]]],
    [],
    [[0, -1, 2]],                   # wrapped by NumPy
])
@pytest.mark.parametrize('layout', ['c', 'fortran', 'reversed'])
def test_embed_id_forward_rows_as_numpy_indexing(dtype, index_dtype, ids,
                                                 layout):
    # The result's bytes, shape, dtype, strides, and whether it is a view
    # of W, all as stock's W[x]; ids in a Fortran-ordered array too.
    def fn(order):
        W = _weights(layout, dtype)
        x = numpy.array(ids, index_dtype, order=order)
        y = F.embed_id(x, W).array
        return (y, y.strides, numpy.shares_memory(y, W), y.flags.c_contiguous)
    for order in 'CF':
        check_same(lambda: fn(order))


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('units', [1, 2, 3, 4, 5, 7, 8, 11, 12, 16, 23, 24,
                                   25, 40])
def test_embed_id_forward_rows_of_every_width(dtype, units):
    # Rows of 4 to 320 bytes: short ones copied in moves of fixed sizes,
    # longer ones by memcpy; each as NumPy's W[x] copies it.
    def fn():
        W = numpy.random.standard_normal((9, units)).astype(dtype)
        x = numpy.random.randint(0, 9, (4, 7)).astype(numpy.int32)
        y = F.embed_id(x, W).array
        return y, y.strides
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('index_dtype', [numpy.int32, numpy.int64,
                                         numpy.int16])
@pytest.mark.parametrize('view', ['column', 'reversed', 'every_other'])
@pytest.mark.parametrize('n', [3, 700])
@pytest.mark.parametrize('bad', [None, 6, -1])
def test_embed_id_forward_strided_indices_as_numpy_indexing(
        dtype, index_dtype, view, n, bad):
    # A column of a batch of sequences (x[:, j]), a reversed or a strided
    # vector of ids: the indices are read with their stride, the result
    # laid out as stock's W[x], a bad index raising stock's error.
    def fn():
        ids = numpy.random.randint(0, 6, (n, 4)).astype(index_dtype)
        if bad is not None:
            ids[n // 2] = bad
        x = {'column': ids[:, 1], 'reversed': ids[::-1, 0],
             'every_other': ids.ravel()[::2]}[view]
        assert not x.flags.c_contiguous
        try:
            y = F.embed_id(x, _weights('c', dtype)).array
        except IndexError as e:
            return str(e)
        return y, y.strides, y.flags.c_contiguous
    check_same(fn)


@pytest.mark.parametrize('index_dtype', [numpy.int32, numpy.int64])
@pytest.mark.parametrize('bad', ['rows', 'below', 'largest', 'smallest'])
def test_embed_id_index_out_of_range_raises_as_stock(index_dtype, bad):
    # One index past either end among good ones, up to the extremes of
    # the index type, which read unsigned are past the rows too.
    info = numpy.iinfo(index_dtype)
    value = {'rows': 6, 'below': -7, 'largest': info.max,
             'smallest': info.min}[bad]

    def fn():
        with pytest.raises(IndexError) as e:
            F.embed_id(numpy.array([0, 5, value, 1], index_dtype),
                       _weights('c', 'f'))
        return str(e.value)
    check_same(fn)


class _NoGradient(chainer.FunctionNode):
    """Gives its input no gradient."""

    def forward(self, inputs):
        return inputs[0] * 2,

    def backward(self, indexes, grad_outputs):
        return None,


@pytest.mark.parametrize('how', ['negative_zeros', 'signaling_nan'])
def test_embed_id_gradient_kept_and_changed_between_passes(how):
    # The first pass leaves W a dense gradient the table summed into; the
    # program then writes into it and runs the next pass without clearing
    # it, where W's first gradient is a node's None: that gradient is the
    # program's, read again before rows go into it (row 6 is no index's).
    def fn():
        W = chainer.Parameter(_v(9, 3).array)
        _embed_loss(W, tokens=2).backward()
        g = W.grad.view(numpy.uint32)
        g[6] = 0x80000000 if how == 'negative_zeros' else 0x7f800001
        del g
        loss = F.sum(_NoGradient().apply((W,))[0]) + _embed_loss(W)
        with numpy.errstate(invalid='ignore'):
            loss.backward()
        return W.grad
    stock, _ = check_same(fn)
    assert not numpy.signbit(stock[6]).any()


class _OwnDenseGradient(chainer.FunctionNode):
    """Embeds like EmbedID; its backward builds the dense gradient with
    EmbedIDGrad and writes -0.0 into a row no index names."""

    def forward(self, inputs):
        self.retain_inputs((0,))
        x, W = inputs
        self._w_shape = W.shape
        return W[x],

    def backward(self, indexes, grad_outputs):
        x = self.get_retained_inputs()[0].array
        gW = embed_id.EmbedIDGrad(self._w_shape).apply(
            (x, grad_outputs[0]))[0]
        gW.array[6] = -0.0
        return None, gW


def test_dense_gradient_a_program_built_and_changed():
    # The program's own backward made it: the table reads it before rows
    # go into it.
    def fn():
        W = chainer.Parameter(_v(9, 3).array)
        x = numpy.array([0, 1], numpy.int32)
        loss = _embed_loss(W) + F.sum(_OwnDenseGradient().apply((x, W))[0])
        loss.backward()
        return W.grad
    stock, _ = check_same(fn)
    assert not numpy.signbit(stock[6]).any()
