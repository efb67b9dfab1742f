cdef class Grad:
    # Either ``var`` is None and ``array`` (a NumPy array) and
    # ``requires_grad`` are the gradient, or ``var`` is the Variable made
    # for it, which is then the gradient (``array`` None).
    cdef object array
    cdef bint requires_grad
    cdef object var


cdef object new_grad(object array, bint requires_grad)
cdef object grad_array(object g)
cdef object grad_raw(object g)
cdef bint grad_requires_grad(object g) except -1
cdef object grad_layout(object g)
cdef object as_variable(object g)
cdef tuple as_variables(tuple gs)
