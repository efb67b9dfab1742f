"""Instance attributes read and written through a per-site cache
(``_attrs.h``), and the check that lets the compiled modules use it.

Each module that includes the header calls
``cfp_attr_enable(_attrs.FAST)`` at import: until then, and wherever the
check below failed, every access takes the generic way.
"""
from cpython.object cimport PyObject
from cpython.ref cimport Py_XDECREF

from chainer_fastpath._core._attrs cimport (
    CFP_ATTR_FAST, CFP_ATTR_GET, CFP_ATTR_LOOKUP, CFP_ATTR_SET, cfp_attr,
    cfp_attr_enable, cfp_attr_make, cfp_class_has, cfp_getattr, cfp_setattr,
    set_site)

cdef extern from "_attrs.h":
    PyObject *cfp_attr_fast_read(object obj, cfp_attr *a)
    PyObject **cfp_values(object obj)
    PyObject *cfp_dict(object obj)


cdef dict _MODES = {'get': CFP_ATTR_GET, 'set': CFP_ATTR_SET,
                    'lookup': CFP_ATTR_LOOKUP}


cdef class Site:
    """One cache, for the tests and the check: ``Site(name, 'get')`` reads
    ``obj.<name>`` (``get``), ``'set'`` writes it (``set``), ``'lookup'``
    answers ``class_has``."""
    cdef cfp_attr attr

    def __init__(self, str name, str mode):
        self.attr = cfp_attr_make(name, _MODES[mode])

    def __dealloc__(self):
        Py_XDECREF(self.attr.name)

    def get(self, obj):
        return cfp_getattr(obj, &self.attr)

    def set(self, obj, value):
        cfp_setattr(obj, &self.attr, value)

    def class_has(self, obj, original):
        """True where the cache shows that ``obj``'s class has
        ``original`` under the name and ``obj`` no attribute of it; False
        where it cannot show it."""
        return cfp_class_has(obj, &self.attr, original)

    def fast_read(self, obj):
        """The value the cached way finds, or a miss (``_MISS``)."""
        cdef PyObject *v = cfp_attr_fast_read(obj, &self.attr)
        return _MISS if v == NULL else <object>v


_MISS = object()


def _layout_matches():
    """Whether this interpreter keeps instance attributes where
    ``_attrs.h`` reads and writes them: values stored the generic way read
    back through the cache, and values stored through it appear in the
    instance's ``__dict__`` with their order and in ``getattr``."""
    class Probe:
        pass

    first = Probe()
    first.a, first.b, first.c = 'a', 'b', 'c'   # the class's shared keys
    second = Probe()
    second.c = 'generic'
    if Site('c', 'get').fast_read(second) != 'generic':
        return False
    third = Probe()
    Site('b', 'set').set(third, 'B')
    Site('a', 'set').set(third, 'A')
    Site('a', 'set').set(third, 'A2')
    # Read back before ``__dict__``, which gives the instance a dict.
    if not (Site('b', 'get').fast_read(third) == 'B'
            and getattr(third, 'a') == 'A2'
            and list(third.__dict__.items()) == [('b', 'B'), ('a', 'A2')]):
        return False
    # Where the instance has a dict, the cached way finds it there.
    d = third.__dict__
    return (cfp_values(third) == NULL and cfp_dict(third) == <PyObject *>d
            and cfp_dict(first) == NULL)


def _check():
    if not CFP_ATTR_FAST:
        return False
    cfp_attr_enable(1)
    ok = _layout_matches()
    cfp_attr_enable(ok)
    return ok


FAST = _check()
"""Whether the cached way is in use in this interpreter."""

cdef cfp_attr _input_retained = set_site('_input_indexes_to_retain')
cdef cfp_attr _output_retained = set_site('_output_indexes_to_retain')


cdef int retain_inputs(object node, object indexes) except -1:
    """``node._input_indexes_to_retain = indexes``, as a compiled forward
    leaves what stock's ``retain_inputs`` would."""
    return cfp_setattr(node, &_input_retained, indexes)


cdef int retain_outputs(object node, object indexes) except -1:
    """``node._output_indexes_to_retain = indexes``."""
    return cfp_setattr(node, &_output_retained, indexes)
