"""The gradient table (``_backward/grad_table.pyx``), stock vs patched:
leaf gradients accumulated, the sums it owns and adds into in place (same
bits, NaNs and layout as stock's ``F.add``; no array a user holds written),
stock's ``F.add`` where a sum could be observed."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L

import chainer_fastpath
from chainer_fastpath.testing import (
    assert_same, check_same, misaligned, run_both, variable as _v)


def _grads(link):
    return [(name, p.grad) for name, p in sorted(link.namedparams())]


def _counts(name='Variable.backward'):
    return chainer_fastpath.stats()[name]


def test_two_backward_calls_accumulate_without_cleargrads():
    def fn():
        m = chainer.Sequential(L.Linear(5, 6), F.sigmoid, L.Linear(6, 2))
        out = []
        for _ in range(3):
            loss = F.sum(m(_v(3, 5)) ** 2)
            loss.backward()
            out.append(_grads(m))
        return out
    check_same(fn)


def test_user_grad_array_is_never_written():
    def fn():
        lin = L.Linear(4, 3)
        user = numpy.full((3, 4), 0.5, numpy.float32)
        keep = user.copy()
        lin.W.grad = user
        x = _v(2, 4)
        F.sum(lin(x) * lin(x)).backward()
        assert user.tobytes() == keep.tobytes()
        first = lin.W.grad
        first_copy = first.copy()
        F.sum(lin(x)).backward()
        # an earlier result handed to the user is not written either
        assert first.tobytes() == first_copy.tobytes()
        return _grads(lin)
    check_same(fn)


def test_lazy_grad_sum():
    def fn():
        with chainer.using_config('lazy_grad_sum', True):
            x = _v(3, 4)
            W = chainer.Parameter(numpy.random.randn(4, 4).astype('f'))
            h = x
            for _ in range(5):
                h = F.matmul(h, W) + h
            loss = F.sum(h)
        loss.backward()
        return x.grad, W.grad
    check_same(fn)


def test_error_mismatched_sum_dtype_matches_stock():
    # two gradients of one node with different dtypes: stock's F.add raises
    class _AsF64(chainer.FunctionNode):
        def forward(self, inputs):
            return inputs[0] * 1,

        def backward(self, indexes, grad_outputs):
            return chainer.Variable(
                grad_outputs[0].array.astype(numpy.float64)),

    def fn():
        x = _v(3)
        y = F.sum(_AsF64().apply((x,))[0]) + F.sum(x)
        with pytest.raises(Exception) as e:
            y.backward()
        return type(e.value).__name__, str(e.value)
    check_same(fn)


# -- gradient sums in place ----------------------------------------------

def test_shared_weight_sums_skip_f_add():
    """The in-place path is taken: no Add nodes are applied for the sums."""
    def fn():
        lstm = L.LSTM(3, 4)
        loss = 0
        for _ in range(5):
            loss += F.sum(lstm(_v(1, 3)))
        chainer_fastpath.reset_stats()
        loss.backward()
        return _grads(lstm), _counts('FunctionNode.apply')['fast']
    _, (grads_fwd_only, applies_fwd_only) = run_both(fn, backward=False)
    stock, (grads_both, applies_both) = run_both(fn)
    assert_same(stock[0], grads_both)
    assert_same(grads_fwd_only, grads_both)
    assert applies_both < applies_fwd_only


def _sum_calls(patch_target):
    """How often a mock wrapping ``patch_target`` is called by one backward
    through a node whose two gradients are summed."""
    owner, name = patch_target()
    x = chainer.Variable(numpy.ones(2, numpy.float32))
    with mock.patch.object(owner, name, autospec=True,
                           side_effect=getattr(owner, name)) as m:
        F.sum(x * 2.0 + x * 3.0).backward()
    return m.call_count, x.grad


@pytest.mark.parametrize('patch_target', [
    lambda: (chainer.functions.math.basic_math.Add, 'forward'),
    lambda: (chainer.functions.math.basic_math.Add, 'check_type_forward'),
    lambda: (chainer.functions.math.basic_math, '_preprocess_rhs'),
], ids=['Add.forward', 'Add.check_type_forward', '_preprocess_rhs'])
def test_gradient_sum_calls_a_mocked_add_node_as_stock(patch_target):
    stock, patched = run_both(lambda: _sum_calls(patch_target))
    assert stock[0] >= 2    # the forward's add and the gradient sum
    assert_same(stock, patched)


def test_gradient_sum_calls_a_mocked_f_add_as_stock():
    def fn():
        x = chainer.Variable(numpy.ones(2, numpy.float32))
        calls = []
        add = chainer.functions.add

        def spy(*xs):
            calls.append(len(xs))
            return add(*xs)

        with mock.patch('chainer.functions.add', spy):
            F.sum(x * 2.0 + x * 3.0).backward()
        return calls, x.grad

    stock, patched = run_both(fn)
    assert stock[0] == [2]
    assert_same(stock, patched)


# -- gradient sums: the bits of stock's out-of-place sums -------------------

_NAN = numpy.float32(numpy.nan)


@pytest.mark.parametrize('signs', [(1, -1, -1), (-1, 1, 1), (1, 1, -1)])
@pytest.mark.parametrize('size', [1, 3, 17])
def test_gradient_sum_keeps_stocks_nan(signs, size):
    # x's gradient is the sum of three NaNs: NumPy's in-place add on few
    # elements keeps the second operand's NaN, the out-of-place one (stock's
    # F.add) the first's.
    def fn():
        x = chainer.Variable(numpy.zeros(size, numpy.float32))
        loss = sum(F.sum(x * numpy.full(size, s * _NAN, numpy.float32))
                   for s in signs)
        loss.backward()
        return x.grad.view(numpy.uint32)
    check_same(fn)


@pytest.mark.parametrize('order', ['C', 'F'])
def test_gradient_sum_has_stocks_layout(order):
    def fn():
        x = chainer.Variable(numpy.ones((2, 1, 3), numpy.float32, order=order))
        w = chainer.Variable(numpy.ones((2, 1, 3), numpy.float32, order='F'))
        loss = F.sum(x * w) + F.sum(x * 2.0) + F.sum(w * x)
        loss.backward()
        return x.grad.strides, w.grad.strides, x.grad, w.grad
    check_same(fn)


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
@pytest.mark.parametrize('size', [1, 5])
@pytest.mark.parametrize('nan', [False, True])
def test_gradient_sums_same_bits_as_stock(dtype, size, nan):
    # A gradient summed from three uses, in place where that leaves stock's
    # bits; with NaNs of both signs meeting, whose sum keeps one of them.
    def fn():
        x = chainer.Variable(numpy.linspace(-1, 1, size).astype(dtype))
        ks = (0.5, numpy.nan, -numpy.nan) if nan else (0.5, 2.0, -3.0)
        ys = [x * k for k in ks]
        loss = F.sum(ys[0] + ys[1]) + F.sum(ys[2])
        loss.backward()
        return x.grad
    check_same(fn)


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('size', [1, 3])
@pytest.mark.parametrize('nan', [False, True])
def test_misaligned_gradient_summed_as_stock(dtype, size, nan):
    # h's gradients arrive as 2g, 3g, then the output's misaligned g itself
    # (passed through two additions, whose node has h's rank plus one and
    # is reached last): the sum owned by the table meets a misaligned
    # operand, whose items are not to be read as C numbers (a one-element
    # one is checked for NaNs).
    def fn():
        x = chainer.Variable(numpy.linspace(-1, 1, size).astype(dtype))
        z = chainer.Variable(numpy.zeros(size, dtype))
        h = x * 1.0
        y = (h * 2.0 + h * 3.0) + ((h + z) + z)
        g = numpy.full(size, numpy.nan if nan else 0.25, dtype)
        y.grad = misaligned(g)
        assert not y.grad.flags.aligned
        y.backward()
        return x.grad, h.grad, z.grad
    check_same(fn)


def test_leaf_old_style_check_calls_a_mocked_method_as_stock():
    # Stock asks each leaf node for its old-style check when the table
    # first meets it; a mock on the class sees every one of those calls.
    def fn():
        original = chainer.variable.VariableNode._check_old_style_gradient
        with mock.patch.object(chainer.variable.VariableNode,
                               '_check_old_style_gradient',
                               autospec=True, side_effect=original) as m:
            link = L.Linear(4, 3)
            x = _v(2, 4)
            F.sum(link(x) * x[:, :3]).backward()
        return m.call_count, _grads(link), x.grad
    stock, _ = check_same(fn)
    assert stock[0] == 3
