cdef int collect_params(object link, list out) except -1
