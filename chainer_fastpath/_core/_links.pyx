"""A link tree's parameters as stock's ``params()`` generators yield them,
gathered without running the generators, for the compiled paths that walk
every parameter (the optimizers' update, ``Link.cleargrads``)."""
from cpython.object cimport PyObject, PyTypeObject

from chainer import link as link_module

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, get_site)
from chainer_fastpath._core import _attrs

cdef extern from "Python.h":
    ctypedef Py_ssize_t Py_hash_t
    PyObject *_PyType_Lookup(PyTypeObject *tp, object name)
    int _PySet_NextEntry(object set, Py_ssize_t *pos, PyObject **key,
                         Py_hash_t *hash)

cfp_attr_enable(_attrs.FAST)
cdef cfp_attr _get_params = get_site('_params')
cdef cfp_attr _get_children = get_site('_children')

cdef object _Link = link_module.Link
cdef object _Chain = link_module.Chain
cdef object _ChainList = link_module.ChainList
cdef object _link_params = _Link.__dict__['params']
cdef object _chain_params = _Chain.__dict__['params']
cdef object _chainlist_params = _ChainList.__dict__['params']
cdef object _link_namedparams = _Link.__dict__['namedparams']
cdef object _chain_namedparams = _Chain.__dict__['namedparams']
cdef object _chainlist_namedparams = _ChainList.__dict__['namedparams']


cdef int collect_params(object link, list out) except -1:
    """Appends ``link.params()`` (include_uninit=True) in stock order.
    Returns 0 when a link in the tree is not a plain Link/Chain/ChainList."""
    # What the class's MRO holds, as the method cache finds it: for a
    # function, what ``getattr(cls, name)`` returns.
    cdef object cls = type(link)
    cdef PyObject *fp = _PyType_Lookup(<PyTypeObject *>cls, 'params')
    cdef PyObject *fn = _PyType_Lookup(<PyTypeObject *>cls, 'namedparams')
    d = link.__dict__
    if 'params' in d or 'namedparams' in d:
        return 0
    if fp == <PyObject *>_link_params:
        if fn != <PyObject *>_link_namedparams:
            return 0
        kind = 0
    elif fp == <PyObject *>_chain_params:
        if fn != <PyObject *>_chain_namedparams:
            return 0
        kind = 1
    elif fp == <PyObject *>_chainlist_params:
        if fn != <PyObject *>_chainlist_namedparams:
            return 0
        kind = 2
    else:
        return 0
    for name in _sorted(get(link, &_get_params)):
        out.append(d[name])
    if kind == 1:
        for name in _sorted(get(link, &_get_children)):
            if not collect_params(d[name], out):
                return 0
    elif kind == 2:
        for child in get(link, &_get_children):
            if not collect_params(child, out):
                return 0
    return 1


cdef tuple _EMPTY = ()


cdef object _sorted(object names):
    """``sorted(names)``; a set of at most two str (most links' parameters
    and children) ordered here, without the builtin's call and list."""
    cdef Py_ssize_t pos = 0
    cdef PyObject *a
    cdef PyObject *b
    cdef Py_hash_t h
    if type(names) is not set or len(<set>names) > 2:
        return sorted(names)
    if len(<set>names) == 0:
        return _EMPTY
    _PySet_NextEntry(names, &pos, &a, &h)
    if type(<object>a) is not str:
        return sorted(names)
    if len(<set>names) == 1:
        return (<object>a,)
    _PySet_NextEntry(names, &pos, &b, &h)
    if type(<object>b) is not str:
        return sorted(names)
    # Two distinct str: their order is sorted()'s.
    if <str>(<object>b) < <str>(<object>a):
        return (<object>b, <object>a)
    return (<object>a, <object>b)
