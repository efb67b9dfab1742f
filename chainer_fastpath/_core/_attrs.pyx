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
    ctypedef struct PyTypeObject
    PyObject *cfp_attr_fast_read(object obj, cfp_attr *a)
    PyObject **cfp_values(object obj)
    PyObject *cfp_dict(object obj)
    object cfp_shared_key_names(PyTypeObject *tp)


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


def shared_keys(type cls):
    """``(names, room)``: the names in the shared key table of ``cls``'s
    instances, in slot order, and how many more it takes; None where the
    cached way is not in use or ``cls`` keeps no such table."""
    if not FAST:
        return None
    return cfp_shared_key_names(<PyTypeObject *>cls)


cdef extern from *:
    """
    #ifndef Py_TPFLAGS_MANAGED_DICT
    #define Py_TPFLAGS_MANAGED_DICT 0
    #endif
    #define cfp_managed_dict(tp) \\
        (Py_TPFLAGS_MANAGED_DICT != 0 \\
         && PyType_HasFeature((PyTypeObject *)(tp), \\
                           Py_TPFLAGS_MANAGED_DICT))
    """
    bint cfp_managed_dict(object tp)


def keeps_values(obj):
    """Whether ``obj`` keeps its attributes in a values array (not a dict of
    its own); None where the cached way is not in use."""
    if not FAST:
        return None
    if not cfp_managed_dict(type(obj)):
        return False    # nothing before the object to read
    return cfp_values(obj) != NULL


def _class_attribute(type cls, str name):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def reserve(type cls, names):
    """Gives ``names`` slots in the shared key table of ``cls``'s
    instances, in order, as far as the table has room; returns
    :func:`shared_keys` then.

    CPython 3.11 and 3.12 add a name to a class's table when an instance
    first stores it, while the table has room; the room shrinks by one with
    every instance made, and an instance that stores a name the table lacks
    moves all its attributes into a dict of its own (one more object for the
    cyclic collector, a dict lookup per access). So a name that instances
    only get late in their life misses the table once enough of them were
    made before any got it. Here one instance, made with ``object.__new__``,
    stores the names first (``None`` through ``object.__setattr__``) and is
    dropped: what any instance storing them would do to the table, and
    nothing else. A name the class has a data descriptor for is skipped
    (storing it would run the descriptor).
    """
    if shared_keys(cls) is None:
        return None
    probe = object.__new__(cls)
    for name in names:
        if not hasattr(type(_class_attribute(cls, name)), '__set__'):
            object.__setattr__(probe, name, None)
    del probe
    return shared_keys(cls)


cdef cfp_attr _set_input_retained = set_site('_input_indexes_to_retain')
cdef cfp_attr _set_output_retained = set_site('_output_indexes_to_retain')


cdef int retain_inputs(object node, object indexes) except -1:
    """``node._input_indexes_to_retain = indexes``, as a compiled forward
    leaves what stock's ``retain_inputs`` would; nothing where ``node`` is
    None (a ``nodeless`` forward's)."""
    if node is None:
        return 0
    return cfp_setattr(node, &_set_input_retained, indexes)


cdef int retain_outputs(object node, object indexes) except -1:
    """``node._output_indexes_to_retain = indexes``; nothing where ``node``
    is None."""
    if node is None:
        return 0
    return cfp_setattr(node, &_set_output_retained, indexes)
