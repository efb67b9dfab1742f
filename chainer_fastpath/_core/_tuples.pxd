# Tuples filled slot by slot that are whole at every moment.
#
# PyTuple_New(n) gives a tracked tuple of n empty (NULL) slots. Filling them
# in a loop that makes objects (Variables, nodes, weak references) can start
# a collection, which runs gc callbacks and finalizers; any of them may walk
# gc.get_objects() or gc.get_referrers() and read an empty slot, crashing
# the interpreter. So the slots hold None until filled: nones(n), then
# set_item(t, i, x) for each slot. (Cheaper than keeping the tuple off the
# collector's lists meanwhile: two calls into the interpreter per tuple.)
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM


cdef inline tuple nones(Py_ssize_t n):
    """A new tuple of ``n`` Nones, for :func:`set_item` to fill."""
    cdef tuple t = PyTuple_New(n)
    cdef Py_ssize_t i
    for i in range(n):
        Py_INCREF(None)
        PyTuple_SET_ITEM(t, i, None)
    return t


cdef inline void set_item(tuple t, Py_ssize_t i, object item) noexcept:
    """Puts ``item`` in slot ``i`` of a tuple from :func:`nones`, in place
    of its None (the caller's tuple: no one else has seen it)."""
    Py_INCREF(item)
    PyTuple_SET_ITEM(t, i, item)
    Py_DECREF(None)
