"""Whether a class still has the methods a compiled path was audited
against.

Looking every method up on every call costs a type lookup per name. CPython
gives each type a version tag that it clears whenever the type or one of its
bases is modified (``cls.forward = ...``, ``mock.patch.object``): a class
verified once is verified again only after its tag changed.
"""
from cpython.object cimport PyTypeObject

cdef extern from *:
    """
    static inline unsigned int cfp_type_version(PyTypeObject *tp) {
        return (tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
            ? tp->tp_version_tag : 0;
    }
    """
    unsigned int cfp_type_version(PyTypeObject *tp)


cdef class StockMethods:
    """The methods ``names`` of ``cls`` as they are now (the originals)."""

    def __init__(self, type cls, names):
        self.cls = cls
        self.names = tuple(names)
        self.originals = tuple([getattr(cls, name) for name in self.names])
        self._version = 0

    cdef bint on_class(self) except -1:
        """Whether ``cls`` still finds every original."""
        cdef Py_ssize_t i
        cdef unsigned int version = cfp_type_version(<PyTypeObject *>self.cls)
        if version != 0 and version == self._version:
            return True
        for i in range(len(self.names)):
            if (getattr(self.cls, <str>self.names[i])
                    is not self.originals[i]):
                return False
        # A metaclass of its own could run code on lookup: never trust
        # the tag of such a class.
        if type(self.cls) is type:
            self._version = cfp_type_version(<PyTypeObject *>self.cls)
        return True

    cdef bint found_by(self, object obj) except -1:
        """Whether ``obj``, an instance of exactly ``cls``, finds every
        original: none set on the instance, none replaced on the class."""
        cdef dict own = obj.__dict__
        for name in self.names:
            if name in own:
                return False
        return self.on_class()
