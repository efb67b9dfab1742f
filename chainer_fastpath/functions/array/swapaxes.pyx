# cython: boundscheck=True, wraparound=True
"""Compiled ``Swapaxes``: forward and backward on NumPy arrays."""
from chainer.functions.array import swapaxes

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Swapaxes.forward.
    # Axes other than ints (a numpy.bool_) may make NumPy warn: from
    # stock's frame, not the caller's.
    if (len(inputs) != 1 or type(node.axis1) is not int
            or type(node.axis2) is not int):
        return NOT_HANDLED
    return inputs[0].swapaxes(node.axis1, node.axis2),


cdef bint _in_range(object axis, Py_ssize_t ndim):
    return type(axis) is int and -ndim <= axis < ndim


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Swapaxes.backward: a Swapaxes node (its check only counts the
    # inputs) applied to gy; numpy's error for an axis out of range is
    # left to stock.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    axis1 = func.axis1
    axis2 = func.axis2
    if not (_in_range(axis1, gy.ndim) and _in_range(axis2, gy.ndim)):
        return NOT_HANDLED
    return (new_grad(gy.swapaxes(axis1, axis2), grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(swapaxes.Swapaxes, _forward, ('forward',),
             _backward, backward_callees=(
                 (swapaxes.Swapaxes, '__init__'),
                 (swapaxes.Swapaxes, 'check_type_forward'),
                 (swapaxes.Swapaxes, 'forward')),
             type_check=()),
)
