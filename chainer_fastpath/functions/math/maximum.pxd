cdef object extremum_forward(object node, tuple inputs, object ufunc)
cdef tuple extremum_operands(object func, tuple grad_outputs)
cdef object summed_grads(object gy_var, object gx1, object gx2, object x1,
                         object x2)
