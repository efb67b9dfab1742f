from chainer_fastpath._core._registry cimport Compiled

cdef int check_types(object node, tuple in_data) except -1
cdef bint passed_before(Compiled entry, tuple in_data) except -1
