cdef class Signature:
    cdef readonly tuple names
    cdef readonly tuple defaults
    cdef readonly str mismatch

    cdef tuple bind(self, tuple args, dict kwargs)
