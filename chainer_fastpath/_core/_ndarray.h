/* A mirror of NumPy 1.x's public PyArrayObject_fields / PyArray_Descr
 * layout, so compiled code reads data pointers, dtypes, shapes and flags
 * without NumPy's headers at build time. _ndarray.pyx checks it against
 * NumPy at import; its users take their fallback when it does not match. */
#ifndef CHAINER_FASTPATH_NDARRAY_H
#define CHAINER_FASTPATH_NDARRAY_H
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyTypeObject *typeobj;
    char kind;
    char type;
    char byteorder;
    char flags;
    int type_num;
    int elsize;
    int alignment;
} cfp_descr;

typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    cfp_descr *descr;
    int flags;
} cfp_array;

#define CFP_NPY_C_CONTIGUOUS 0x0001
#define CFP_NPY_F_CONTIGUOUS 0x0002
#define CFP_NPY_ALIGNED 0x0100
#define CFP_NPY_WRITEABLE 0x0400
#define CFP_NPY_HALF 23
#define CFP_NPY_INT 5
#define CFP_NPY_LONG 7
#define CFP_NPY_LONGLONG 9
#define CFP_NPY_FLOAT 11
#define CFP_NPY_DOUBLE 12

static inline char *cfp_data(PyObject *a) { return ((cfp_array *)a)->data; }
static inline int cfp_nd(PyObject *a) { return ((cfp_array *)a)->nd; }
static inline Py_ssize_t *cfp_dims(PyObject *a) { return ((cfp_array *)a)->dimensions; }
static inline Py_ssize_t *cfp_strides(PyObject *a) { return ((cfp_array *)a)->strides; }
static inline int cfp_flags(PyObject *a) { return ((cfp_array *)a)->flags; }
static inline int cfp_typenum(PyObject *a) { return ((cfp_array *)a)->descr->type_num; }
static inline PyObject *cfp_descr_of(PyObject *a) { return (PyObject *)((cfp_array *)a)->descr; }
static inline char cfp_byteorder(PyObject *a) { return ((cfp_array *)a)->descr->byteorder; }
static inline int cfp_elsize(PyObject *a) { return ((cfp_array *)a)->descr->elsize; }
/* NPY_ITEM_REFCOUNT | NPY_NEEDS_INIT: items NumPy must fill before use. */
#define CFP_NPY_NEEDS_FILL 0x09
static inline int cfp_descr_flags(PyObject *descr) { return (unsigned char)((cfp_descr *)descr)->flags; }
/* C-contiguous and aligned: what a loop needs that reads the items through
 * a pointer to their C type (a misaligned load is undefined behaviour). */
static inline int cfp_c_aligned(PyObject *a) {
    return (((cfp_array *)a)->flags & (CFP_NPY_C_CONTIGUOUS | CFP_NPY_ALIGNED))
        == (CFP_NPY_C_CONTIGUOUS | CFP_NPY_ALIGNED);
}
#endif
