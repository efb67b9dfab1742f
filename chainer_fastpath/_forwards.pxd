from chainer_fastpath._config cimport ConfigView

cdef object NOT_COMPILED
cdef object run_forward(object node, tuple in_data, ConfigView config)
cdef object lstm_grad(tuple inputs)
cdef bint embed_id_grad_into(object acc, object w_shape, object ignore,
                             object x, object gy) except -1
cdef bint adds_zeros_exactly(object acc) except -1
