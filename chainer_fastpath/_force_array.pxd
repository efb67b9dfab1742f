cdef object forced(object y)
