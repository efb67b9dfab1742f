cdef class StockMethods:
    cdef readonly object cls    # a class (of any metaclass)
    cdef readonly tuple names
    cdef readonly tuple originals
    cdef unsigned int _version
    cdef bint _functions
    cdef tuple _shadowable

    cdef bint on_class(self) except -1
    cdef bint found_by(self, object obj) except -1


cdef bint method_is(object obj, str name, object original)
cdef unsigned int type_version(object cls)
