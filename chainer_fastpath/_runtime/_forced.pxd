cdef int install_force_array(object replacement,
                             bint ndarray_is_never_scalar) except -1
cdef object forced(object y)
cdef object forced_quietly(object ufunc, object a, object b=*,
                           object dtype=*)
