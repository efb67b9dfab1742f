# cython: boundscheck=True, wraparound=True
"""Compiled ``Squeeze``: forward and backward on NumPy arrays."""
import numpy

import chainer.functions

from chainer.functions.array import reshape
from chainer.functions.array import squeeze

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport grad_array
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath.functions.array.reshape cimport reshape_variable

cdef object _squeeze = numpy.squeeze


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Squeeze.forward.
    if len(inputs) != 1:
        return NOT_HANDLED
    return _squeeze(inputs[0], node.axis),


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Squeeze.backward: gy.reshape(shape), shape gy's with a 1 put back at
    # each squeezed axis, a list: Variable.reshape applies a Reshape node
    # whatever the shapes.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    in_shape = func.inputs[0].shape
    axis = func.axis
    if axis is None:
        axes = [i for i, s in enumerate(in_shape) if s == 1]
    else:
        ndim = len(in_shape)
        axes = sorted([a + ndim if a < 0 else a for a in axis])
    shape = list(gy.shape)
    for a in axes:
        shape.insert(a, 1)
    return (reshape_variable(gy_var, gy, shape),)


ENTRIES = (
    compiled(squeeze.Squeeze, _forward, ('forward',),
             _backward, backward_callees=(
                 (squeeze, 'argone'),
                 (chainer.functions, 'reshape'),
                 (reshape.Reshape, '__init__'),
                 (reshape.Reshape, 'check_type_forward'),
                 (reshape.Reshape, 'forward'),
                 (reshape, '_count_unknown_dims')),
             type_check=('axis',)),
)
