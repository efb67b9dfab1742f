"""Per-call reads of ``chainer.config`` and the thread's function hooks at C
speed, same values as stock."""
cimport cython
from cpython.dict cimport PyDict_GetItemWithError
from cpython.object cimport PyObject
from cpython.pystate cimport PyThreadState_GetDict

from libc.stdint cimport uint64_t

from chainer_fastpath._core._dicts cimport (
    cfp_dict_item, cfp_dict_version, cfp_item_memo)

cdef extern from "Python.h":
    Py_ssize_t PyDict_GET_SIZE(object)

import _thread

import chainer
from chainer import configuration

cdef type _LocalConfig = configuration.LocalConfig
cdef type _GlobalConfig = configuration.GlobalConfig
cdef dict _module_dict = configuration.__dict__
cdef object _thread_local = chainer._thread_local
cdef object _get_function_hooks = chainer.get_function_hooks
cdef object _get_link_hooks = chainer._get_link_hooks
cdef type _local_type = _thread._local


@cython.final
cdef class PerThread:
    """The current thread's ``__dict__`` of one ``threading.local``.

    Reading it through the local costs a lookup of the thread's own entry on
    every call; a thread's dict of a local never changes, so the one of the
    last thread that asked is kept, with that thread's state dict as the
    key. The key is held, so its address cannot come back as another
    thread's while it is remembered.
    """

    def __cinit__(self, local):
        self.local = local
        self.cacheable = type(local) is _local_type

    cdef dict get(self):
        cdef PyObject *thread_dict = PyThreadState_GetDict()
        if thread_dict is not NULL and <object>thread_dict is self.key:
            return self.value
        value = self.local.__dict__
        if self.cacheable and thread_dict is not NULL:
            # Both fields change before the old ones are released: freeing
            # them could run other threads, which must not see a mix.
            _old_key, _old_value = self.key, self.value
            self.key = <object>thread_dict
            self.value = value
        return value


cdef PerThread _hook_dicts = PerThread(_thread_local)
cdef cfp_item_memo _hooks_read
cdef cfp_item_memo _link_hooks_read
cdef cfp_item_memo _config_read
cdef cfp_item_memo _debug_local_read, _debug_global_read

# The last LocalConfig seen, with the objects its constructor stored: they
# never change (its __setattr__ writes to the thread-local object).
cdef object _last_config = None
cdef object _last_global = None
cdef dict _last_global_dict = None
cdef PerThread _last_local_dicts = None
# The view last made for a LocalConfig. A view's fields never change once
# it is made, so while the configuration object and the thread's dict are
# the ones it was made from, it is the view a new one would be.
cdef ConfigView _last_view = None


# The values last read, per name, with the two dicts they were read from
# and those dicts' versions: while neither dict changed, the value is the
# one a lookup would find (and the dict still holds it).
cdef struct _Read:
    PyObject *name
    PyObject *local
    uint64_t local_version
    PyObject *global_dict
    uint64_t global_version
    PyObject *value

cdef enum:
    _N_READS = 8
cdef _Read _reads[_N_READS]
cdef int _next_read = 0


@cython.freelist(4)
cdef class ConfigView:

    @staticmethod
    cdef ConfigView current():
        global _last_config, _last_local_dicts, _last_global
        global _last_global_dict, _last_view
        cdef ConfigView view
        # Read per call (memoized): a test may swap the module's config
        # object.
        cdef PyObject *found = cfp_dict_item(&_config_read, _module_dict,
                                             'config')
        config = <object>found if found is not NULL else configuration.config
        if config is not _last_config:
            if type(config) is not _LocalConfig:
                view = ConfigView.__new__(ConfigView)
                view._config = config
                return view
            _last_view = None
            _last_local_dicts = PerThread(config._local)
            _last_global = config._global
            # A plain GlobalConfig holds its values in its __dict__; the
            # class only gives None to names never set.
            _last_global_dict = (_last_global.__dict__
                                 if type(_last_global) is _GlobalConfig
                                 else None)
            _last_config = config
        local = _last_local_dicts.get()
        view = _last_view
        if view is not None and view._local is local:
            return view
        view = ConfigView.__new__(ConfigView)
        view._local = local
        view._global = _last_global
        view._global_dict = _last_global_dict
        _last_view = view
        return view

    cdef object get(self, str name):
        global _next_read
        cdef PyObject *value
        cdef _Read *read
        cdef int i
        if self._local is None:
            return getattr(self._config, name)
        if self._global_dict is None:
            return self._lookup(name)
        for i in range(_N_READS):
            read = &_reads[i]
            if read.name == <PyObject *>name:
                if (read.local == <PyObject *>self._local
                        and read.global_dict == <PyObject *>self._global_dict
                        and read.local_version
                        == cfp_dict_version(self._local)
                        and read.global_version
                        == cfp_dict_version(self._global_dict)):
                    return <object>read.value
                break
        else:
            i = _next_read
            _next_read = (_next_read + 1) % _N_READS
        value = self._found(name)
        if value is NULL:
            return getattr(self._global, name)
        read = &_reads[i]
        read.name = <PyObject *>name
        read.local = <PyObject *>self._local
        read.local_version = cfp_dict_version(self._local)
        read.global_dict = <PyObject *>self._global_dict
        read.global_version = cfp_dict_version(self._global_dict)
        read.value = value
        return <object>value

    cdef PyObject *_found(self, str name) except? NULL:
        """The value of ``name`` in the thread's dict, else in the global
        dict (borrowed); NULL where neither has it."""
        cdef PyObject *value
        if PyDict_GET_SIZE(self._local) != 0:
            value = PyDict_GetItemWithError(self._local, name)
            if value is not NULL:
                return value
        return PyDict_GetItemWithError(self._global_dict, name)

    cdef object _lookup(self, str name):
        """``name`` where the global configuration keeps no plain dict:
        the thread's value, else the global object's attribute."""
        cdef PyObject *value
        # Outside ``using_config`` the thread's dict is empty: no lookup.
        if PyDict_GET_SIZE(self._local) != 0:
            value = PyDict_GetItemWithError(self._local, name)
            if value is not NULL:
                return <object>value
        return getattr(self._global, name)


cdef object function_hooks():
    """``chainer.get_function_hooks()``: the thread's dict, read directly
    once it exists."""
    cdef PyObject *found = cfp_dict_item(&_hooks_read, _hook_dicts.get(),
                                         'function_hooks')
    if found is not NULL:
        return <object>found
    return _get_function_hooks()


cdef object link_hooks():
    """``chainer._get_link_hooks()``: the thread's dict, read directly
    once it exists."""
    cdef PyObject *found = cfp_dict_item(&_link_hooks_read,
                                         _hook_dicts.get(), 'link_hooks')
    if found is not NULL:
        return <object>found
    return _get_link_hooks()


cdef bint debug_mode() except -1:
    """``chainer.is_debug()``. In debug mode each node records the Python
    stack of its creation; a compiled caller leaves no frame there, so the
    callers that apply nodes take their original code then."""
    # ConfigView.current().get('debug') without making a view: Link.__call__
    # asks on every call. (The operators learn it from apply: see
    # _runtime._apply_node.apply_or_debug.)
    cdef PyObject *found = cfp_dict_item(&_config_read, _module_dict,
                                         'config')
    if (found is NULL or <object>found is not _last_config
            or _last_global_dict is None):
        return bool(ConfigView.current().get('debug'))
    cdef dict local = _last_local_dicts.get()
    found = (cfp_dict_item(&_debug_local_read, local, 'debug')
             if PyDict_GET_SIZE(local) != 0 else NULL)
    if found is NULL:
        found = cfp_dict_item(&_debug_global_read, _last_global_dict,
                              'debug')
        if found is NULL:
            return bool(getattr(_last_global, 'debug'))
    return bool(<object>found)
