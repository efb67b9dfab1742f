cdef void replay_sum_exceptions(object dtype, int raised) except *
