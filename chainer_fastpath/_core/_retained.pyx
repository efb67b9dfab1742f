"""What a FunctionNode's stock ``backward`` reads, read directly: its
retained inputs and outputs (``get_retained_inputs`` /
``get_retained_outputs``) and its gradients' arrays. Each function returns
None where stock would see something a compiled backward leaves to it (a
missing array, a dead output node, an array that is not NumPy's)."""
import numpy

import chainer

from chainer_fastpath._core._objects cimport new_variable

cdef type _ndarray = numpy.ndarray
cdef object _utils = chainer.utils


cdef object grad_array(object gy):
    """The NumPy array of gradient Variable ``gy``, or None."""
    if gy is None:
        return None
    a = (<list>gy._data)[0]
    if type(a) is not _ndarray:
        return None
    return a


cdef list retained_inputs(object func, list arrays):
    """Appends the retained inputs' arrays to ``arrays``; returns it, or
    None where stock would see a missing one."""
    indexes = func._input_indexes_to_retain
    if indexes is None:
        return arrays
    inputs = func.inputs
    for i in indexes:
        node = inputs[i]
        if node_data(node) is None:
            return None
        a = array_of(node)
        if type(a) is not _ndarray:
            return None
        arrays.append(a)
    return arrays


cdef bint retained_inputs_require_grad(object func) except -1:
    indexes = func._input_indexes_to_retain
    if indexes is None:
        return False
    inputs = func.inputs
    for i in indexes:
        if requires_grad_of(inputs[i]):
            return True
    return False


cdef object retained_output(object func):
    """The retained output node, when it is output 0, the only one retained
    and still alive (a dead one makes stock rewire the graph); or None."""
    if func._output_indexes_to_retain != (0,):
        return None
    if func._retained_output_data is None:
        return None
    node = func.outputs[0]()
    if node is None:
        return None
    a = array_of(node)
    if type(a) is not _ndarray:
        return None
    return node


cdef list float_operands(object func, object gy, bint same_shape):
    """The arrays of ``func``'s retained inputs 0 and 1, where those are
    what it retains and they have the floating dtype of gradient ``gy``
    (and its shape, if ``same_shape``); else None."""
    if func._input_indexes_to_retain != (0, 1):
        return None
    xs = retained_inputs(func, [])
    dtype = gy.dtype
    if xs is None or dtype.kind != 'f':
        return None
    for a in xs:
        if a.dtype != dtype or (same_shape and a.shape != gy.shape):
            return None
    return xs


cdef tuple activation_inputs(object func, tuple grad_outputs):
    """``(y node, gy Variable, gy array)`` of an activation's backward, or
    None where stock is left to handle it (cuDNN, a missing output or
    gradient)."""
    if func._use_cudnn:
        return None
    gy_var = grad_outputs[0]
    y_node = retained_output(func)
    gy = grad_array(gy_var)
    if y_node is None or gy is None:
        return None
    return y_node, gy_var, gy


cdef tuple activation_grad(object y_node, object gy_var, object gx):
    """An activation's gradient ``gx`` as its gradient node returns it,
    from output node ``y_node`` and output gradient ``gy_var``."""
    return (new_variable(_utils.force_array(gx),
                         requires_grad_of(y_node) or gy_var._requires_grad,
                         None, 0),)
