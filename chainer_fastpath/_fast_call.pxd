from chainer_fastpath._core._stats cimport EntryStats

cdef object apply_or_debug(object node, tuple inputs)
cdef object apply_single(EntryStats stats, object node, tuple inputs)
