from cpython.object cimport PyObject


cdef class PerThread:
    cdef object local
    cdef bint cacheable
    cdef object key
    cdef dict value

    cdef dict get(self)


cdef class ConfigView:
    """``chainer.config`` as seen by the current thread, read without
    ``LocalConfig.__getattr__``: thread-local value first, then global."""
    cdef dict _local
    cdef dict _global_dict
    cdef object _global
    cdef object _config

    @staticmethod
    cdef ConfigView current()
    cdef object get(self, str name)
    cdef PyObject *_found(self, str name) except? NULL
    cdef object _lookup(self, str name)


cdef object function_hooks()
cdef object link_hooks()
cdef bint debug_mode() except -1
