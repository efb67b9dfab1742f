# cython: boundscheck=True, wraparound=True
"""Compiled ``Tanh``: forward and backward on NumPy arrays, and
``F.tanh``.

Each NumPy operation that may raise a floating-point exception runs with
NumPy's error handling off (``_fpe``); where NumPy would act on one, the
node's own code runs.
"""
import numpy

import chainer
import chainer.functions
from chainer.functions.activation import tanh

from chainer_fastpath._core._attrs cimport retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet1
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath._core._retained cimport (
    activation_grad, activation_inputs, array_of)
from chainer_fastpath._core._ufunc_loop cimport (
    Constant, FloatLoops, multiply_loop, subtract_loop)
from chainer_fastpath._runtime._public cimport Public

cdef object _np_tanh = numpy.tanh
cdef FloatLoops _tanh_loops = FloatLoops(numpy.tanh)
cdef object _utils = chainer.utils
cdef Constant _ONE = Constant(1)


cdef object _forward(object node, tuple x, ConfigView config):
    # FunctionNode.forward -> Tanh.forward_cpu.
    assert len(x) > 0
    cdef int raised = 0
    t = _tanh_loops.unary(x[0], &raised)
    if t is None:
        t = quiet1(_np_tanh, x[0], &raised)
    if acts(raised):
        return NOT_HANDLED
    y = _utils.force_array(t)
    retain_outputs(node, (0,))
    if node is not None:
        node._use_cudnn = False
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Tanh.backward: TanhGrad(x).apply((y, gy)), a node without a type
    # check whose forward_cpu is gy * (1 - y * y), 1 in y's dtype.
    args = activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    y_node, gy_var, gy = args
    y = array_of(y_node)
    cdef int raised = 0
    gx = subtract_loop.quiet(
        _ONE.like(y), multiply_loop.quiet(y, y, &raised), &raised)
    gx = multiply_loop.quiet(gy, gx, &raised)
    if acts(raised):
        return NOT_HANDLED
    return activation_grad(y_node, gy_var, gx)


# -- F.tanh ----------------------------------------------------------------

TARGETS = ((tanh, 'tanh'), (chainer.functions, 'tanh'))

cdef Public _tanh = Public('tanh.tanh', tanh, ('x',), ())


def bind(owner, attribute, original):
    """Keeps stock's ``tanh`` to fall back to; returns its replacement."""
    return _tanh.bind(tanh_, original)


def tanh_(*args, **kwargs):
    """Drop-in for ``F.tanh``: ``Tanh().apply((x,))[0]``."""
    return _tanh.call_new('Tanh', args, kwargs, False)


ENTRIES = (
    nodeless(compiled(tanh.Tanh,
                      _forward, ('forward', 'forward_cpu', 'retain_outputs'),
                      _backward, backward_callees=(
                          (tanh.TanhGrad, '__init__'),
                          (tanh.TanhGrad, 'check_type_forward'),
                          (tanh.TanhGrad, 'forward'),
                          (tanh.TanhGrad, 'forward_cpu'),
                          (tanh.TanhGrad, 'retain_inputs')),
                      type_check=())),
)
