# cython: boundscheck=True, wraparound=True
"""Compiled ``Permutate``: forward and backward on NumPy arrays (the
batch reordering of ``NStepRNN`` links' states)."""
import numpy

from chainer.functions.array import permutate

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport grad_array, grad_requires_grad
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)

cdef type _ndarray = numpy.ndarray
cdef object _empty_like = numpy.empty_like
cdef object _arange = numpy.arange
cdef object _SLICE = slice(None)


cdef object _permuted(object x, object indices, object axis, object inv):
    """What ``Permutate(indices, axis, inv).forward((x,))`` returns outside
    debug mode, for an ndarray ``x``, 1-D integer ``indices``, an int axis
    and a bool ``inv``; None for anything else. NumPy's indexing errors
    (an index out of range) are raised as stock's calls raise them."""
    if (type(x) is not _ndarray or type(indices) is not _ndarray
            or type(axis) is not int or type(inv) is not bool
            or indices.ndim != 1 or indices.dtype.kind != 'i'):
        return None
    if x.size == 0 and indices.size != 0:
        # An index out of range into an empty result warns (NumPy's
        # DeprecationWarning) from the line that indexes: stock's.
        return None
    if inv:
        # _inverse_indices: r[indices] = arange(len(indices)).
        r = _empty_like(indices)
        r[indices] = _arange(len(indices))
        indices = r
    # A negative axis multiplies to no slice: stock then permutes axis 0.
    return x[(_SLICE,) * axis + (indices,)]


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Permutate.forward -> _permutate (debug mode, which checks the
    # indices, never reaches a compiled forward).
    if len(inputs) != 1:
        return NOT_HANDLED
    y = _permuted(inputs[0], node.indices, node.axis, node.inv)
    if y is None:
        return NOT_HANDLED
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Permutate.backward: Permutate(indices, axis, not inv) applied to the
    # gradient (its type check and compiled forward run detached).
    g_var = grad_outputs[0]
    g = grad_array(g_var)
    if g is None or type(func.inv) is not bool:
        return NOT_HANDLED
    node = permutate.Permutate(func.indices, func.axis, not func.inv)
    return apply_detached(node, (g,), grad_requires_grad(g_var))


ENTRIES = (
    forward_callees(compiled(
        permutate.Permutate, _forward, ('forward', '_permutate'),
        _backward, backward_callees=(
            (permutate.Permutate, '__init__'),
            (permutate.Permutate, 'check_type_forward'),
            (permutate.Permutate, 'forward'),
            (permutate.Permutate, '_permutate'),
            (permutate, '_inverse_indices')),
        type_check=('axis',)), ((permutate, '_inverse_indices'),)),
)
