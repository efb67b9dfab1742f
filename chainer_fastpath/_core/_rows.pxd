from libc.string cimport memcpy

ctypedef fused real:
    float
    double

ctypedef fused row_index:
    int
    Py_ssize_t


cdef inline void gather_rows(const char *W, Py_ssize_t s0, Py_ssize_t s1,
                             const row_index *rows, Py_ssize_t n,
                             Py_ssize_t units, real *out) noexcept nogil:
    """``out[...] = W[rows]``: rows of the 2-d array at ``W`` (byte
    strides ``s0``, ``s1``) into C-contiguous ``out``; every row in
    range."""
    cdef Py_ssize_t k, j
    cdef const char *row
    for k in range(n):
        row = W + rows[k] * s0
        if s1 == sizeof(real):
            memcpy(out + k * units, row, units * sizeof(real))
        else:
            for j in range(units):
                out[k * units + j] = (<const real *>(row + j * s1))[0]


cdef inline void store_row(char *out, Py_ssize_t stride, const real *row,
                           Py_ssize_t units) noexcept nogil:
    """``out[:] = row``, ``out`` a 1-d run of ``units`` elements
    ``stride`` bytes apart."""
    cdef Py_ssize_t j
    for j in range(units):
        (<real *>(out + j * stride))[0] = row[j]


cdef inline void add_outer_rows(char *gW, Py_ssize_t s0, Py_ssize_t s1,
                                const row_index *rows, const real *g,
                                Py_ssize_t n, const char *x, Py_ssize_t xs,
                                Py_ssize_t units) noexcept nogil:
    """``gW[rows[k]] += g[k] * x`` for each k in order, as NumPy's
    ``gW[ik] += ig * x`` (a product, then a sum) does row by row."""
    cdef Py_ssize_t j, k
    cdef real *target
    for k in range(n):
        for j in range(units):
            target = <real *>(gW + rows[k] * s0 + j * s1)
            target[0] = target[0] + g[k] * (<const real *>(x + j * xs))[0]
