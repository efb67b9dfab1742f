from chainer_fastpath._core._dicts cimport cfp_keyed_memo
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats


cdef class Public:
    cdef readonly EntryStats stats
    cdef readonly Signature signature
    cdef readonly dict globals
    cdef object original
    cdef cfp_keyed_memo global_reads

    cdef tuple arguments(self, tuple args, dict kwargs)
    cdef object apply_all(self, object node, object inputs)
    cdef object _counted(self, object outputs)
    cdef object apply(self, object node, object inputs, bint unpack=*)
    cdef object apply_class(self, object cls, tuple inputs, bint unpack=*)
    cdef object read_global(self, str name)
    cdef object stock(self, tuple args, dict kwargs)
    cdef object call_new(self, str node_class, tuple args, dict kwargs,
                         bint unpack=*)
