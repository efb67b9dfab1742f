"""Per-call reads of ``chainer.config`` at C speed, same values as stock."""
cimport cython
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject

from chainer import configuration

cdef type _LocalConfig = configuration.LocalConfig


@cython.freelist(4)
cdef class ConfigView:

    @staticmethod
    cdef ConfigView current():
        cdef ConfigView view = ConfigView.__new__(ConfigView)
        # Looked up per call: a test may swap the module's config object.
        config = configuration.config
        if type(config) is _LocalConfig:
            view._local = config._local.__dict__
            view._global = config._global
        else:
            view._config = config
        return view

    cdef object get(self, str name):
        cdef PyObject* value
        if self._local is None:
            return getattr(self._config, name)
        value = PyDict_GetItem(self._local, name)
        if value is NULL:
            return getattr(self._global, name)
        return <object>value
