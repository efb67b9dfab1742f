"""What a FunctionNode's stock ``backward`` reads, read directly: its
retained inputs and outputs (``get_retained_inputs`` /
``get_retained_outputs``) and its gradients' arrays. Each function returns
None where stock would see something a compiled backward leaves to it (a
missing array, a dead output node, an array that is not NumPy's)."""
import numpy

cdef type _ndarray = numpy.ndarray


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
