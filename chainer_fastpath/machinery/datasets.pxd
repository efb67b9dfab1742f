cdef object tuple_item(object self, object index)
cdef bint item_is_compiled(object cls)
cdef list rows_of(object dataset, object indices)
