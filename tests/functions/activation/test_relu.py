"""F.relu (``ReLU``) and its gradient node, stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.activation import relu

import chainer_fastpath
from chainer_fastpath.testing import (
    applied, check_same, gradients, special_variable as _specials,
    variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests
from chainer_fastpath.functions.activation.relu import grad_kernel

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'relu': lambda: (F.relu, [_v(4, 3)]),
    'specials': lambda: (F.relu, [_specials((5, 7))]),
    'specials_float64': lambda: (F.relu, [_specials((9,), numpy.float64)]),
    'specials_float16': lambda: (F.relu, [_specials((9,), numpy.float16)]),
    'specials_0d': lambda: (F.relu, [_specials(())]),
    'specials_strided': lambda: (F.relu, [_specials((11,), take=True)]),
    'transposed': lambda: (F.relu, [chainer.Variable(_v(3, 4).array.T)]),
    'empty': lambda: (F.relu, [_v(0, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'relu': lambda d: applied(F.relu, _v(3, 4, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['relu']))


@pytest.mark.parametrize('name', ['forward_cpu'])
def test_mocked_method_of_the_gradient_node_is_called(name, mock_is_called):
    # The backward applies ReLUGrad2: a spy on it is called, stock and
    # patched.
    reasons = mock_is_called(relu.ReLUGrad2, name, lambda: gradients(
        BACKWARD_CASES['relu'], numpy.float32))
    assert reasons == {'patched or mocked method': 1}


def test_relu_forward_cpu_mocked_on_the_instance_is_called():
    chainer_fastpath.enable()
    node = relu.ReLU()
    calls = []

    def forward_cpu(inputs):
        calls.append(1)
        return inputs[0] * 3,

    node.forward_cpu = forward_cpu
    y, = node.apply((numpy.ones(2, numpy.float32),))
    assert calls == [1]
    numpy.testing.assert_array_equal(y.array, [3, 3])


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(relu.ReLU, lambda: F.relu(x))


# -- the gradient's kernels --------------------------------------------------

def _laid_out(layout, shape, dtype):
    """Values of every kind (NaN, infinities, signed zeros, subnormals,
    normals) in an array of ``shape`` laid out as ``layout`` says: 'c',
    'last' (axis 1 last in memory, as a convolution's output), 'reversed'
    (a transpose), 'padded' (an inner window, as a convolution's input
    gradient)."""
    nd = len(shape)
    if layout == 'last':
        order = (0,) + tuple(range(2, nd)) + (1,)
    elif layout == 'reversed':
        order = tuple(reversed(range(nd)))
    else:
        order = tuple(range(nd))
    mem = tuple(shape[k] for k in order)
    if layout == 'padded':
        mem = mem[:2] + tuple(n + 2 for n in mem[2:])
    a = _specials(mem, dtype).array.transpose(numpy.argsort(order))
    if layout == 'padded':
        a = a[(slice(None),) * 2 + (slice(1, -1),) * (nd - 2)]
    return a


LAYOUTS = ['c', 'last', 'reversed', 'padded']


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('shape', [(3, 4), (2, 3, 4, 5), (8, 16, 9, 9),
                                   (4, 1, 40, 40), (2, 64, 1, 64)], ids=str)
@pytest.mark.parametrize('y_layout', LAYOUTS)
@pytest.mark.parametrize('gy_layout', LAYOUTS)
def test_grad_kernel_is_numpys_product(gy_layout, y_layout, shape, dtype):
    # Values, strides and the flags a NumPy call raises, where the kernel
    # runs; the differential tests below say what the node does with them.
    y = _laid_out(y_layout, shape, dtype)
    gy = _laid_out(gy_layout, shape, dtype)
    gx, raised = grad_kernel(gy, y)
    same = gy_layout == y_layout
    dense = y.flags.c_contiguous or (
        y_layout in ('last', 'reversed') and 1 not in shape)
    if (same and (y_layout == 'c' or dense)) or (
            gy.size >= 4096 and dense):
        assert gx is not None
    if gx is None:
        return
    with numpy.errstate(all='ignore'):
        expected = gy * (y > 0)
    assert gx.strides == expected.strides
    assert gx.tobytes(order='A') == expected.tobytes(order='A')
    with numpy.errstate(all='raise'):
        try:
            gy * (y > 0)
        except FloatingPointError:
            assert raised
        else:
            assert not raised


@pytest.mark.parametrize('mode', ['ignore', 'warn', 'raise'])
@pytest.mark.parametrize('x_layout, gy_layout', [
    ('c', 'c'), ('last', 'last'), ('last', 'c'), ('last', 'padded'),
    ('reversed', 'c')])
def test_backward_of_any_layout_as_stock(x_layout, gy_layout, mode):
    def fn():
        x = chainer.Variable(_laid_out(x_layout, (8, 16, 6, 6),
                                       numpy.float32))
        gy = _laid_out(gy_layout, (8, 16, 6, 6), numpy.float32)
        y = F.relu(x)
        y.grad = gy

        def backward():
            y.backward()
            return x.grad, x.grad.strides
        with numpy.errstate(all=mode):
            return warned(backward)
    check_same(fn)
