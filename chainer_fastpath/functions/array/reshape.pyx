# cython: boundscheck=True, wraparound=True
"""Compiled ``Reshape``: forward and backward on NumPy arrays."""
from chainer.functions.array import reshape

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled


cdef object reshape_variable(object gy_var, object gy, object shape):
    """``F.reshape(gy_var, shape)``, ``gy`` being ``gy_var``'s array: the
    Variable itself where the shapes are equal (a list never is), else a
    Reshape node's output; NOT_HANDLED where that node's type check (sizes
    equal) would fail."""
    if gy.shape == shape:
        return gy_var
    size = 1
    for s in shape:
        size *= s
    if gy.size != size:
        return NOT_HANDLED
    return new_grad(gy.reshape(shape), grad_requires_grad(gy_var))


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Reshape.forward.
    if len(inputs) != 1:
        return NOT_HANDLED
    return inputs[0].reshape(node.shape),


cdef object reshape_grad(object func, tuple indexes, tuple grad_outputs):
    """``Reshape.backward`` and ``ExpandDims.backward``: ``F.reshape(gy,
    x.shape)``; or NOT_HANDLED."""
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    gx = reshape_variable(gy_var, gy, func.inputs[0].shape)
    if gx is NOT_HANDLED:
        return NOT_HANDLED
    return gx,


ENTRIES = (
    compiled(reshape.Reshape, _forward, ('forward',),
             reshape_grad, backward_callees=(
                 (reshape, 'reshape'),
                 (reshape.Reshape, '__init__'),
                 (reshape.Reshape, 'check_type_forward'),
                 (reshape.Reshape, 'forward')),
             type_check=('shape', '_cnt')),
)
