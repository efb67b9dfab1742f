from chainer_fastpath._core._config cimport ConfigView

# The fast path of FunctionNode.apply, filled in by the entry point
# (_fast_call.pyx) when it is imported: ``fast_apply(node, inputs, config)``
# is its apply of ``node``, ``unrecorded(cls, inputs, config)`` its apply of
# a new node of ``cls`` with no node made, or NOT_HANDLED.
ctypedef object (*fast_apply_fn)(object node, object inputs,
                                 ConfigView config)
ctypedef object (*unrecorded_fn)(object cls, tuple inputs, ConfigView config)

cdef int install_apply(object replacement, fast_apply_fn fast_apply,
                       unrecorded_fn unrecorded) except -1
cdef object apply_or_debug(object node, object inputs)
cdef object apply_new(object cls, tuple inputs)
