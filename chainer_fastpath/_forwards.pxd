from chainer_fastpath._config cimport ConfigView

cdef object NOT_COMPILED
cdef object run_forward(object node, tuple in_data, ConfigView config)
cdef bint methods_unchanged(object node, type cls, tuple methods)
cdef object lstm_grad(tuple inputs)
