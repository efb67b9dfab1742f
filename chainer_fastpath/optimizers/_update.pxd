cdef bint stock_cpu_device(object dev) except -1
