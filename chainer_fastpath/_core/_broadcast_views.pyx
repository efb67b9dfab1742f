# cython: boundscheck=False, wraparound=False
"""NumPy's ``broadcast_to`` and ``broadcast_arrays`` for ndarrays, their
views made in C: the shape, strides, flags, dtype, data and base NumPy's
``nditer`` gives them, without building one.

The views are checked against NumPy's own on probes at import; where one
differs, or a function is replaced on ``numpy``, or an argument is not a
plain ndarray and a tuple of plain ints NumPy would broadcast to, NumPy
makes them (and raises its errors)."""
import numpy

from cpython.pyport cimport PY_SSIZE_T_MAX

from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_WRITEABLE, api_entry, cfp_data, cfp_descr_of, cfp_dims,
    cfp_elsize, cfp_flags, cfp_nd, cfp_strides, numpy_struct_matches)

cdef extern from *:
    """
    typedef PyObject *(*cfp_view_new_t)(
        PyTypeObject *, PyObject *, int, const Py_ssize_t *,
        const Py_ssize_t *, void *, int, PyObject *);
    typedef int (*cfp_set_base_t)(PyObject *, PyObject *);
    static cfp_view_new_t cfp_view_new_fn = NULL;
    static cfp_set_base_t cfp_set_base_fn = NULL;
    /* NumPy's private NPY_ARRAY_WARN_ON_WRITE (arrayobject.h): a write
       warns that the array is a broadcast view. */
    #define CFP_WARN_ON_WRITE ((int)0x80000000u)
    /* PyArray_NewFromDescr(array_type, descr, nd, dims, strides, data,
       flags, NULL), which computes the contiguity and alignment flags,
       then PyArray_SetBaseObject(view, a), which sets the base to the
       first owner of the data and carries a's WARN_ON_WRITE over, as for
       the views of NumPy's nditer. */
    static PyObject *cfp_view_of(PyObject *array_type, PyObject *a,
                                 PyObject *descr, char *data, int nd,
                                 const Py_ssize_t *dims,
                                 const Py_ssize_t *strides, int flags,
                                 int warn_on_write) {
        PyObject *v;
        Py_INCREF(descr);
        v = cfp_view_new_fn((PyTypeObject *)array_type, descr, nd, dims,
                            strides, data, flags, NULL);
        if (v == NULL)
            return NULL;
        Py_INCREF(a);
        if (cfp_set_base_fn(v, a) < 0) {    /* it took a's reference */
            Py_DECREF(v);
            return NULL;
        }
        if (warn_on_write)
            ((cfp_array *)v)->flags |= CFP_WARN_ON_WRITE;
        return v;
    }
    """
    ctypedef void *cfp_view_new_t
    ctypedef void *cfp_set_base_t
    cfp_view_new_t cfp_view_new_fn
    cfp_set_base_t cfp_set_base_fn
    int CFP_WARN_ON_WRITE
    object cfp_view_of(object array_type, object a, void *descr, char *data,
                       int nd, const Py_ssize_t *dims,
                       const Py_ssize_t *strides, int flags,
                       bint warn_on_write)

cdef type _ndarray = numpy.ndarray
cdef object _np_broadcast_to = numpy.broadcast_to
cdef object _np_broadcast_arrays = numpy.broadcast_arrays
cdef object _numpy = numpy
# PyArray_NewFromDescr and PyArray_SetBaseObject in NumPy 1.x's C-API
# table (numpy/__multiarray_api.h).
cdef int _NEW_FROM_DESCR_INDEX = 94
cdef int _SET_BASE_INDEX = 282
cdef bint _ready = False


cdef bint _shape_of(object shape, int *nd, Py_ssize_t *dims) except -1:
    # shape, a tuple of at most 32 plain non-negative ints, into dims.
    if type(shape) is not tuple or len(<tuple>shape) > 32:
        return False
    nd[0] = len(<tuple>shape)
    cdef int k
    for k in range(nd[0]):
        d = (<tuple>shape)[k]
        if type(d) is not int or not 0 <= d < 2 ** 62:
            return False
        dims[k] = d
    return True


cdef object _view(object a, int nd, const Py_ssize_t *dims, bint writable):
    """``a`` broadcast to ``dims[:nd]`` as NumPy's nditer views it: stride
    0 on every new axis, every axis ``a`` has length 1 on and every axis of
    length 1; None where NumPy would raise (or decline itself)."""
    cdef int and_ = cfp_nd(a), off = nd - and_, k
    if off < 0:
        return None
    cdef Py_ssize_t strides[32]
    cdef Py_ssize_t d, size = cfp_elsize(a)
    for k in range(nd):
        # A view too large to address: NumPy's iterator says so itself.
        if dims[k] and size > PY_SSIZE_T_MAX // dims[k]:
            return None
        size *= dims[k]
    for k in range(nd):
        strides[k] = 0
        if k < off:
            continue
        d = cfp_dims(a)[k - off]
        if dims[k] == 1:
            # Stride 0, as NumPy's iterator gives a length-1 axis; only
            # a's length 1 broadcasts to it.
            if d != 1:
                return None
        elif d == dims[k]:
            strides[k] = cfp_strides(a)[k - off]
        elif d != 1:
            return None
    cdef int flags = cfp_flags(a)
    # broadcast_arrays leaves a view writeable, warning on a write, where
    # its operand is writeable; broadcast_to never does.
    cdef bint write = writable and flags & CFP_NPY_WRITEABLE
    return cfp_view_of(_ndarray, a, cfp_descr_of(a), cfp_data(a), nd, dims,
                       strides, CFP_NPY_WRITEABLE if write else 0, write)


cdef object broadcast_to(object a, object shape):
    """``numpy.broadcast_to(a, shape)``."""
    cdef int nd = 0
    cdef Py_ssize_t dims[32]
    if (_ready and type(a) is _ndarray
            and _numpy.broadcast_to is _np_broadcast_to
            and _shape_of(shape, &nd, dims)):
        y = _view(a, nd, dims, False)
        if y is not None:
            return y
    return _numpy.broadcast_to(a, shape)


cdef object broadcast_arrays(tuple arrays):
    """``numpy.broadcast_arrays(*arrays)``: a list, of the arrays
    themselves where their shapes are all one."""
    cdef Py_ssize_t n = len(arrays)
    if (not _ready or n == 0 or n > 32
            or _numpy.broadcast_arrays is not _np_broadcast_arrays):
        return _numpy.broadcast_arrays(*arrays)
    cdef Py_ssize_t dims[32]
    cdef int nd = 0, k, m, off
    cdef Py_ssize_t d
    for a in arrays:
        if type(a) is not _ndarray:
            return _numpy.broadcast_arrays(*arrays)
        nd = max(nd, cfp_nd(a))
    for k in range(nd):
        dims[k] = 1
    for a in arrays:
        m = cfp_nd(a)
        off = nd - m
        for k in range(m):
            d = cfp_dims(a)[k]
            if dims[k + off] == 1:
                dims[k + off] = d
            elif d != 1 and d != dims[k + off]:
                return _numpy.broadcast_arrays(*arrays)
    cdef bint same = True
    for a in arrays:
        same = same and cfp_nd(a) == nd
        for k in range(cfp_nd(a) if same else 0):
            same = same and cfp_dims(a)[k] == dims[k]
    if same:
        return list(arrays)
    cdef list out = []
    for a in arrays:
        y = _view(a, nd, dims, True)
        if y is None:
            return _numpy.broadcast_arrays(*arrays)
        out.append(y)
    return out


def _probes_agree():
    """Whether the views made here equal NumPy's on probes: shape, strides,
    raw flags, dtype, data and base."""
    x = numpy.arange(6, dtype=numpy.float32).reshape(2, 1, 3)
    r = x.copy()
    r.flags.writeable = False
    pairs = [(numpy.broadcast_to(x, (4, 2, 5, 3)),
              broadcast_to(x, (4, 2, 5, 3))),
             (numpy.broadcast_to(x[:, :, ::-2], (2, 1, 2)),
              broadcast_to(x[:, :, ::-2], (2, 1, 2)))]
    for ours, theirs in ((broadcast_arrays((x, r[0, 0])),
                          numpy.broadcast_arrays(x, r[0, 0])),
                         (broadcast_arrays((x[0], x)),
                          numpy.broadcast_arrays(x[0], x))):
        pairs += list(zip(theirs, ours))
    for theirs, ours in pairs:
        if not (type(ours) is _ndarray and ours.shape == theirs.shape
                and ours.strides == theirs.strides
                and cfp_flags(ours) == cfp_flags(theirs)
                and ours.dtype is theirs.dtype
                and cfp_data(ours) == cfp_data(theirs)
                and ours.base is theirs.base):
            return False
    return True


def _load():
    global cfp_view_new_fn, cfp_set_base_fn, _ready
    if not numpy_struct_matches() or api_entry(_SET_BASE_INDEX) is NULL:
        return
    cfp_view_new_fn = <cfp_view_new_t>api_entry(_NEW_FROM_DESCR_INDEX)
    cfp_set_base_fn = <cfp_set_base_t>api_entry(_SET_BASE_INDEX)
    _ready = True
    _ready = _probes_agree()


_load()


def ready():
    """Whether the views are made here (else NumPy makes them)."""
    return _ready


def broadcast_to_(a, shape):
    """``broadcast_to`` for the tests."""
    return broadcast_to(a, shape)


def broadcast_arrays_(*arrays):
    """``broadcast_arrays`` for the tests."""
    return broadcast_arrays(arrays)


def raw_flags(a):
    """An ndarray's flags word, NumPy's private bits included."""
    return cfp_flags(a)
