cdef object select_middle(object x, object axis, bint keepdims,
                          bint largest)
