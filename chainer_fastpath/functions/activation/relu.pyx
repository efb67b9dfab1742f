# cython: boundscheck=True, wraparound=True
"""Compiled ``ReLU``: forward and backward on NumPy arrays, and
``F.relu``.

Each NumPy operation that may raise a floating-point exception runs with
NumPy's error handling off (``_fpe``); where NumPy would act on one, the
node's own code runs.
"""
import numpy

import chainer
import chainer.functions
from chainer.functions.activation import relu

from chainer_fastpath._core._attrs cimport retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet2
from chainer_fastpath._core._grads cimport grad_requires_grad, new_grad
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, cfp_typenum, numpy_struct_matches)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath._core._retained cimport activation_inputs, array_of
from chainer_fastpath._core._ufunc_loop cimport Binary
from chainer_fastpath._runtime._public cimport Public
from chainer_fastpath._runtime._forced cimport forced

cdef type _ndarray = numpy.ndarray
cdef object _maximum = numpy.maximum
cdef object _np_multiply = numpy.multiply
cdef object _utils = chainer.utils
cdef Binary _maximum_loop = Binary(_maximum)
# The 0 of ``maximum(x, 0, dtype=x.dtype)`` as NumPy casts it.
cdef object _ZERO32 = numpy.zeros((), numpy.float32)
cdef object _ZERO64 = numpy.zeros((), numpy.float64)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # FunctionNode.forward -> ReLU.forward_cpu, iDeep unavailable. NumPy's
    # maximum raises no floating-point exception, not even on a NaN (its
    # loop clears the flags).
    assert len(inputs) > 0
    x, = inputs
    cdef int raised = 0
    y = None
    if type(x) is _ndarray and numpy_struct_matches():
        num = cfp_typenum(x)
        if num == CFP_NPY_FLOAT or num == CFP_NPY_DOUBLE:
            y = _maximum_loop.call(
                x, _ZERO32 if num == CFP_NPY_FLOAT else _ZERO64, &raised)
    if y is None or acts(raised):
        y = _maximum(x, 0, dtype=x.dtype)
    retain_outputs(node, (0,))
    return forced(y),


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # ReLU.backward: ReLUGrad2(y).apply((gy,)), a node without a type check
    # whose forward_cpu (iDeep unavailable) is gy * (y > 0) cast to gy's
    # dtype.
    args = activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    y_node, gy_var, gy = args
    cdef int raised = 0
    gx = quiet2(_np_multiply, gy, array_of(y_node) > 0, &raised)
    if acts(raised):
        return NOT_HANDLED
    return (new_grad(_utils.force_array(gx, dtype=gy.dtype),
                     grad_requires_grad(gy_var)),)


# -- F.relu ------------------------------------------------------------------

TARGETS = ((relu, 'relu'), (chainer.functions, 'relu'))

cdef Public _relu = Public('relu.relu', relu, ('x',), ())


def bind(owner, attribute, original):
    """Keeps stock's ``relu`` to fall back to; returns its replacement."""
    return _relu.bind(relu_, original)


def relu_(*args, **kwargs):
    """Drop-in for ``F.relu``: ``y, = ReLU().apply((x,))``."""
    return _relu.call_new('ReLU', args, kwargs)


ENTRIES = (
    nodeless(compiled(relu.ReLU,
                      _forward, ('forward', 'forward_cpu', 'retain_outputs'),
                      _backward, backward_callees=(
                          (relu.ReLUGrad2, '__init__'),
                          (relu.ReLUGrad2, 'check_type_forward'),
                          (relu.ReLUGrad2, 'forward'),
                          (relu.ReLUGrad2, 'forward_cpu')),
                      type_check=())),
)
