# cython: boundscheck=True, wraparound=True
"""Compiled ``Sigmoid``: forward and backward on NumPy arrays, and
``F.sigmoid``.

Each NumPy operation that may raise a floating-point exception runs with
NumPy's error handling off (``_fpe``); where NumPy would act on one, the
node's own code runs.
"""
import numpy

import chainer
import chainer.functions
from chainer.functions.activation import sigmoid

from chainer_fastpath._core._attrs cimport retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet1
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath._core._retained cimport (
    activation_grad, activation_inputs, array_of)
from chainer_fastpath._core._ufunc_loop cimport (
    Constant, FloatLoops, UfuncLoop, add_loop, multiply_loop, subtract_loop)
from chainer_fastpath._core._ndarray cimport cfp_typenum
from chainer_fastpath._runtime._public cimport Public

cdef type _ndarray = numpy.ndarray
cdef object _tanh = numpy.tanh
cdef FloatLoops _tanh_loops = FloatLoops(numpy.tanh)
cdef object _utils = chainer.utils
cdef Constant _HALF = Constant(0.5)
cdef Constant _ONE = Constant(1)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # FunctionNode.forward -> Sigmoid.forward_cpu.
    assert len(inputs) > 0
    x = inputs[0]
    half = _HALF.like(x)
    cdef int raised = 0
    t = multiply_loop.quiet(x, half, &raised)
    # tanh of that fresh array, in place where its loop can run.
    cdef UfuncLoop tanh = (_tanh_loops.for_type(cfp_typenum(t))
                           if type(t) is _ndarray else None)
    if tanh is None or not tanh.unary_into(t, t, &raised):
        t = quiet1(_tanh, t, &raised)
    t = add_loop.quiet(multiply_loop.quiet(t, half, &raised), half,
                       &raised)
    if acts(raised):
        return NOT_HANDLED
    y = _utils.force_array(t)
    retain_outputs(node, (0,))
    if node is not None:
        node._use_cudnn = False
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Sigmoid.backward: SigmoidGrad((x,)).apply((y, gy)), whose type check
    # asks for float y and gy and whose forward_cpu is gy * y * (1 - y),
    # 1 in y's dtype.
    args = activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    y_node, gy_var, gy = args
    y = array_of(y_node)
    if y.dtype.kind != 'f' or gy.dtype.kind != 'f':
        return NOT_HANDLED
    cdef int raised = 0
    gx = multiply_loop.quiet(gy, y, &raised)
    gx = multiply_loop.quiet(
        gx, subtract_loop.quiet(_ONE.like(y), y, &raised), &raised)
    if acts(raised):
        return NOT_HANDLED
    return activation_grad(y_node, gy_var, gx)


# -- F.sigmoid -------------------------------------------------------------

TARGETS = ((sigmoid, 'sigmoid'), (chainer.functions, 'sigmoid'))

cdef Public _sigmoid = Public('sigmoid.sigmoid', sigmoid, ('x',), ())


def bind(owner, attribute, original):
    """Keeps stock's ``sigmoid`` to fall back to; returns its replacement."""
    return _sigmoid.bind(sigmoid_, original)


def sigmoid_(*args, **kwargs):
    """Drop-in for ``F.sigmoid``: ``y, = Sigmoid().apply((x,))``."""
    return _sigmoid.call_new('Sigmoid', args, kwargs)


ENTRIES = (
    nodeless(compiled(sigmoid.Sigmoid,
                      _forward, ('forward', 'forward_cpu', 'retain_outputs'),
                      _backward, backward_callees=(
                          (sigmoid.SigmoidGrad, '__init__'),
                          (sigmoid.SigmoidGrad, 'check_type_forward'),
                          (sigmoid.SigmoidGrad, 'forward'),
                          (sigmoid.SigmoidGrad, 'forward_cpu'),
                          (sigmoid.SigmoidGrad, 'retain_inputs')),
                      type_check=())),
)
