cdef tuple grad_operands(object func, tuple grad_outputs)
cdef object bias_grad(object gy, bint requires_grad)
cdef tuple grad_callees()
