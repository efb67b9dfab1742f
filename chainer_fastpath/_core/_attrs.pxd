from cpython.object cimport PyObject


cdef extern from "_attrs.h":
    ctypedef struct cfp_attr:
        PyObject *name
    int CFP_ATTR_FAST
    int CFP_ATTR_GET, CFP_ATTR_SET, CFP_ATTR_LOOKUP
    cfp_attr cfp_attr_make(object name, int mode)
    void cfp_attr_enable(int ok)
    object cfp_getattr(object obj, cfp_attr *a)
    int cfp_setattr(object obj, cfp_attr *a, object value) except -1
    bint cfp_class_has(object obj, cfp_attr *a, object original)
    bint cfp_class_value(object obj, cfp_attr *a, PyObject **value)
    PyObject *cfp_own_dict(object obj)
    ctypedef struct cfp_class_memo:
        pass
    bint cfp_memo_holds(cfp_class_memo *m, object obj)
    void cfp_memo_take(cfp_class_memo *m, object obj, cfp_attr *names,
                       Py_ssize_t n)


cdef int retain_inputs(object node, object indexes) except -1
cdef int retain_outputs(object node, object indexes) except -1


cdef inline cfp_attr get_site(str name):
    """A cache for reading ``obj.<name>``."""
    return cfp_attr_make(name, CFP_ATTR_GET)


cdef inline cfp_attr set_site(str name):
    """A cache for ``obj.<name> = value``."""
    return cfp_attr_make(name, CFP_ATTR_SET)


cdef inline cfp_attr lookup_site(str name):
    """A cache for ``cfp_class_has`` (is ``obj.<name>`` the class's own?)."""
    return cfp_attr_make(name, CFP_ATTR_LOOKUP)
