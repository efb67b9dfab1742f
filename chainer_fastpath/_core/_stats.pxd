cdef class EntryStats:
    cdef readonly str name
    cdef public Py_ssize_t fast
    cdef dict _fallbacks

    cpdef fallback(self, str reason)


cdef int python_ran(object cls, str part, str reason) except -1
