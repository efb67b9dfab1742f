from chainer_fastpath._core._attrs cimport cfp_attr, cfp_class_memo


cdef class StockMethods:
    cdef readonly object cls    # a class (of any metaclass)
    cdef readonly tuple names
    cdef readonly tuple originals
    cdef tuple _in_class         # per name: what the class's MRO holds
    cdef unsigned int _version
    cdef bint _functions
    cdef tuple _shadowable
    cdef cfp_attr *_sites       # per name: a lookup_site
    cdef Py_ssize_t _n_sites
    cdef cfp_class_memo _memo   # the class last found with every original

    cdef bint on_class(self) except -1
    cdef bint found_by(self, object obj) except -1


cdef class StockModule:
    cdef readonly str name
    cdef dict _dict
    cdef tuple _names           # as first read, and their values
    cdef tuple _values
    cdef unsigned long long _version

    cdef str rebound(self)


cdef class StockFunctions:
    cdef readonly tuple pairs      # (module, name)
    cdef readonly tuple originals
    cdef tuple _dicts               # the modules' dicts, each once
    cdef unsigned long long *_versions  # theirs when last found stock's
    cdef Py_ssize_t _n

    cdef bint unchanged(self) except -1


cdef str stock_replaced()
cdef bint class_finds(object cls, str name, object value)
cdef bint method_is(object obj, str name, object original)
cdef bint method_is_at(object obj, cfp_attr *site, object original)
cdef unsigned int type_version(object cls)
