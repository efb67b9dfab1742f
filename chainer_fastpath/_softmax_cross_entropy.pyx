"""Softmax cross entropy on a 2-D input in one pass, bit for bit stock's.

Stock's ``SoftmaxCrossEntropy.forward_cpu`` and its gradient's chain some
twenty NumPy calls; on a small batch their cost is the calls. As in
``_lstm_cell``, each result is computed element by element: ``+``, ``-``,
``*``, comparisons and gathers in C, exactly as NumPy's loops do them, and
what C cannot reproduce stays NumPy's own: ``exp`` and ``log``, and the
sums, whose pairwise order only ``numpy.add.reduce`` gives. A NaN input, a
label out of range or a floating-point exception that ``numpy.errstate``
does not ignore (``_fpe``) returns None, and the caller runs the NumPy calls,
which raise or warn as stock does.
"""
import numpy

from chainer_fastpath._ndarray cimport (
    CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_INT,
    CFP_NPY_LONG, CFP_NPY_LONGLONG, builtin_typenum, cfp_data, cfp_dims,
    cfp_elsize, cfp_flags, cfp_nd, cfp_strides, layout_ok)

from chainer_fastpath._fpe cimport feclearexcept, fetestexcept, watched

cdef type _ndarray = numpy.ndarray
cdef object _exp = numpy.exp
cdef object _log = numpy.log
cdef object _add_reduce = numpy.add.reduce
cdef object _empty = numpy.empty
cdef object _int64 = numpy.int64

ctypedef fused real:
    float
    double


cdef int _float_typenum(object x):
    # x's type number when it is a C-contiguous, non-empty float32 or
    # float64 matrix, else -1.
    if (type(x) is not _ndarray or cfp_nd(x) != 2
            or not cfp_flags(x) & CFP_NPY_C_CONTIGUOUS
            or cfp_dims(x)[0] == 0 or cfp_dims(x)[1] == 0):
        return -1
    cdef int num = builtin_typenum(x)
    return num if num == CFP_NPY_FLOAT or num == CFP_NPY_DOUBLE else -1


cdef bint _labels_ok(object t, Py_ssize_t n):
    # A vector of n int32 or int64 labels, any stride.
    if type(t) is not _ndarray or cfp_nd(t) != 1 or cfp_dims(t)[0] != n:
        return False
    cdef int num = builtin_typenum(t)
    return ((num == CFP_NPY_INT or num == CFP_NPY_LONG
             or num == CFP_NPY_LONGLONG)
            and (cfp_elsize(t) == 4 or cfp_elsize(t) == 8))


cdef inline long long _label(object t, Py_ssize_t k):
    cdef char *p = cfp_data(t) + k * cfp_strides(t)[0]
    if cfp_elsize(t) == 4:
        return (<int *>p)[0]
    return (<long long *>p)[0]


cdef class _Targets:
    """Stock's ``t_valid = t != ignore_label``, and the column each row
    gathers: ``t * t_valid``, negatives wrapped as NumPy indexing wraps
    them."""
    cdef object _index, _valid    # the arrays owning the buffers
    cdef Py_ssize_t *index
    cdef bint *valid
    cdef Py_ssize_t count


cdef _Targets _targets(object t, object ignore_label, Py_ssize_t rows,
                       Py_ssize_t cols):
    """None unless ``t`` holds ``rows`` int32 or int64 labels,
    ``ignore_label`` is an int64 and every column is in range (NumPy raises
    IndexError otherwise)."""
    if type(ignore_label) is not int or not _labels_ok(t, rows):
        return None
    cdef long long ignore, label
    try:
        ignore = ignore_label
    except OverflowError:
        return None
    cdef _Targets r = _Targets.__new__(_Targets)
    r._index = _empty(rows, numpy.intp)
    r._valid = _empty(rows, numpy.intc)
    r.index = <Py_ssize_t *>cfp_data(r._index)
    r.valid = <bint *>cfp_data(r._valid)
    r.count = 0
    cdef Py_ssize_t k
    for k in range(rows):
        label = _label(t, k)
        r.valid[k] = label != ignore
        if not r.valid[k]:
            label = 0
        if label < 0:
            label += cols
        if label < 0 or label >= cols:
            return None
        r.index[k] = <Py_ssize_t>label
        r.count += r.valid[k]
    return r


cdef void _shifted(const real *x, real *e, real *m, Py_ssize_t rows,
                   Py_ssize_t cols) noexcept nogil:
    # m = x.max(axis=1); e = x - m, where x holds no NaN (a NaN reaches the
    # row's sum of exp(e), where the caller finds it). Four running maxima
    # free of branches let the compiler use max instructions; where zeros
    # of both signs tie for the maximum, they may pick the other one than
    # NumPy, which no output shows: e only feeds exp (exp(-0) == exp(+0))
    # and m is added to log(sum(exp(e))) >= +0, which absorbs the sign.
    cdef Py_ssize_t i, j
    cdef real t0, t1, t2, t3
    for i in range(rows):
        t0 = t1 = t2 = t3 = x[0]
        j = 0
        while j + 4 <= cols:
            t0 = x[j] if x[j] > t0 else t0
            t1 = x[j + 1] if x[j + 1] > t1 else t1
            t2 = x[j + 2] if x[j + 2] > t2 else t2
            t3 = x[j + 3] if x[j + 3] > t3 else t3
            j += 4
        while j < cols:
            t0 = x[j] if x[j] > t0 else t0
            j += 1
        t0 = t1 if t1 > t0 else t0
        t2 = t3 if t3 > t2 else t2
        t0 = t2 if t2 > t0 else t0
        for j in range(cols):
            e[j] = x[j] - t0
        m[i] = t0
        x += cols
        e += cols


cdef bint _any_nan(const real *a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        if a[k] != a[k]:
            return True
    return False


cdef void _log_softmax(const real *x, const real *m, const real *log_s,
                       real *log_y, Py_ssize_t rows,
                       Py_ssize_t cols) noexcept nogil:
    # m += log(s); log_y = x - m
    cdef Py_ssize_t i, j
    cdef real z
    for i in range(rows):
        z = m[i] + log_s[i]
        for j in range(cols):
            log_y[j] = x[j] - z
        x += cols
        log_y += cols


cdef void _gather(const real *log_y, const Py_ssize_t *index,
                  const bint *valid, real *log_p, Py_ssize_t rows,
                  Py_ssize_t cols) noexcept nogil:
    # log_p = log_y[arange, t] * t_valid
    cdef Py_ssize_t k
    cdef real one = 1, zero = 0
    for k in range(rows):
        log_p[k] = log_y[k * cols + index[k]] * (one if valid[k] else zero)


cdef void _negate(const real *a, real *out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        out[k] = -a[k]


cdef void _scale(real *a, double factor) noexcept nogil:
    # NumPy multiplies a (1,)-array by a Python or NumPy float in the
    # array's type.
    a[0] = a[0] * <real>factor


cdef void _grad_rows(const real *y, real *gx, const Py_ssize_t *index,
                     const bint *valid, const real *gloss, Py_ssize_t step,
                     Py_ssize_t rows, Py_ssize_t cols) noexcept nogil:
    # gx = y.copy(); gx[arange, t] -= 1; gx *= t_valid[:, None];
    # gx *= g, g one scalar (step 0) or gloss[:, None] (step 1). The row is
    # computed as if no column were the label's, a loop the compiler
    # vectorises, then the label's column again. The first value of that
    # column may raise a flag stock's would not (0 * inf, an underflow);
    # the caller then only takes the NumPy calls.
    cdef Py_ssize_t i, j, k
    cdef real one = 1, zero = 0, w, g
    for i in range(rows):
        w = one if valid[i] else zero
        g = gloss[i * step]
        for j in range(cols):
            gx[j] = y[j] * w * g
        k = index[i]
        gx[k] = (y[k] - one) * w * g
        y += cols
        gx += cols


cpdef object forward(object x, object t, object ignore_label,
                     bint normalize, str reduce, bint cache_score):
    """``(loss, y, coeff)``: what stock ``SoftmaxCrossEntropy.forward_cpu``
    returns and sets as ``self.y`` (None without ``cache_score``) and
    ``self._coeff`` (None unless ``reduce == 'mean'``), for hard labels and
    no class weight. None when the kernel does not apply."""
    if not layout_ok() or (reduce != 'mean' and reduce != 'no'):
        return None
    cdef int num = _float_typenum(x)
    if num < 0:
        return None
    cdef Py_ssize_t rows = cfp_dims(x)[0], cols = cfp_dims(x)[1]
    cdef _Targets targets = _targets(t, ignore_label, rows, cols)
    if targets is None:
        return None
    cdef int flags = watched()

    dtype = x.dtype
    cdef bint single = num == CFP_NPY_FLOAT, nan
    e = _empty((rows, cols), dtype)
    m = _empty(rows, dtype)
    feclearexcept(flags)
    if single:
        _shifted(<float *>cfp_data(x), <float *>cfp_data(e),
                 <float *>cfp_data(m), rows, cols)
    else:
        _shifted(<double *>cfp_data(x), <double *>cfp_data(e),
                 <double *>cfp_data(m), rows, cols)
    if fetestexcept(flags):
        return None
    _exp(e, e)
    s = _add_reduce(e, 1)
    # A NaN in x, or inf - inf in e, makes its row's sum NaN; NumPy would
    # choose which NaN max returns, and the caller runs stock's calls.
    if single:
        nan = _any_nan(<float *>cfp_data(s), rows)
    else:
        nan = _any_nan(<double *>cfp_data(s), rows)
    if nan:
        return None
    _log(s, s)
    log_y = _empty((rows, cols), dtype)
    log_p = _empty(rows, dtype)
    feclearexcept(flags)
    if single:
        _log_softmax(<float *>cfp_data(x), <float *>cfp_data(m),
                     <float *>cfp_data(s), <float *>cfp_data(log_y),
                     rows, cols)
        _gather(<float *>cfp_data(log_y), targets.index, targets.valid,
                <float *>cfp_data(log_p), rows, cols)
    else:
        _log_softmax(<double *>cfp_data(x), <double *>cfp_data(m),
                     <double *>cfp_data(s), <double *>cfp_data(log_y),
                     rows, cols)
        _gather(<double *>cfp_data(log_y), targets.index, targets.valid,
                <double *>cfp_data(log_p), rows, cols)
    if fetestexcept(flags):
        return None
    y = _exp(log_y) if cache_score else None

    if reduce == 'no':
        loss = _empty(t.shape, dtype)
        if single:
            _negate(<float *>cfp_data(log_p), <float *>cfp_data(loss), rows)
        else:
            _negate(<double *>cfp_data(log_p), <double *>cfp_data(loss),
                    rows)
        return loss, y, None
    # Stock's own expression: the types of count and coeff decide how
    # the backward multiplies by it.
    coeff = 1.0 / max(_int64(targets.count) if normalize else rows, 1)
    cdef double factor = -coeff
    loss = _add_reduce(log_p, None, dtype, None, True)
    feclearexcept(flags)
    if single:
        _scale(<float *>cfp_data(loss), factor)
    else:
        _scale(<double *>cfp_data(loss), factor)
    if fetestexcept(flags):
        return None
    return loss.reshape(()), y, coeff


cpdef object grad(object y, object t, object ignore_label, object gloss,
                  object coeff):
    """``gx`` as stock ``_SoftmaxCrossEntropyGrad_NoDoubleBackprop``'s
    ``forward_cpu`` computes it from a cached score ``y`` (2-D), hard
    labels and no class weight; None when the kernel does not apply."""
    if not layout_ok():
        return None
    cdef int num = _float_typenum(y)
    if num < 0 or type(gloss) is not _ndarray or builtin_typenum(gloss) != num:
        return None
    cdef Py_ssize_t rows = cfp_dims(y)[0], cols = cfp_dims(y)[1]
    cdef Py_ssize_t step
    if coeff is not None:
        # Stock's gx *= gloss * coeff: a float scalar NumPy casts to gx's
        # type.
        if cfp_nd(gloss) != 0:
            return None
        g = gloss * coeff
        if type(g) is not float and not isinstance(g, numpy.floating):
            return None
        scalar = _empty(1, y.dtype)
        scalar[0] = g
        gl = scalar
        step = 0
    else:
        if (cfp_nd(gloss) != 1 or cfp_dims(gloss)[0] != rows
                or not cfp_flags(gloss) & CFP_NPY_C_CONTIGUOUS):
            return None
        gl = gloss
        step = 1
    cdef _Targets targets = _targets(t, ignore_label, rows, cols)
    if targets is None:
        return None
    cdef int flags = watched()
    gx = _empty((rows, cols), y.dtype)
    feclearexcept(flags)
    if num == CFP_NPY_FLOAT:
        _grad_rows(<float *>cfp_data(y), <float *>cfp_data(gx),
                   targets.index, targets.valid, <float *>cfp_data(gl), step,
                   rows, cols)
    else:
        _grad_rows(<double *>cfp_data(y), <double *>cfp_data(gx),
                   targets.index, targets.valid, <double *>cfp_data(gl),
                   step, rows, cols)
    if fetestexcept(flags):
        return None
    return gx
