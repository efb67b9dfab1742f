cdef object array_of(object node)
cdef bint requires_grad_of(object node) except -1
cdef list retained_inputs(object func, list arrays)
cdef bint retained_inputs_require_grad(object func) except -1
cdef object retained_output(object func)
cdef object float_operand(object func, object gy)
cdef list float_operands(object func, object gy, bint same_shape)
cdef tuple activation_inputs(object func, tuple grad_outputs)
cdef tuple activation_grad(object y_node, object gy_var, object gx)
