"""What a FunctionNode's stock ``backward`` reads, read directly: its
retained inputs and outputs (``get_retained_inputs`` /
``get_retained_outputs``) and its gradients' arrays. Each function returns
None where stock would see something a compiled backward leaves to it (a
missing array, a dead output node, an array that is not NumPy's)."""
import numpy

import chainer

from chainer_fastpath._core import _attrs

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, get_site)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._objects cimport node_data

cdef type _ndarray = numpy.ndarray
cdef type _VariableNode = chainer.variable.VariableNode
cdef object _utils = chainer.utils

cfp_attr_enable(_attrs.FAST)

# Plain instance attributes, read through the caches of ``_attrs.h``.
cdef cfp_attr _get_variable = get_site('_variable')
cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _get_requires_grad = get_site('_requires_grad')
cdef cfp_attr _get_inputs = get_site('inputs')
cdef cfp_attr _get_outputs = get_site('outputs')
cdef cfp_attr _get_input_retained = get_site('_input_indexes_to_retain')
cdef cfp_attr _get_output_retained = get_site('_output_indexes_to_retain')
cdef cfp_attr _get_retained_output_data = get_site('_retained_output_data')
cdef cfp_attr _get_use_cudnn = get_site('_use_cudnn')


cdef object array_of(object node):
    """``node.get_variable().raw_array``."""
    var = get(node, &_get_variable)()
    if var is not None:
        return (<list>get(var, &_get_data))[0]
    return node_data(node)


cdef bint requires_grad_of(object node) except -1:
    """``node.get_variable().requires_grad``."""
    var = get(node, &_get_variable)()
    if var is not None:
        return get(var, &_get_requires_grad)
    if type(node) is _VariableNode:
        # The property returns the attribute.
        return get(node, &_get_requires_grad)
    return node.requires_grad


cdef list retained_inputs(object func, list arrays):
    """Appends the retained inputs' arrays to ``arrays``; returns it, or
    None where stock would see a missing one."""
    indexes = get(func, &_get_input_retained)
    if indexes is None:
        return arrays
    inputs = get(func, &_get_inputs)
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
    indexes = get(func, &_get_input_retained)
    if indexes is None:
        return False
    inputs = get(func, &_get_inputs)
    for i in indexes:
        if requires_grad_of(inputs[i]):
            return True
    return False


cdef object retained_output(object func):
    """The retained output node, when it is output 0, the only one retained
    and still alive (a dead one makes stock rewire the graph); or None."""
    if get(func, &_get_output_retained) != (0,):
        return None
    if get(func, &_get_retained_output_data) is None:
        return None
    node = get(func, &_get_outputs)[0]()
    if node is None:
        return None
    a = array_of(node)
    if type(a) is not _ndarray:
        return None
    return node


cdef object float_operand(object func, object gy):
    """The array of ``func``'s retained input 0, where that alone is what
    it retains and it is an ndarray of the floating dtype and the shape of
    gradient ``gy`` (an ndarray too); else None."""
    if get(func, &_get_input_retained) != (0,) or type(gy) is not _ndarray:
        return None
    xs = retained_inputs(func, [])
    if xs is None:
        return None
    x = xs[0]
    if (type(x) is not _ndarray or x.dtype.kind != 'f'
            or gy.dtype != x.dtype or gy.shape != x.shape):
        return None
    return x


cdef list float_operands(object func, object gy, bint same_shape):
    """The arrays of ``func``'s retained inputs 0 and 1, where those are
    what it retains and they have the floating dtype of gradient ``gy``
    (and its shape, if ``same_shape``); else None."""
    if get(func, &_get_input_retained) != (0, 1):
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
    """``(y node, gy, gy's array)`` of an activation's backward, or
    None where stock is left to handle it (cuDNN, a missing output or
    gradient)."""
    if get(func, &_get_use_cudnn):
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
    return (new_grad(_utils.force_array(gx),
                     requires_grad_of(y_node) or grad_requires_grad(gy_var)),)
