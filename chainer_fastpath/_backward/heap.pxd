from cpython.object cimport PyObject


cdef struct Cand:
    long long key           # -rank
    Py_ssize_t seq          # arrival: len(seen_set) then
    PyObject *func          # a reference owned by the heap


cdef class Candidates:
    cdef Cand *heap
    cdef Py_ssize_t n, capacity
    cdef list tuples        # None while the C heap is in use

    cdef int push(self, object rank, Py_ssize_t seq, object func) except -1
    cdef int _push_struct(self, long long key, Py_ssize_t seq,
                          object func) except -1
    cdef bint empty(self)
    cdef object pop(self)
    cdef void _to_tuples(self) except *
