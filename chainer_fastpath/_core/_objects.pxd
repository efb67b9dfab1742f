cdef object bare(type cls)
cdef object construct(object cls)
cdef object new_variable(object data, bint requires_grad, object creator,
                         object rank)
cdef object weak_ref(object obj)
cdef tuple untracked_refs(tuple refs)
cdef object node_data(object node)
cdef object dtype_of(object data)
cdef object shape_of(object data)
