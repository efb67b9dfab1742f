cdef extern from "_ndarray.h":
    char *cfp_data(object a)
    int cfp_nd(object a)
    Py_ssize_t *cfp_dims(object a)
    Py_ssize_t *cfp_strides(object a)
    int cfp_flags(object a)
    int cfp_typenum(object a)
    char cfp_byteorder(object a)
    int cfp_elsize(object a)
    bint cfp_c_aligned(object a)
    void *cfp_descr_of(object a)
    int cfp_descr_flags(object descr)
    int CFP_NPY_NEEDS_FILL
    int CFP_NPY_C_CONTIGUOUS, CFP_NPY_F_CONTIGUOUS, CFP_NPY_ALIGNED
    int CFP_NPY_WRITEABLE
    int CFP_NPY_HALF, CFP_NPY_FLOAT, CFP_NPY_DOUBLE
    int CFP_NPY_INT, CFP_NPY_LONG, CFP_NPY_LONGLONG

cdef bint numpy_struct_matches()
cdef void *api_entry(int index) except? NULL
cdef int builtin_typenum(object a)
cdef bint canonical(object a)
cdef object new_like(object a)
cdef Py_ssize_t size_of(object a) except -1
cdef object new_shaped(object a, int nd, const Py_ssize_t *dims)
cdef object empty(object dtype, int nd, const Py_ssize_t *dims)
cdef object zeros(object dtype, int nd, const Py_ssize_t *dims)
cdef object zeros_shaped(object dtype, object shape)
cdef int dims_of(object shape, Py_ssize_t *dims) except -2
cdef object empty1(object dtype, Py_ssize_t n)
cdef object empty2(object dtype, Py_ssize_t rows, Py_ssize_t cols)
cdef bint aligned_array(object a, int typenum, int nd)
cdef int made_adding_zeros_exactly(object acc) except -1
cdef bint made_exact(object acc)
cdef bint made_exact_recorded() noexcept
cdef void forget_made_exact() noexcept
cdef bint adds_zeros_exactly(object acc) except -1
cdef bint sums_in_place_exactly(object a, object b) except -1
cdef bint dense_transposed(object a)
