"""NumPy ufunc inner loops called directly from C.

A kernel that replaces a run of NumPy calls keeps NumPy's own function for
what C cannot reproduce bit for bit (``exp``, ``log``, ``logaddexp``: NumPy
may pick SIMD code of its own at import). Called per call site on the same
data as NumPy would, the loop gives NumPy's bits, without NumPy's
per-call cost and without its errstate handling: the caller checks the
floating-point flags (``_fpe``) and gives the work back to NumPy.
"""
import numpy

from chainer_fastpath._core._ndarray cimport CFP_NPY_FLOAT

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
