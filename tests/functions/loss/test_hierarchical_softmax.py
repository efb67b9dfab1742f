"""L.BinaryHierarchicalSoftmax (the old-style
``BinaryHierarchicalSoftmaxFunction`` through ``FunctionAdapter``), stock vs
patched."""
import collections
import numpy
import pytest

import chainer
import chainer.links as L
from chainer.links.loss import hierarchical_softmax

from chainer_fastpath.testing import (
    FLOAT_DTYPES, check_same, error_of, gradients, misaligned)
from chainer_fastpath.testing.cases import function_tests

HSM = hierarchical_softmax.BinaryHierarchicalSoftmaxFunction
N_VOCAB = 30


def _link(dtype, units, n_vocab=N_VOCAB, scale=1.0):
    counts = collections.Counter({
        i: int(c) for i, c in enumerate(
            numpy.random.randint(1, 100, n_vocab))})
    tree = L.BinaryHierarchicalSoftmax.create_huffman_tree(counts)
    with chainer.using_config('dtype', dtype):
        link = L.BinaryHierarchicalSoftmax(units, tree, dtype=dtype)
    link.W.array[...] = numpy.random.uniform(-scale, scale, link.W.shape)
    return link


def _inputs(dtype, rows, units, layout='c', scale=1.0, n_vocab=N_VOCAB):
    x = numpy.random.uniform(-scale, scale, (rows, units)).astype(dtype)
    t = numpy.random.randint(0, n_vocab, rows * 2).astype(numpy.int32)
    if layout == 'f':
        x = numpy.asfortranarray(x)
    elif layout == 'strided':
        x = numpy.random.uniform(-scale, scale, (rows, units * 2)).astype(
            dtype)[:, ::2]
    return x, t[::2] if layout == 'strided' else t[:rows]


def _build(units, rows=20, layout='c', scale=1.0, x_grad=True):
    """A gradient case: ``(inputs, loss)`` of the link on a random batch."""
    def build(dtype):
        link = _link(dtype, units, scale=scale)
        if layout == 'f':
            link.W.array = numpy.asfortranarray(link.W.array)
        x, t = _inputs(dtype, rows, units, layout, scale)
        x = chainer.Variable(x, requires_grad=x_grad)
        return (x, link.W), link(x, t)
    return build


def _apply(units, rows=10):
    """An apply case: the link and its inputs ``(x, t)``."""
    def build():
        link = _link(numpy.float32, units)
        x, t = _inputs(numpy.float32, rows, units)
        return link, [chainer.Variable(x), t]
    return build


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'units7': _apply(7),
    'one_row': _apply(5, rows=1),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = CASES = {
    'units1': _build(1),
    'units7': _build(7),
    'units100': _build(100, rows=50),
    'one_row': _build(5, rows=1),
    'no_rows': _build(5, rows=0),
    'f_order': _build(6, layout='f'),
    'strided': _build(6, layout='strided'),
    'w_grad_only': _build(4, x_grad=False),
}


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
@pytest.mark.parametrize('case', sorted(CASES))
def test_loss_and_gradients_same_as_stock(case, dtype, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            inputs, loss = CASES[case](dtype)
            loss.grad = numpy.random.uniform(-1, 1, ()).astype(dtype)
            loss.backward()
            gs = [x.grad_var for x in inputs if x.grad_var is not None]
            return (loss.array, [x.grad for x in inputs],
                    [g.requires_grad for g in gs],
                    [g.node._old_style_grad_generator for g in gs])
    check_same(fn)


@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
def test_overflows_ignored_same_as_stock(dtype, patched_stats):
    # exp(wxy) overflows to inf (g is then -0.0 or 0.0) and logaddexp's
    # terms are large: with errstate ignoring it, the compiled code runs.
    def fn():
        with numpy.errstate(all='ignore'):
            return gradients(_build(3, scale=60.0), dtype)
    check_same(fn)
    if dtype != numpy.float16:
        assert patched_stats(fn)['fallback'] == {}


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_flags_of_the_dot_products_same_as_stock(dtype, patched_stats):
    # w.dot(x) overflows inside BLAS, where stock's dot does not act on the
    # flag; the NumPy calls after it raise no overflow on the infinities and
    # NaNs. The compiled code tests the flags once per call, so it leaves
    # such a call to stock: no error either way, the same values.
    scale = {numpy.float32: 1e20, numpy.float64: 1e160}[dtype]

    def fn():
        with numpy.errstate(over='raise', invalid='ignore'):
            return gradients(_build(8, scale=scale), dtype)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: BinaryHierarchicalSoftmaxFunction': 1}


def test_forward_without_backprop_same_as_stock():
    def fn():
        inputs, _ = CASES['units7'](numpy.float32)
        link = _link(numpy.float32, 7)
        x, t = _inputs(numpy.float32, 10, 7)
        with chainer.no_backprop_mode():
            y = link(x, t)
        return y.array, y.creator is None
    check_same(fn)


def test_single_leaf_tree_same_as_stock():
    def fn():
        link = L.BinaryHierarchicalSoftmax(3, 0)
        x = chainer.Variable(numpy.ones((4, 3), numpy.float32))
        loss = link(x, numpy.zeros(4, numpy.int32))
        loss.backward()
        return loss.array, x.grad, link.W.grad
    check_same(fn)


def test_compiled_instead_of_the_python_loops(compiled_instead):
    def fn():
        gradients(CASES['units7'], numpy.float32)
    for function in (HSM._forward_cpu_one, HSM._backward_cpu_one,
                     HSM.forward_cpu, HSM.backward_cpu):
        compiled_instead(fn, function)


# An old-style Function: its gradients have no graph (no second order).
globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=[]))


def test_float16_is_left_to_stock(patched_stats):
    counts = patched_stats(lambda: gradients(CASES['units7'],
                                             numpy.float16))
    assert counts['fallback'] == {'case left to stock: '
                                  'BinaryHierarchicalSoftmaxFunction': 1}


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_misaligned_loss_gradient_is_stocks(dtype, patched_stats):
    # The compiled backward reads the 0-d loss gradient as a C float:
    # misaligned (an undefined load in C), it goes to stock.
    def fn():
        inputs, loss = CASES['units7'](dtype)
        loss.grad = misaligned(numpy.asarray(0.75, dtype))
        assert not loss.grad.flags.aligned
        loss.backward()
        return loss.array, [x.grad for x in inputs]
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: BinaryHierarchicalSoftmaxFunction': 1}


@pytest.mark.parametrize('owner, name', [
    (HSM, 'forward'), (HSM, 'forward_cpu'), (HSM, '_forward_cpu_one'),
    (HSM, 'backward'), (HSM, 'backward_cpu'), (HSM, '_backward_cpu_one'),
    (chainer.FunctionAdapter, 'forward'),
    (chainer.FunctionAdapter, 'backward'),
])
def test_mock_is_called(mock_is_called, owner, name):
    mock_is_called(owner, name,
                   lambda: gradients(CASES['units7'], numpy.float32))


def test_mock_on_the_instance_is_called():
    def fn():
        link = _link(numpy.float32, 4)
        calls = []
        original = link._func._backward_cpu_one

        def spy(*args):
            calls.append(1)
            return original(*args)
        link._func._backward_cpu_one = spy
        x, t = _inputs(numpy.float32, 5, 4)
        loss = link(chainer.Variable(x), t)
        loss.backward()
        return len(calls), link.W.grad
    stock, patched = check_same(fn)
    assert stock[0] == 5


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('bad', [
    'label_too_large', 'label_negative', 'float_labels', 'x_3d',
    'x_float16_w_float32', 'units_mismatch', 'path_node_too_large',
    'path_node_negative', 'begins_past_paths'])
def test_bad_input_same_as_stock(bad, type_check):
    def fn():
        link = _link(numpy.float32, 4)
        x, t = _inputs(numpy.float32, 6, 4)
        tree = link._func
        if bad == 'path_node_too_large':
            # a node of the third sample's path past W's rows
            tree.paths[tree.begins[t[2]] + 1] = len(link.W.array) + 2
        elif bad == 'path_node_negative':
            tree.paths[tree.begins[t[2]]] = -1
        elif bad == 'begins_past_paths':
            tree.begins[t[2] + 1] = len(tree.paths) + 4
        elif bad == 'label_too_large':
            t[2] = N_VOCAB + 5
        elif bad == 'label_negative':
            t[2] = -1
        elif bad == 'float_labels':
            t = t.astype(numpy.float32)
        elif bad == 'x_3d':
            x = x.reshape(6, 2, 2)
        elif bad == 'x_float16_w_float32':
            x = x.astype(numpy.float16)
        elif bad == 'units_mismatch':
            x = x[:, :3]
        with chainer.using_config('type_check', type_check):
            xv = chainer.Variable(x)
            results = []

            def run():
                loss = link(xv, t)
                results.append(loss.array)
                loss.backward()
            return error_of(run), results, xv.grad, link.W.grad
    check_same(fn)


@pytest.mark.parametrize('mode', ['raise', 'call', 'warn'])
def test_errstate_acts_as_stock(errstate_acts_as_stock, mode):
    # exp overflows in backward and logaddexp's terms in forward for
    # inputs this large: stock's per-sample NumPy calls warn, raise or call.
    errstate_acts_as_stock(
        lambda: gradients(_build(3, scale=200.0), numpy.float32), mode)
