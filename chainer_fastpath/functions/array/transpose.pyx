# cython: boundscheck=True, wraparound=True
"""Compiled ``Transpose``: forward and backward on NumPy arrays."""
from chainer.functions.array import transpose

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled


cdef bint _plain_axes(object axes):
    """Whether ``axes`` is None or a tuple of ints: NumPy takes them as
    stock passes them, and raises for them what it raises there."""
    if axes is None:
        return True
    if type(axes) is not tuple:
        return False
    for axis in axes:
        if type(axis) is not int:
            return False
    return True


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Transpose.forward: x.transpose(self.axes).
    axes = node.axes
    if len(inputs) != 1 or not _plain_axes(axes):
        return NOT_HANDLED
    return inputs[0].transpose(axes),


cdef object _inverse(tuple axes, Py_ssize_t ndim):
    """``tuple(numpy.argsort([ax % n for ax in axes]))`` as ints, where
    those are a permutation of ``range(ndim)``; else None."""
    cdef Py_ssize_t n = len(axes), i, p
    if n != ndim:
        return None
    inverse = [None] * n
    for i in range(n):
        p = <Py_ssize_t>axes[i] % n
        if inverse[p] is not None:
            return None
        inverse[p] = i
    return tuple(inverse)


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Transpose.backward: Transpose(inv_axes).apply(grad_outputs), inv_axes
    # the argsort of the axes taken modulo their number (None or () as
    # they are), a node whose check only counts the inputs.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    axes = func.axes
    if gy is None or not _plain_axes(axes):
        return NOT_HANDLED
    if axes:
        for axis in axes:
            if not -2 ** 62 < axis < 2 ** 62:
                return NOT_HANDLED
        axes = _inverse(axes, gy.ndim)
        if axes is None:
            return NOT_HANDLED
    return (new_grad(gy.transpose(axes), grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(transpose.Transpose, _forward, ('forward',),
             _backward, backward_callees=(
                 (transpose.Transpose, '__init__'),
                 (transpose.Transpose, 'check_type_forward'),
                 (transpose.Transpose, 'forward')),
             type_check=()),
)
