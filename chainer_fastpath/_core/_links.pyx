"""A link tree's parameters as stock's ``params()`` generators yield them,
gathered without running the generators, for the compiled paths that walk
every parameter (the optimizers' update, ``Link.cleargrads``)."""
from cpython.object cimport PyObject, PyTypeObject

from chainer import link as link_module

cdef extern from "Python.h":
    PyObject *_PyType_Lookup(PyTypeObject *tp, object name)

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
    for name in sorted(link._params):
        out.append(d[name])
    if kind == 1:
        for name in sorted(link._children):
            if not collect_params(d[name], out):
                return 0
    elif kind == 2:
        for child in link._children:
            if not collect_params(child, out):
                return 0
    return 1
