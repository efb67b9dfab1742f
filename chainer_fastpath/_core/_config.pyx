"""Per-call reads of ``chainer.config`` and the thread's function hooks at C
speed, same values as stock."""
cimport cython
from cpython.dict cimport PyDict_GetItem, PyDict_GetItemWithError
from cpython.object cimport PyObject

import chainer
from chainer import configuration

cdef type _LocalConfig = configuration.LocalConfig
cdef type _GlobalConfig = configuration.GlobalConfig
cdef dict _module_dict = configuration.__dict__
cdef object _thread_local = chainer._thread_local
cdef object _get_function_hooks = chainer.get_function_hooks

# The last LocalConfig seen, with the objects its constructor stored: they
# never change (its __setattr__ writes to the thread-local object).
cdef object _last_config = None
cdef object _last_local = None
cdef object _last_global = None
cdef dict _last_global_dict = None


@cython.freelist(4)
cdef class ConfigView:

    @staticmethod
    cdef ConfigView current():
        global _last_config, _last_local, _last_global, _last_global_dict
        cdef ConfigView view = ConfigView.__new__(ConfigView)
        # Looked up per call: a test may swap the module's config object.
        cdef PyObject *found = PyDict_GetItem(_module_dict, 'config')
        config = <object>found if found is not NULL else configuration.config
        if config is not _last_config:
            if type(config) is not _LocalConfig:
                view._config = config
                return view
            _last_local = config._local
            _last_global = config._global
            # A plain GlobalConfig holds its values in its __dict__; the
            # class only gives None to names never set.
            _last_global_dict = (_last_global.__dict__
                                 if type(_last_global) is _GlobalConfig
                                 else None)
            _last_config = config
        view._local = _last_local.__dict__
        view._global = _last_global
        view._global_dict = _last_global_dict
        return view

    cdef object get(self, str name):
        cdef PyObject *value
        if self._local is None:
            return getattr(self._config, name)
        value = PyDict_GetItemWithError(self._local, name)
        if value is not NULL:
            return <object>value
        if self._global_dict is not None:
            value = PyDict_GetItemWithError(self._global_dict, name)
            if value is not NULL:
                return <object>value
        return getattr(self._global, name)


cdef object function_hooks():
    """``chainer.get_function_hooks()``: the thread's dict, read directly
    once it exists."""
    try:
        return _thread_local.function_hooks
    except AttributeError:
        return _get_function_hooks()


cdef bint debug_mode() except -1:
    """``chainer.is_debug()``. In debug mode each node records the Python
    stack of its creation; a compiled caller leaves no frame there, so the
    callers that apply nodes take their original code then."""
    # ConfigView.current().get('debug') without making a view: Link.__call__
    # asks on every call. (The operators learn it from apply: see
    # _fast_call.apply_or_debug.)
    cdef PyObject *found = PyDict_GetItem(_module_dict, 'config')
    if (found is NULL or <object>found is not _last_config
            or _last_global_dict is None):
        return bool(ConfigView.current().get('debug'))
    found = PyDict_GetItemWithError(_last_local.__dict__, 'debug')
    if found is NULL:
        found = PyDict_GetItemWithError(_last_global_dict, 'debug')
        if found is NULL:
            return bool(getattr(_last_global, 'debug'))
    return bool(<object>found)
