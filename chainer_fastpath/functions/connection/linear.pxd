cdef object linear_call(object x, object W, object b, object n_batch_axes)
