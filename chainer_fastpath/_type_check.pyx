"""``config.type_check`` for the fast path: stock's check, same errors."""


cdef int check_types(object node, tuple in_data) except -1:
    node._check_data_type_forward(in_data)
    return 0
