"""NumPy ufunc inner loops called directly from C.

A kernel that replaces a run of NumPy calls keeps NumPy's own function for
what C cannot reproduce bit for bit (``exp``, ``log``, ``logaddexp``: NumPy
may pick SIMD code of its own at import). Called per call site on the same
data as NumPy would, the loop gives NumPy's bits, without NumPy's
per-call cost and without its errstate handling: the caller checks the
floating-point flags (``_fpe``) and gives the work back to NumPy.
"""
import numpy

from chainer_fastpath._core._fpe cimport (
    all_flags, buffer_size, clear_flags, fetestexcept, quiet2, quiet_into)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    CFP_NPY_WRITEABLE, builtin_typenum, canonical, cfp_data, cfp_descr_of,
    cfp_dims, cfp_elsize, cfp_flags, cfp_nd, cfp_strides, cfp_typenum,
    new_like, numpy_struct_matches, new_shaped, size_of)
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

cdef type _ndarray = numpy.ndarray
cdef int _C_ALIGNED = CFP_NPY_C_CONTIGUOUS | CFP_NPY_ALIGNED
# Larger broadcasts of a 0-d operand go through the ufunc: there NumPy's
# own call runs faster than the loop given stride 0 (ReLU of 256x4096:
# 0.48 ms against 0.58 ms), the same bits either way.
cdef Py_ssize_t _BROADCAST_MAX = 4096

cdef extern from *:
    """
    /* NumPy 1.x's PyUFuncObject up to its type table (ufuncobject.h). */
    typedef struct {
        PyObject_HEAD
        int nin, nout, nargs;
        int identity;
        cfp_loop *functions;
        void **data;
        int ntypes;
        int reserved1;
        const char *name;
        char *types;
    } cfp_ufunc;

    /* The index of the loop whose every operand has type ``typenum``,
       or -1. */
    static int cfp_loop_index(PyObject *u, int typenum) {
        cfp_ufunc *f = (cfp_ufunc *)u;
        for (int i = 0; i < f->ntypes; i++) {
            int j = 0;
            while (j < f->nargs && f->types[i * f->nargs + j] == typenum)
                j++;
            if (j == f->nargs)
                return i;
        }
        return -1;
    }
    static cfp_loop cfp_loop_function(PyObject *u, int i) {
        return ((cfp_ufunc *)u)->functions[i];
    }
    static void *cfp_loop_data(PyObject *u, int i) {
        return ((cfp_ufunc *)u)->data[i];
    }
    static int cfp_ufunc_nargs(PyObject *u) {
        return ((cfp_ufunc *)u)->nargs;
    }
    static int cfp_ufunc_ntypes(PyObject *u) {
        return ((cfp_ufunc *)u)->ntypes;
    }
    """
    int cfp_loop_index(object u, int typenum)
    cfp_loop cfp_loop_function(object u, int i)
    void *cfp_loop_data(object u, int i)
    int cfp_ufunc_nargs(object u)
    int cfp_ufunc_ntypes(object u)


cdef class UfuncLoop:
    """The inner loop of ``ufunc`` whose operands are all of type
    ``typenum`` (float32 or float64), as ``ufunc`` calls it; ``function``
    is NULL where it cannot be found."""

    def __init__(self, ufunc, typenum):
        # Only where the mirrored struct agrees with what NumPy says of
        # the ufunc; the loop is then the one its type resolution picks.
        if (cfp_ufunc_nargs(ufunc) != ufunc.nargs
                or cfp_ufunc_ntypes(ufunc) != ufunc.ntypes):
            return
        cdef int i = cfp_loop_index(ufunc, typenum)
        code = numpy.dtype(numpy.float32 if typenum == CFP_NPY_FLOAT
                           else numpy.float64).char
        if i < 0 or ufunc.types[i] != '{}->{}'.format(
                code * ufunc.nin, code * ufunc.nout):
            return
        self.function = cfp_loop_function(ufunc, i)
        self.data = cfp_loop_data(ufunc, i)
        self.typenum = typenum

    cdef bint unary_into(self, object a, object out,
                         int *raised) except -1:
        """``ufunc(a, out)`` of a one-input ufunc, where ``a`` and ``out``
        are C-contiguous, aligned, non-empty arrays of the loop's type and
        one size, the same memory or none in common: NumPy then calls the
        loop once over all of them, as this does. True, with the flags the
        loop raised added to ``raised``; False, nothing done, elsewhere."""
        if (self.function is NULL or type(a) is not _ndarray
                or type(out) is not _ndarray or not numpy_struct_matches()
                or builtin_typenum(a) != self.typenum
                or builtin_typenum(out) != self.typenum
                or cfp_flags(a) & _C_ALIGNED != _C_ALIGNED
                or cfp_flags(out) & (_C_ALIGNED | CFP_NPY_WRITEABLE)
                != _C_ALIGNED | CFP_NPY_WRITEABLE):
            return False
        cdef Py_ssize_t n = size_of(a)
        if n == 0 or size_of(out) != n:
            return False
        cdef char *args[2]
        cdef Py_ssize_t steps[2]
        args[0] = cfp_data(a)
        args[1] = cfp_data(out)
        steps[0] = steps[1] = cfp_elsize(a)
        if (args[0] != args[1] and args[0] < args[1] + n * steps[0]
                and args[1] < args[0] + n * steps[0]):
            return False
        clear_flags(all_flags())
        self.function(args, &n, steps, self.data)
        raised[0] |= fetestexcept(all_flags())
        return True

    def apply_unary(self, a, out):
        """``(True, flags raised)`` where ``unary_into(a, out)`` ran,
        ``(False, 0)`` where it left the call to the ufunc (for tests)."""
        cdef int raised = 0
        return self.unary_into(a, out, &raised), raised


cdef class FloatLoops:
    """A ufunc's loops whose operands are all float32, all float64."""

    def __init__(self, ufunc):
        self.ufunc = ufunc
        self.loops = (UfuncLoop(ufunc, CFP_NPY_FLOAT),
                      UfuncLoop(ufunc, CFP_NPY_DOUBLE))

    cdef UfuncLoop for_type(self, int typenum):
        """The loop for type ``typenum``, or None where there is none."""
        cdef UfuncLoop loop
        if typenum == CFP_NPY_FLOAT:
            loop = <UfuncLoop>self.loops[0]
        elif typenum == CFP_NPY_DOUBLE:
            loop = <UfuncLoop>self.loops[1]
        else:
            return None
        return loop if loop.function is not NULL else None

    cdef object unary(self, object a, int *raised):
        """``ufunc(a)`` of a one-input ufunc by its loop, where ``a`` is a
        C-contiguous, aligned, non-empty float32 or float64 ndarray of at
        least one dimension and its dtype's own descr: the output NumPy
        allocates (C order, a's shape and dtype), the flags the loop raised
        added to ``raised``. None, nothing done, elsewhere."""
        if (type(a) is not _ndarray or not numpy_struct_matches()
                or cfp_nd(a) == 0 or not canonical(a)):
            return None
        cdef UfuncLoop loop = self.for_type(cfp_typenum(a))
        if loop is None:
            return None
        out = new_like(a)
        if out is None or not loop.unary_into(a, out, raised):
            return None
        return out

    cdef object quiet_unary(self, object a, object out, int *raised):
        """``ufunc(a, out)`` of a one-input ufunc, NumPy acting on no
        floating-point exception (``_fpe.quiet2``): by the loop where
        ``UfuncLoop.unary_into`` takes the arrays, else by the ufunc's
        call; adds the flags raised to ``raised``; returns ``out``."""
        cdef UfuncLoop loop = None
        if type(a) is _ndarray and numpy_struct_matches():
            loop = self.for_type(builtin_typenum(a))
        if loop is None or not loop.unary_into(a, out, raised):
            quiet2(self.ufunc, a, out, raised)
        return out

    def unary_of(self, a):
        """``(unary(a), flags raised)`` (for tests)."""
        cdef int raised = 0
        return self.unary(a, &raised), raised


cdef extern from "_binary.h" nogil:
    int CFP_BINARY_ADD, CFP_BINARY_SUBTRACT, CFP_BINARY_MULTIPLY
    int CFP_BINARY_DIVIDE
    bint cfp_binary_broadcast(int op, bint single, const char *a,
                              const Py_ssize_t *sa, const char *b,
                              const Py_ssize_t *sb, char *out,
                              const Py_ssize_t *so, const Py_ssize_t *runs,
                              int m)


cdef class Binary(FloatLoops):
    """A binary ufunc called the way its trivial path calls it: for two
    arrays of one shape and one float32 or float64 dtype, the output
    allocated as it allocates it and the loop called once with its
    strides (``try_trivial_single_output_loop`` in NumPy's
    ufunc_object.c)."""

    def __init__(self, ufunc):
        FloatLoops.__init__(self, ufunc)
        self.op = {numpy.add: CFP_BINARY_ADD,
                   numpy.subtract: CFP_BINARY_SUBTRACT,
                   numpy.multiply: CFP_BINARY_MULTIPLY,
                   numpy.true_divide: CFP_BINARY_DIVIDE}.get(ufunc, -1)

    def __call__(self, a, b):
        """``(self.call(a, b), raised flags)``, for the tests."""
        cdef int raised = 0
        out = self.call(a, b, &raised)
        return out, raised

    def add_rows(self, a, b):
        """``(self.into_rows(a, b), raised flags)``, for the tests."""
        cdef int raised = 0
        done = self.into_rows(a, b, &raised)
        return done, raised

    def apply_into(self, a, b):
        """``(self.into(a, b), raised flags)``, for the tests."""
        cdef int raised = 0
        done = self.into(a, b, &raised)
        return done, raised

    cdef UfuncLoop _loop_of(self, object a, object b):
        """The loop for operands ``a`` and ``b``: None unless both are
        ndarrays of one canonical float32 or float64 dtype."""
        if (type(a) is not _ndarray or type(b) is not _ndarray
                or not numpy_struct_matches()
                or cfp_descr_of(a) != cfp_descr_of(b)
                or not canonical(a)):
            return None
        return self.for_type(cfp_typenum(a))

    cdef object quiet(self, object a, object b, int *raised):
        """``_fpe.quiet2(self.ufunc, a, b, raised)``, by the loop where
        ``call``, ``call_apart`` or ``call_broadcast`` takes the
        operands."""
        y = self.call(a, b, raised)
        if y is None:
            y = self.call_apart(a, b, None, raised)
        if y is None:
            y = self.call_broadcast(a, b, raised)
        if y is None:
            y = quiet2(self.ufunc, a, b, raised)
        return y

    cdef object quiet_in_place(self, object a, object b, int *raised):
        """``_fpe.quiet_into(self.ufunc, a, b, a, raised)``, by the loop
        where ``into`` or ``call_apart`` takes the operands; returns
        ``a``."""
        if self.into(a, b, raised):
            return a
        if self.call_apart(a, b, a, raised) is not None:
            return a
        return quiet_into(self.ufunc, a, b, a, raised)

    def broadcast(self, a, b):
        """``(self.call_broadcast(a, b), raised flags)``, for the tests."""
        cdef int raised = 0
        out = self.call_broadcast(a, b, &raised)
        return out, raised

    cdef object call_broadcast(self, object a, object b, int *raised):
        """``ufunc(a, b)`` with NumPy's error handling off, adding the flags
        it raised to ``raised``, for aligned ndarrays of one canonical
        float32 or float64 dtype whose shapes broadcast and whose strides
        keep C order (``_c_ordered``: a C-ordered array, its broadcast
        view, a window of it): NumPy then allocates its output C-ordered
        too. For add, subtract, multiply and divide, whose every result but
        a NaN is the one IEEE operation's, however NumPy's iterator splits
        the work: ``cfp_binary_broadcast`` over the axes, merged where every
        operand allows. None, nothing done, for other ufuncs
        and operands, or where a result is a NaN (which NaN two give is
        the choice of NumPy's loop)."""
        if (self.op < 0 or self._loop_of(a, b) is None
                or not cfp_flags(a) & cfp_flags(b) & CFP_NPY_ALIGNED
                or cfp_nd(a) > 32 or cfp_nd(b) > 32):
            return None
        cdef int nd = max(cfp_nd(a), cfp_nd(b)), k, m = 0
        cdef Py_ssize_t dims[32]
        cdef Py_ssize_t sa[32]
        cdef Py_ssize_t sb[32]
        cdef Py_ssize_t so[32]
        cdef Py_ssize_t count = 1, stride_a, stride_b
        for k in range(nd):
            dims[k] = 1
        if (not _broadcast_shape(a, nd, dims)
                or not _broadcast_shape(b, nd, dims)):
            return None
        for k in range(nd):
            count *= dims[k]
        if count == 0:
            return new_shaped(a, nd, dims)
        # The axes of more than one item, innermost first (runs[k] items,
        # strides sa, sb, so), an axis merged into the one inside it where
        # each operand's stride over it is its stride over that one times
        # that one's length (the output's always is).
        cdef Py_ssize_t runs[32]
        cdef Py_ssize_t itemsize = _itemsize(a), span = itemsize
        for k in range(nd - 1, -1, -1):
            if dims[k] == 1:
                continue
            stride_a = _stride(a, nd, k)
            stride_b = _stride(b, nd, k)
            if (m and stride_a == sa[m - 1] * runs[m - 1]
                    and stride_b == sb[m - 1] * runs[m - 1]):
                runs[m - 1] *= dims[k]
            else:
                sa[m], sb[m], so[m] = stride_a, stride_b, span
                runs[m] = dims[k]
                m += 1
            span *= dims[k]
        if not (_c_ordered(sa, m) and _c_ordered(sb, m)):
            return None
        out = new_shaped(a, nd, dims)
        if out is None:
            return None
        if m == 0:
            runs[0] = 1
            sa[0] = sb[0] = so[0] = 0
            m = 1
        clear_flags(all_flags())
        if cfp_binary_broadcast(self.op, itemsize == 4, cfp_data(a), sa,
                                cfp_data(b), sb, cfp_data(out), so, runs, m):
            return None
        raised[0] |= fetestexcept(all_flags())
        return out

    def apart(self, a, b, in_place=False):
        """``(self.call_apart(a, b, a if in_place else None), raised
        flags)``, for the tests."""
        cdef int raised = 0
        out = self.call_apart(a, b, a if in_place else None, &raised)
        return out, raised

    cdef object call_apart(self, object a, object b, object out,
                           int *raised):
        """``ufunc(a, b)`` (``out`` None) or ``ufunc(a, b, out=a)``
        (``out`` is ``a``) for 2-d operands of one shape whose rows are
        each contiguous and lie apart in order (the rows of a column
        window of a wider array, as a gradient split from a stacked one
        is), at least one of them not C-contiguous, as NumPy's buffered
        iterator runs it: the output C-ordered (``a`` itself in place),
        the loop called over the flattened elements in runs of NumPy's
        buffer size, each operand not C-contiguous gathered into a buffer
        per run. With NumPy's error handling off, adding the flags it
        raised to ``raised``; None (nothing done) for other operands, or
        where ``out`` is ``a`` and ``a`` is not C-contiguous and writeable
        or ``b`` overlaps it, or rows are longer than the buffer (NumPy
        then reads them in place, in runs of its own choosing)."""
        cdef UfuncLoop loop = self._loop_of(a, b)
        if loop is None or cfp_nd(a) != 2 or cfp_nd(b) != 2:
            return None
        cdef Py_ssize_t rows = cfp_dims(a)[0], cols = cfp_dims(a)[1]
        cdef Py_ssize_t itemsize = _itemsize(a)
        cdef Py_ssize_t run = buffer_size()
        if (cfp_dims(b)[0] != rows or cfp_dims(b)[1] != cols or rows < 2
                or cols < 2 or cols > run
                or not _rows_apart(a, itemsize) or not _rows_apart(b, itemsize)
                or (cfp_flags(a) & cfp_flags(b) & CFP_NPY_C_CONTIGUOUS)):
            return None
        cdef Py_ssize_t total = rows * cols
        if out is None:
            out = new_shaped(a, 2, cfp_dims(a))
            if out is None:
                return None
        elif (cfp_flags(a) & _WRITABLE_C_ALIGNED != _WRITABLE_C_ALIGNED
              or _spans_meet(a, b, itemsize)):
            return None
        cdef char *buffers[2]
        cdef tuple operands = (a, b)
        cdef int k
        cdef Py_ssize_t size = min(run, total) * itemsize
        for k in range(2):
            buffers[k] = NULL
            if not cfp_flags(operands[k]) & CFP_NPY_C_CONTIGUOUS:
                buffers[k] = <char *>malloc(size)
                if buffers[k] == NULL:
                    free(buffers[0])
                    return None
        cdef Py_ssize_t steps[3]
        steps[0] = steps[1] = steps[2] = itemsize
        cdef char *args[3]
        cdef Py_ssize_t start = 0, count
        clear_flags(all_flags())
        while start < total:
            count = min(run, total - start)
            for k in range(2):
                if buffers[k] == NULL:
                    args[k] = cfp_data(operands[k]) + start * itemsize
                else:
                    _gather_rows_run(buffers[k], operands[k], start, count,
                                     cols, itemsize)
                    args[k] = buffers[k]
            args[2] = cfp_data(out) + start * itemsize
            loop.function(args, &count, steps, loop.data)
            start += count
        raised[0] |= fetestexcept(all_flags())
        free(buffers[0])
        free(buffers[1])
        return out

    cdef object call(self, object a, object b, int *raised):
        """``ufunc(a, b)`` with NumPy's error handling off, adding the
        floating-point flags it raised to ``raised``; None (nothing done)
        unless ``a`` and ``b`` are aligned ndarrays of one canonical
        float32 or float64 dtype, each 0-d (broadcast), 1-d or
        C-contiguous, and those not 0-d of one shape.
        """
        cdef UfuncLoop loop = self._loop_of(a, b)
        if loop is None:
            return None
        cdef Py_ssize_t itemsize = _itemsize(a)
        cdef Py_ssize_t steps[3]
        if not (_operand_stride(a, itemsize, &steps[0])
                and _operand_stride(b, itemsize, &steps[1])):
            return None
        steps[2] = itemsize
        # The operation's shape: an operand's that is not 0-d.
        shaped = a if cfp_nd(a) > 0 or cfp_nd(b) == 0 else b
        other = b if shaped is a else a
        cdef int nd = cfp_nd(shaped)
        cdef Py_ssize_t count = 1, k
        cdef Py_ssize_t *dims = cfp_dims(shaped)
        if cfp_nd(other) != 0:
            if cfp_nd(other) != nd:
                return None
            for k in range(nd):
                if cfp_dims(other)[k] != dims[k]:
                    return None
        for k in range(nd):
            count *= dims[k]
        if cfp_nd(other) == 0 and count > _BROADCAST_MAX:
            return None
        # ``new_like(shaped)`` made without NumPy's wrapper around it: the
        # same C-ordered array of ``shaped``'s descr and dimensions.
        out = new_shaped(shaped, nd, dims)
        if out is None:
            return None
        if count == 0:
            return out
        cdef char *args[3]
        args[0] = cfp_data(a)
        args[1] = cfp_data(b)
        args[2] = cfp_data(out)
        clear_flags(all_flags())
        loop.function(args, &count, steps, loop.data)
        raised[0] |= fetestexcept(all_flags())
        return out

    def with_value(self, a, value, value_first=False):
        """``(self.call_value(a, value, value_first), raised flags)``, for
        the tests."""
        cdef int raised = 0
        out = self.call_value(a, value, value_first, &raised)
        return out, raised

    cdef object call_value(self, object a, double value, bint value_first,
                           int *raised):
        """``ufunc(a, c)`` (``ufunc(c, a)`` where ``value_first``), ``c``
        being ``value`` in ``a``'s dtype, as ``call`` runs it with ``c`` a
        0-d array, which is how NumPy takes a NumPy scalar; without making
        that array. The caller makes sure the conversion of ``value`` to
        ``a``'s dtype is exact or quiet, as ``a.dtype.type(value)`` makes
        it. None, nothing done, where ``call`` would give None."""
        if (type(a) is not _ndarray or not numpy_struct_matches()
                or not canonical(a)):
            return None
        cdef UfuncLoop loop = self.for_type(cfp_typenum(a))
        if loop is None:
            return None
        cdef Py_ssize_t itemsize = _itemsize(a), stride
        if not _operand_stride(a, itemsize, &stride):
            return None
        cdef int nd = cfp_nd(a), k
        cdef Py_ssize_t count = 1
        for k in range(nd):
            count *= cfp_dims(a)[k]
        if count > _BROADCAST_MAX:
            return None
        out = new_shaped(a, nd, cfp_dims(a))
        if out is None or count == 0:
            return out
        cdef float single = <float>value
        cdef char *c = <char *>&value
        if itemsize == 4:
            c = <char *>&single
        cdef Py_ssize_t steps[3]
        cdef char *args[3]
        cdef int i = 1 if value_first else 0
        args[i], steps[i] = cfp_data(a), stride
        args[1 - i], steps[1 - i] = c, 0
        args[2], steps[2] = cfp_data(out), itemsize
        clear_flags(all_flags())
        loop.function(args, &count, steps, loop.data)
        raised[0] |= fetestexcept(all_flags())
        return out

    cdef bint into(self, object a, object b, int *raised) except -1:
        """``ufunc(a, b, out=a)`` with NumPy's error handling off, adding the
        flags it raised to ``raised``; False (nothing done) unless ``a`` and
        ``b`` are aligned ndarrays of one shape (not 0-d) and one canonical
        float32 or float64 dtype, ``a`` C-contiguous and writeable, ``b``
        1-d or C-contiguous and apart from ``a`` in memory: the operands
        NumPy's trivial path takes, which calls the loop once over them,
        ``a`` as first operand and as output, with its strides."""
        cdef UfuncLoop loop = self._loop_of(a, b)
        if loop is None:
            return False
        cdef int nd = cfp_nd(a), k
        if (nd == 0 or cfp_nd(b) != nd
                or cfp_flags(a) & _WRITABLE_C_ALIGNED != _WRITABLE_C_ALIGNED):
            return False
        cdef Py_ssize_t itemsize = _itemsize(a)
        cdef Py_ssize_t steps[3]
        if not _operand_stride(b, itemsize, &steps[1]):
            return False
        cdef Py_ssize_t count = 1
        for k in range(nd):
            if cfp_dims(b)[k] != cfp_dims(a)[k]:
                return False
            count *= cfp_dims(a)[k]
        if count == 0:
            return True
        cdef char *a_data = cfp_data(a)
        cdef char *b_low = cfp_data(b)
        cdef char *b_high = b_low + (count - 1) * steps[1]
        if steps[1] < 0:
            b_low, b_high = b_high, b_low
        if (b_low < a_data + count * itemsize
                and b_high + itemsize > a_data):
            return False
        steps[0] = itemsize
        steps[2] = itemsize
        if count == 1:
            # NumPy's trivial path gives a one-element operation stride 0
            # (PyArray_TRIVIAL_PAIR_ITERATION_STRIDE): the loop then takes
            # its reduction branch, which keeps the other NaN.
            steps[0] = steps[1] = steps[2] = 0
        cdef char *args[3]
        args[0] = a_data
        args[1] = cfp_data(b)
        args[2] = a_data
        clear_flags(all_flags())
        loop.function(args, &count, steps, loop.data)
        raised[0] |= fetestexcept(all_flags())
        return True

    cdef bint into_rows(self, object a, object b, int *raised) except -1:
        """``ufunc(a, b, out=a)`` for ``a`` a C-contiguous 2-d array and
        ``b`` a 1-d array of one row's length (a bias added to each row),
        with NumPy's error handling off, adding the flags it raised to
        ``raised``; False (nothing done) unless both are aligned ndarrays
        of one canonical float32 or float64 dtype, ``a`` writeable and
        ``b`` apart from ``a`` in memory (NumPy would copy it first), and
        ``a`` has one row or several of more than one column and at most
        NumPy's buffer size.

        The loop is called as NumPy's iterator calls it, which decides
        which of SIMD and scalar code computes each element, and with it
        which NaN two NaNs give: for one row, once, over ``b`` as it is
        (strides 0 for one element);
        for more, over the flattened ``a`` in runs of NumPy's buffer size,
        ``b`` repeated into a buffer for each run."""
        if (type(a) is not _ndarray or type(b) is not _ndarray
                or not numpy_struct_matches()
                or cfp_descr_of(a) != cfp_descr_of(b)
                or not canonical(a) or cfp_nd(a) != 2 or cfp_nd(b) != 1):
            return False
        cdef int flags = cfp_flags(a)
        if (flags & _WRITABLE_C_ALIGNED != _WRITABLE_C_ALIGNED
                or not cfp_flags(b) & CFP_NPY_ALIGNED):
            return False
        cdef int typenum = cfp_typenum(a)
        cdef UfuncLoop loop = self.for_type(typenum)
        if loop is None:
            return False
        cdef Py_ssize_t rows = cfp_dims(a)[0], width = cfp_dims(a)[1]
        if cfp_dims(b)[0] != width or (rows > 1 and width == 1):
            return False
        if rows == 0 or width == 0:
            return True
        cdef Py_ssize_t itemsize = 4 if typenum == CFP_NPY_FLOAT else 8
        cdef Py_ssize_t b_stride = cfp_strides(b)[0]
        cdef char *a_data = cfp_data(a)
        cdef char *b_data = cfp_data(b)
        cdef char *b_low = b_data
        cdef char *b_high = b_data + (width - 1) * b_stride
        if b_stride < 0:
            b_low, b_high = b_high, b_low
        if (b_low < a_data + rows * width * itemsize
                and b_high + itemsize > a_data):
            return False
        cdef Py_ssize_t total = rows * width
        cdef Py_ssize_t run = buffer_size() if rows > 1 else total
        if run < width:
            # Rows longer than the buffer: NumPy reads ``b`` in place for
            # runs within a row, in runs of its own choosing.
            return False
        cdef char *buffer = NULL
        if rows > 1:
            buffer = <char *>malloc(min(run, total) * itemsize)
            if buffer == NULL:
                return False
        cdef Py_ssize_t steps[3]
        steps[0] = itemsize
        steps[1] = itemsize if rows > 1 else b_stride
        steps[2] = itemsize
        if total == 1:
            # As in ``into``: NumPy's iterator gives a one-element loop
            # stride 0, and the loop's reduction branch keeps ``b``'s NaN.
            steps[0] = steps[1] = steps[2] = 0
        cdef char *args[3]
        cdef Py_ssize_t start = 0, count
        clear_flags(all_flags())
        # A while loop: Cython iterates a range whose step's sign it cannot
        # see through Python's range object (``run`` is at least ``width``,
        # so positive).
        while start < total:
            count = min(run, total - start)
            args[0] = a_data + start * itemsize
            args[2] = args[0]
            if buffer == NULL:
                args[1] = b_data
            else:
                _repeat_into(buffer, count, b_data, width, b_stride,
                             start % width, itemsize)
                args[1] = buffer
            loop.function(args, &count, steps, loop.data)
            start += run
        raised[0] |= fetestexcept(all_flags())
        free(buffer)
        return True


cdef bint _broadcast_shape(object a, int nd, Py_ssize_t *dims):
    """Broadcasts ``a``'s shape (aligned right) into ``dims[:nd]``: False
    where the lengths clash (NumPy raises)."""
    cdef int lead = nd - cfp_nd(a), k
    cdef Py_ssize_t n
    for k in range(lead, nd):
        n = cfp_dims(a)[k - lead]
        if n == 1 or n == dims[k]:
            continue
        if dims[k] != 1:
            return False
        dims[k] = n
    return True


cdef inline Py_ssize_t _stride(object a, int nd, int k):
    """Operand ``a``'s stride over axis ``k`` of an ``nd``-axis broadcast:
    0 where ``a`` has no such axis or one of one item."""
    cdef int j = k - (nd - cfp_nd(a))
    if j < 0 or cfp_dims(a)[j] == 1:
        return 0
    return cfp_strides(a)[j]


cdef bint _c_ordered(const Py_ssize_t *strides, int m):
    """Whether the nonzero ``strides`` (of axes innermost first, each of
    more than one item) are positive and none is below one inside it:
    NumPy's iterator then keeps the axes in C order (its insertion sort
    moves an axis inwards only where an operand's stride over it is the
    smaller, zero strides telling nothing), and allocates its output
    C-ordered."""
    cdef int k
    cdef Py_ssize_t inner = 0
    for k in range(m):
        if strides[k] == 0:
            continue
        if strides[k] < inner or strides[k] < 0:
            return False
        inner = strides[k]
    return True


cdef bint _rows_apart(object a, Py_ssize_t itemsize):
    """Whether the aligned 2-d ndarray ``a``'s rows are each contiguous and
    follow one another in order without overlapping: C-contiguous, or the
    rows of a column window of a wider array."""
    return (cfp_flags(a) & CFP_NPY_ALIGNED and cfp_strides(a)[1] == itemsize
            and cfp_strides(a)[0] >= cfp_dims(a)[1] * itemsize)


cdef bint _spans_meet(object a, object b, Py_ssize_t itemsize):
    """Whether the memory spans of ``_rows_apart`` arrays ``a`` and ``b``
    (first item to last) meet."""
    cdef char *a_low = cfp_data(a)
    cdef char *b_low = cfp_data(b)
    cdef char *a_high = a_low + (cfp_dims(a)[0] - 1) * cfp_strides(a)[0] + (
        cfp_dims(a)[1] * itemsize)
    cdef char *b_high = b_low + (cfp_dims(b)[0] - 1) * cfp_strides(b)[0] + (
        cfp_dims(b)[1] * itemsize)
    return a_low < b_high and b_low < a_high


cdef void _gather_rows_run(char *buffer, object a, Py_ssize_t start,
                           Py_ssize_t count, Py_ssize_t cols,
                           Py_ssize_t itemsize):
    """Copies the ``_rows_apart`` array ``a``'s flattened items ``start`` to
    ``start + count`` into ``buffer``, a row's run at a time."""
    cdef char *data = cfp_data(a)
    cdef Py_ssize_t row_stride = cfp_strides(a)[0]
    cdef Py_ssize_t row = start // cols, col = start % cols, n, done = 0
    while done < count:
        n = min(cols - col, count - done)
        memcpy(buffer + done * itemsize,
               data + row * row_stride + col * itemsize, n * itemsize)
        done += n
        row += 1
        col = 0


cdef inline void _row_part(char *to, const char *b, Py_ssize_t pos,
                           Py_ssize_t n, Py_ssize_t stride,
                           Py_ssize_t itemsize) noexcept nogil:
    # n items of the row b from its item pos to ``to``.
    cdef Py_ssize_t j
    if stride == itemsize:
        memcpy(to, b + pos * itemsize, n * itemsize)
        return
    for j in range(n):
        memcpy(to + j * itemsize, b + (pos + j) * stride, itemsize)


cdef void _repeat_into(char *buffer, Py_ssize_t count, const char *b,
                       Py_ssize_t width, Py_ssize_t stride, Py_ssize_t first,
                       Py_ssize_t itemsize) noexcept nogil:
    """Fills ``buffer`` with ``count`` items of the row ``b`` (``width``
    items ``stride`` bytes apart) repeated, starting at its item ``first``:
    item k is ``b[(first + k) % width]``. The row is read from item
    ``first`` to its end and then, where ``first`` is not 0, once whole;
    what follows repeats that whole row and is copied from the buffer
    itself in doubling runs (a short row would otherwise take a copy per
    repeat)."""
    cdef Py_ssize_t k, n, start
    k = min(width - first, count)
    _row_part(buffer, b, first, k, stride, itemsize)
    if first != 0 and k < count:
        n = min(width, count - k)
        _row_part(buffer + k * itemsize, b, 0, n, stride, itemsize)
        k += n
    # Where more is to come, buffer[start:k] is the whole row from item 0,
    # once or more.
    start = k - width
    while k < count:
        n = min(k - start, count - k)
        memcpy(buffer + k * itemsize, buffer + start * itemsize,
               n * itemsize)
        k += n


add_loop = Binary(numpy.add)
subtract_loop = Binary(numpy.subtract)
multiply_loop = Binary(numpy.multiply)


cdef int _WRITABLE_C_ALIGNED = (CFP_NPY_C_CONTIGUOUS | CFP_NPY_ALIGNED
                                | CFP_NPY_WRITEABLE)


cdef class Constant:
    """A number as stock writes it beside an array ``x``,
    ``x.dtype.type(value)``, in the form ``Binary`` takes: for a float32 or
    float64 ndarray, the 0-d array of that dtype NumPy itself turns the
    scalar into (NumPy 1.x casts a scalar and a 0-d array alike)."""

    def __init__(self, value):
        self.value = value
        self.f32 = numpy.full((), value, numpy.float32)
        self.f64 = numpy.full((), value, numpy.float64)
        self.f32.flags.writeable = False
        self.f64.flags.writeable = False

    cdef object like(self, object x):
        """``value`` in ``x``'s dtype: a shared read-only 0-d array for a
        float32 or float64 ndarray, else ``x.dtype.type(value)``."""
        if type(x) is _ndarray and numpy_struct_matches():
            num = cfp_typenum(x)
            if num == CFP_NPY_FLOAT:
                return self.f32
            if num == CFP_NPY_DOUBLE:
                return self.f64
        return x.dtype.type(self.value)

    def __call__(self, x):
        """``self.like(x)``, for the tests."""
        return self.like(x)


cdef inline Py_ssize_t _itemsize(object a):
    """The item size of the float32 or float64 array ``a``."""
    return 4 if cfp_typenum(a) == CFP_NPY_FLOAT else 8


cdef inline bint _operand_stride(object a, Py_ssize_t itemsize,
                                 Py_ssize_t *stride):
    """The stride NumPy's trivial path gives operand ``a`` (0 for a 0-d
    one, which it broadcasts); False where that path would not take it."""
    cdef int nd = cfp_nd(a)
    cdef int flags = cfp_flags(a)
    if not flags & CFP_NPY_ALIGNED:
        return False
    if nd == 0:
        stride[0] = 0
    elif nd == 1:
        stride[0] = cfp_strides(a)[0]
    elif flags & CFP_NPY_C_CONTIGUOUS:
        stride[0] = itemsize
    else:
        return False
    return True


cdef class Reduction(FloatLoops):
    """``numpy.add.reduce`` over every axis of an array, as NumPy makes it
    where no initial value is given: the result set to the ufunc's identity
    (0), then the loop called over the elements in runs of NumPy's buffer
    size with the result as its accumulator (stride 0), its reduce path.
    (Measured on NumPy 1.26: the first element copied as the initial value,
    or runs of another length, give other bits.)"""

    def __call__(self, a, keepdims=False):
        """``(self.all(a, keepdims), raised flags)``, for the tests."""
        cdef int raised = 0
        out = self.all(a, keepdims, &raised)
        return out, raised

    cdef object all(self, object a, bint keepdims, int *raised):
        """``ufunc.reduce(a, axis=None, keepdims=keepdims)`` as an array
        (0-d, or of ``a``'s rank with every length 1), NumPy's error
        handling off, the flags it raised added to ``raised``; None
        (nothing done) unless ``a`` is a C-contiguous, aligned, non-empty
        ndarray of a canonical float32 or float64 dtype."""
        if (type(a) is not _ndarray or not numpy_struct_matches()
                or not canonical(a)):
            return None
        cdef int typenum = cfp_typenum(a)
        cdef UfuncLoop loop = self.for_type(typenum)
        cdef int need = CFP_NPY_ALIGNED | CFP_NPY_C_CONTIGUOUS
        if loop is None or (cfp_flags(a) & need) != need:
            return None
        cdef int nd = cfp_nd(a)
        cdef Py_ssize_t count = 1, k
        for k in range(nd):
            count *= cfp_dims(a)[k]
        cdef Py_ssize_t run = buffer_size()
        if count == 0 or nd > 32 or run == 0:
            return None
        cdef Py_ssize_t ones[32]
        for k in range(nd):
            ones[k] = 1
        out = new_shaped(a, nd if keepdims else 0, ones)
        if out is None:
            return None
        cdef Py_ssize_t itemsize = 4 if typenum == CFP_NPY_FLOAT else 8
        memset(cfp_data(out), 0, itemsize)     # +0.0
        cdef Py_ssize_t steps[3]
        steps[0] = steps[2] = 0
        steps[1] = itemsize
        cdef char *args[3]
        args[0] = args[2] = cfp_data(out)
        args[1] = cfp_data(a)
        clear_flags(all_flags())
        cdef Py_ssize_t done = 0, m
        while done < count:
            m = min(run, count - done)
            loop.function(args, &m, steps, loop.data)
            args[1] += m * itemsize
            done += m
        raised[0] |= fetestexcept(all_flags())
        return out
