from chainer_fastpath._core._objects cimport node_data


cdef inline object array_of(object node):
    """``node.get_variable().raw_array``."""
    var = node._variable()
    if var is not None:
        return (<list>var._data)[0]
    return node_data(node)


cdef inline bint requires_grad_of(object node):
    """``node.get_variable().requires_grad``."""
    var = node._variable()
    if var is not None:
        return var._requires_grad
    return node.requires_grad


cdef object grad_array(object gy)
cdef list retained_inputs(object func, list arrays)
cdef bint retained_inputs_require_grad(object func) except -1
cdef object retained_output(object func)
cdef list float_operands(object func, object gy, bint same_shape)
cdef tuple activation_inputs(object func, tuple grad_outputs)
cdef tuple activation_grad(object y_node, object gy_var, object gx)
