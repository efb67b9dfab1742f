cdef object param_device(object param)
cdef bint stock_cpu_device(object dev) except -1
cdef object update_core_cpu(object rule, object param)
