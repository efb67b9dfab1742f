ctypedef fused real:
    float
    double

ctypedef fused row_index:
    int
    Py_ssize_t

ctypedef fused index_t:
    int
    long long


cdef extern from "_rows.h" nogil:
    void cfp_gather_rows_fi(const char *W, Py_ssize_t s0, Py_ssize_t s1,
                            const int *rows, Py_ssize_t n, Py_ssize_t units,
                            float *out)
    void cfp_gather_rows_fp(const char *W, Py_ssize_t s0, Py_ssize_t s1,
                            const Py_ssize_t *rows, Py_ssize_t n,
                            Py_ssize_t units, float *out)
    void cfp_gather_rows_di(const char *W, Py_ssize_t s0, Py_ssize_t s1,
                            const int *rows, Py_ssize_t n, Py_ssize_t units,
                            double *out)
    void cfp_gather_rows_dp(const char *W, Py_ssize_t s0, Py_ssize_t s1,
                            const Py_ssize_t *rows, Py_ssize_t n,
                            Py_ssize_t units, double *out)
    void cfp_add_outer_rows_fi(char *gW, Py_ssize_t s0, Py_ssize_t s1,
                               const int *rows, const float *g, Py_ssize_t n,
                               const char *x, Py_ssize_t xs, Py_ssize_t units)
    void cfp_add_outer_rows_fp(char *gW, Py_ssize_t s0, Py_ssize_t s1,
                               const Py_ssize_t *rows, const float *g,
                               Py_ssize_t n, const char *x, Py_ssize_t xs,
                               Py_ssize_t units)
    void cfp_add_outer_rows_di(char *gW, Py_ssize_t s0, Py_ssize_t s1,
                               const int *rows, const double *g, Py_ssize_t n,
                               const char *x, Py_ssize_t xs, Py_ssize_t units)
    void cfp_add_outer_rows_dp(char *gW, Py_ssize_t s0, Py_ssize_t s1,
                               const Py_ssize_t *rows, const double *g,
                               Py_ssize_t n, const char *x, Py_ssize_t xs,
                               Py_ssize_t units)
    bint cfp_indices_in_range(const long long *x, Py_ssize_t n,
                              long long rows, bint has_ignore,
                              long long ignore)
    void cfp_times_f(float *v, const float *c, Py_ssize_t n)
    void cfp_times_d(double *v, const double *c, Py_ssize_t n)
    void cfp_neg_times_f(float *v, const float *c, Py_ssize_t n)
    void cfp_neg_times_d(double *v, const double *c, Py_ssize_t n)
    void cfp_negate_f(float *v, Py_ssize_t n)
    void cfp_negate_d(double *v, Py_ssize_t n)
    void cfp_over_one_plus_f(float *v, float a, const float *c,
                             const float *e, Py_ssize_t n)
    void cfp_over_one_plus_d(double *v, double a, const double *c,
                             const double *e, Py_ssize_t n)
    float cfp_pairwise_sum_f(const float *x, Py_ssize_t n)
    double cfp_pairwise_sum_d(const double *x, Py_ssize_t n)
    unsigned int cfp_indices_top_i(const int *x, Py_ssize_t n)
    unsigned long long cfp_indices_top_p(const long long *x, Py_ssize_t n)
    void cfp_store_row_f(char *out, Py_ssize_t stride, const float *row,
                         Py_ssize_t units)
    void cfp_store_row_d(char *out, Py_ssize_t stride, const double *row,
                         Py_ssize_t units)
    bint cfp_scatter_add_rows_f(float *gW, Py_ssize_t rows, Py_ssize_t cols,
                                const long long *x, Py_ssize_t n,
                                const char *gy, int nd, const Py_ssize_t *dims,
                                const Py_ssize_t *strides,
                                Py_ssize_t col_stride, bint has_ignore,
                                long long ignore)
    bint cfp_scatter_add_rows_d(double *gW, Py_ssize_t rows, Py_ssize_t cols,
                                const long long *x, Py_ssize_t n,
                                const char *gy, int nd, const Py_ssize_t *dims,
                                const Py_ssize_t *strides,
                                Py_ssize_t col_stride, bint has_ignore,
                                long long ignore)
    bint cfp_sum_middle_f(float *out, const float *x, Py_ssize_t outer,
                          Py_ssize_t n, Py_ssize_t inner)
    bint cfp_sum_middle_d(double *out, const double *x, Py_ssize_t outer,
                          Py_ssize_t n, Py_ssize_t inner)
    bint cfp_sum_last_f(float *out, const float *x, Py_ssize_t outer,
                        Py_ssize_t n)
    bint cfp_sum_last_d(double *out, const double *x, Py_ssize_t outer,
                        Py_ssize_t n)
    int CFP_SELECT_NAN, CFP_SELECT_ZERO
    int cfp_select_middle_f(float *out, int *index, const float *x,
                            Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner,
                            bint largest)
    int cfp_select_middle_d(double *out, int *index, const double *x,
                            Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner,
                            bint largest)


cdef inline void gather_rows(const char *W, Py_ssize_t s0, Py_ssize_t s1,
                             const row_index *rows, Py_ssize_t n,
                             Py_ssize_t units, real *out) noexcept nogil:
    """``out[...] = W[rows]``: rows of the 2-d array at ``W`` (byte
    strides ``s0``, ``s1``) into C-contiguous ``out``; every row in
    range."""
    if real is float:
        if row_index is int:
            cfp_gather_rows_fi(W, s0, s1, rows, n, units, out)
        else:
            cfp_gather_rows_fp(W, s0, s1, rows, n, units, out)
    else:
        if row_index is int:
            cfp_gather_rows_di(W, s0, s1, rows, n, units, out)
        else:
            cfp_gather_rows_dp(W, s0, s1, rows, n, units, out)


cdef inline void store_row(char *out, Py_ssize_t stride, const real *row,
                           Py_ssize_t units) noexcept nogil:
    """``out[:] = row``, ``out`` a 1-d run of ``units`` elements
    ``stride`` bytes apart."""
    if real is float:
        cfp_store_row_f(out, stride, row, units)
    else:
        cfp_store_row_d(out, stride, row, units)


cdef inline void add_outer_rows(char *gW, Py_ssize_t s0, Py_ssize_t s1,
                                const row_index *rows, const real *g,
                                Py_ssize_t n, const char *x, Py_ssize_t xs,
                                Py_ssize_t units) noexcept nogil:
    """``gW[rows[k]] += g[k] * x`` for each k in order, as NumPy's
    ``gW[ik] += ig * x`` (a product, then a sum) does row by row; ``gW``
    and ``x`` do not overlap."""
    if real is float:
        if row_index is int:
            cfp_add_outer_rows_fi(gW, s0, s1, rows, g, n, x, xs, units)
        else:
            cfp_add_outer_rows_fp(gW, s0, s1, rows, g, n, x, xs, units)
    else:
        if row_index is int:
            cfp_add_outer_rows_di(gW, s0, s1, rows, g, n, x, xs, units)
        else:
            cfp_add_outer_rows_dp(gW, s0, s1, rows, g, n, x, xs, units)


cdef inline void times(real *v, const real *c, Py_ssize_t n) noexcept nogil:
    """``v[k] = v[k] * c[k]``, as NumPy's multiply."""
    if real is float:
        cfp_times_f(v, c, n)
    else:
        cfp_times_d(v, c, n)


cdef inline void neg_times(real *v, const real *c,
                           Py_ssize_t n) noexcept nogil:
    """``v[k] = -(v[k] * c[k])``, as NumPy's multiply then negative."""
    if real is float:
        cfp_neg_times_f(v, c, n)
    else:
        cfp_neg_times_d(v, c, n)


cdef inline void negate(real *v, Py_ssize_t n) noexcept nogil:
    """``v[k] = -v[k]``, as NumPy's negative."""
    if real is float:
        cfp_negate_f(v, n)
    else:
        cfp_negate_d(v, n)


cdef inline void over_one_plus(real *v, real a, const real *c, const real *e,
                               Py_ssize_t n) noexcept nogil:
    """``v[k] = (a * c[k]) / (1 + e[k])``, or ``a / (1 + e[k])`` where
    ``c`` is NULL, as NumPy's loops round each step; ``v``, ``c`` and
    ``e`` do not overlap."""
    if real is float:
        cfp_over_one_plus_f(v, a, c, e, n)
    else:
        cfp_over_one_plus_d(v, a, c, e, n)


cdef inline real pairwise_sum(const real *x, Py_ssize_t n) noexcept nogil:
    """NumPy's pairwise sum of ``x[:n]``, as ``numpy.sum`` runs it on a
    contiguous 1-d array."""
    if real is float:
        return cfp_pairwise_sum_f(x, n)
    else:
        return cfp_pairwise_sum_d(x, n)


cdef inline bint has_nan(const real *p, Py_ssize_t n) noexcept nogil:
    """Whether ``p[:n]`` holds a NaN. No early exit: a NaN is rare, and the
    loop without one vectorises."""
    cdef Py_ssize_t k
    cdef bint nan = False
    for k in range(n):
        nan |= p[k] != p[k]
    return nan


cdef inline bint indices_within(const index_t *x, Py_ssize_t n,
                                Py_ssize_t rows) noexcept nogil:
    """Whether each of ``x[:n]`` is in ``[0, rows)``: their largest, read
    unsigned (``cfp_indices_top``), below ``rows``."""
    if n == 0:
        return True
    if index_t is int:
        # Past 2**31 rows every int that is not negative is a row.
        return cfp_indices_top_i(x, n) < <unsigned int>min(
            rows, <Py_ssize_t>2147483648)
    else:
        return cfp_indices_top_p(x, n) < <unsigned long long>rows
