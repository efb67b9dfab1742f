cdef class GradTable:
    cdef dict grads
    cdef dict owned          # node -> Variable whose array this table owns
    cdef dict exact_sums     # node -> its owned Variable, whose array
    #                          adds_zeros_exactly
    cdef bint sums_stock     # sums_unobservable() at the pass's start

    cdef list get_as_list(self, node)
    cdef object pop(self, node)
    cdef object pop_or_none(self, node)
    cdef void reduce(self, node, list lst) except *
    cdef void adopt(self, node, a) except *


cdef bint sums_unobservable() except -1
