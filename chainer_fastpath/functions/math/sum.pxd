cdef object sum_middle(object x, object axis, bint keepdims)
