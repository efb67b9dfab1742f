"""The engine's candidate function nodes, popped in stock's order.

Stock pushes ``(-rank, arrival, node)`` on a list under ``heapq``: no two
keys are equal, so any heap pops them in the same order. ``Candidates``
keeps them as C structs while every rank is an int that fits, and leaves
each where ``heapq`` would; from the first rank that is not, it goes on as
stock's list of tuples under ``heapq`` (which then compares them as stock
does), from the very list stock's heap would be.
"""
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.limits cimport LLONG_MIN
from libc.stdlib cimport free, realloc

import heapq

cdef object _heappush = heapq.heappush
cdef object _heappop = heapq.heappop


cdef inline bint _before(Cand *a, Cand *b) noexcept nogil:
    return a.key < b.key or (a.key == b.key and a.seq < b.seq)


cdef inline void _sift_up(Cand *heap, Cand c, Py_ssize_t pos) noexcept nogil:
    """heapq's _siftdown: ``c`` placed at ``pos``, then moved up past every
    parent it comes before."""
    cdef Py_ssize_t parent
    while pos > 0:
        parent = (pos - 1) >> 1
        if not _before(&c, &heap[parent]):
            break
        heap[pos] = heap[parent]
        pos = parent
    heap[pos] = c


cdef class Candidates:
    """Stock's heap of candidate function nodes (see the module's text)."""

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.n):
            Py_DECREF(<object>self.heap[i].func)
        free(self.heap)

    cdef int push(self, object rank, Py_ssize_t seq, object func) except -1:
        cdef int overflow = 0
        cdef long long r
        if self.tuples is None:
            if type(rank) is int:
                r = PyLong_AsLongLongAndOverflow(rank, &overflow)
                if not overflow and r != LLONG_MIN:
                    return self._push_struct(-r, seq, func)
            self._to_tuples()
        _heappush(self.tuples, (-rank, seq, func))
        return 0

    cdef int _push_struct(self, long long key, Py_ssize_t seq,
                          object func) except -1:
        cdef Cand c
        cdef Cand *grown
        if self.n == self.capacity:
            grown = <Cand *>realloc(
                self.heap, (2 * self.capacity + 16) * sizeof(Cand))
            if grown == NULL:
                raise MemoryError()
            self.heap = grown
            self.capacity = 2 * self.capacity + 16
        c.key = key
        c.seq = seq
        c.func = <PyObject *>func
        Py_INCREF(func)
        self.n += 1
        _sift_up(self.heap, c, self.n - 1)
        return 0

    cdef bint empty(self):
        return self.n == 0 if self.tuples is None else not self.tuples

    cdef object pop(self):
        """The node of the smallest key (the heap must not be empty), the
        heap left as ``heapq.heappop`` leaves it."""
        if self.tuples is not None:
            return _heappop(self.tuples)[2]
        cdef Cand top = self.heap[0]
        cdef Cand last
        cdef Py_ssize_t pos = 0, child
        self.n -= 1
        if self.n > 0:
            # heapq's _siftup: the smaller child up to a leaf, then the
            # last item sifted down from there.
            last = self.heap[self.n]
            child = 1
            while child < self.n:
                if (child + 1 < self.n
                        and not _before(&self.heap[child],
                                        &self.heap[child + 1])):
                    child += 1
                self.heap[pos] = self.heap[child]
                pos = child
                child = 2 * pos + 1
            _sift_up(self.heap, last, pos)
        func = <object>top.func
        Py_DECREF(func)     # the heap's reference; ``func`` holds its own
        return func

    cdef void _to_tuples(self) except *:
        """The heap as stock's list would be: the same items in the same
        places."""
        cdef Py_ssize_t i
        tuples = []
        for i in range(self.n):
            tuples.append((self.heap[i].key, self.heap[i].seq,
                           <object>self.heap[i].func))
            Py_DECREF(<object>self.heap[i].func)
        self.n = 0
        self.tuples = tuples


def replay(ops):
    """For the tests: runs ``ops``, each ``(rank, seq, node)`` (a push) or
    None (a pop), on a ``Candidates`` heap; returns the nodes popped and
    the heap's items as stock's list of tuples would hold them then."""
    cdef Candidates heap = Candidates()
    popped = []
    for op in ops:
        if op is None:
            if heap.n == 0 and not heap.tuples:
                raise IndexError('pop from an empty heap')
            popped.append(heap.pop())
        else:
            rank, seq, node = op
            heap.push(rank, seq, node)
    if heap.tuples is None:
        heap._to_tuples()
    return popped, heap.tuples
