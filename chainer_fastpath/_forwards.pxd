from chainer_fastpath._config cimport ConfigView

cdef object NOT_COMPILED
cdef object run_forward(object node, tuple in_data, ConfigView config)
cdef object lstm_grad(tuple inputs)
