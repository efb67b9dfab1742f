from cpython.object cimport PyObject
from libc.stdint cimport uint64_t


cdef extern from "_dicts.h":
    uint64_t cfp_dict_version(object d)
    ctypedef struct cfp_item_memo:
        pass
    ctypedef struct cfp_keyed_memo:
        pass
    PyObject *cfp_dict_item(cfp_item_memo *m, object d,
                            object key) except? NULL
    PyObject *cfp_dict_item_keyed(cfp_keyed_memo *m, object d,
                                  object key) except? NULL
