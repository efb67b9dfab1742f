cdef class StockWarning:
    cdef readonly object filename
    cdef readonly int lineno
    cdef object module_globals
    cdef object message
    cdef object category

    cdef int warn(self) except -1
