cdef bint gemv(int typenum, bint trans, const char *a, Py_ssize_t m,
               Py_ssize_t n, const char *v, Py_ssize_t v_stride,
               char *out) noexcept nogil
cdef object matrix_product(object a, object b)
cdef object matrix_product_t(object a, bint a_transposed, object b,
                             bint b_transposed)
