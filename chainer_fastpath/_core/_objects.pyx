"""Variables and VariableNodes built without their Python ``__init__``.

Each function leaves exactly the instance state the stock constructor would
(the same ``__dict__`` keys, in the same order, with the same values).
"""
from cpython.object cimport PyObject, PyTypeObject
from cpython.weakref cimport PyWeakref_NewRef

import sys

import numpy

from chainer import variable

from chainer_fastpath._core import _stores

from chainer_fastpath._core._ndarray cimport cfp_dims, cfp_nd, layout_ok

cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object obj, object name, object value) \
        except -1
    void PyObject_GC_UnTrack(void *op)

cdef type _Variable = variable.Variable
cdef type _VariableNode = variable.VariableNode
cdef tuple _NO_ARGS = ()
cdef type _ndarray = numpy.ndarray

# Whether the attributes of new Variables go in through ``_stores``'
# bytecode, which the interpreter specializes from 3.11 (measured: faster
# there, slower on 3.8); before that, stores from here.
cdef bint _bytecode_stores = sys.version_info >= (3, 11)
cdef object _store_variable = _stores.variable


def _use_bytecode_stores(flag):
    """Chooses how new Variables get their attributes (for the tests,
    which check both ways); returns the previous choice."""
    global _bytecode_stores
    previous = _bytecode_stores
    _bytecode_stores = flag
    return previous


cdef object bare(type cls):
    """``object.__new__(cls)`` through the type's own slot."""
    return (<PyTypeObject*>cls).tp_new(cls, <PyObject*>_NO_ARGS, NULL)


cdef inline object _bare(type cls):
    return (<PyTypeObject*>cls).tp_new(cls, <PyObject*>_NO_ARGS, NULL)


cdef inline void _set(object obj, str name, object value) except *:
    PyObject_GenericSetAttr(obj, name, value)


cdef object node_data(object node):
    """``node.data``: for a VariableNode the property only returns
    ``_data``, which is read directly."""
    if type(node) is _VariableNode:
        return node._data
    return node.data


cdef object weak_ref(object obj):
    """``weakref.ref(obj)``, left out of the cyclic collector's lists.

    A weak reference without a callback refers to nothing the collector
    follows, so it can never be part of a cycle; CPython tracks it anyway.
    The graph keeps two per operation alive until backward, and each one
    tracked lengthens every collection and hastens the full ones.
    """
    ref = PyWeakref_NewRef(obj, None)
    PyObject_GC_UnTrack(<void *>ref)
    return ref


# The shapes of recent arrays, handed out again by shape_of (the empty
# tuple is a 0-d array's shape, so it can stand for "none yet").
cdef list _shapes = [()] * 8
cdef Py_ssize_t _next_shape = 0


cdef object shape_of(object data):
    """``data.shape``; for an ndarray whose shape equals a recent one, that
    recent tuple. A VariableNode keeps its array's shape, and a new tuple
    per node is one more object that brings the cyclic collector's next
    collection closer, and with it the next full one; a tuple of ints is
    immutable, so handing one out twice is unobservable."""
    global _next_shape
    if type(data) is not _ndarray or not layout_ok():
        return data.shape
    cdef int nd = cfp_nd(data)
    cdef Py_ssize_t *dims = cfp_dims(data)
    cdef Py_ssize_t i, k
    cdef tuple t
    for i in range(8):
        t = <tuple>_shapes[i]
        if len(t) != nd:
            continue
        for k in range(nd):
            if <Py_ssize_t>t[k] != dims[k]:
                break
        else:
            return t
    shape = data.shape
    _shapes[_next_shape] = shape
    _next_shape = (_next_shape + 1) % 8
    return shape


cdef object new_variable(object data, bint requires_grad, object creator,
                         object rank):
    """``Variable(data, requires_grad=requires_grad)`` for a NumPy array,
    then, when ``creator`` is not None, ``y.creator_node = creator`` (whose
    rank is ``rank``) as stock ``apply`` does for its outputs.

    Attributes are set one by one, in the constructors' order, so that the
    instances share their class's key table as constructed ones do (less
    memory than a dict of their own): from 3.11 by ``_stores``' bytecode."""
    cdef object var = _bare(_Variable)
    cdef object node = _bare(_VariableNode)
    if _bytecode_stores:
        _store_variable(var, node, weak_ref(var), requires_grad, data.dtype,
                        shape_of(data), data, creator, rank)
        return var
    _set(node, '_variable', weak_ref(var))
    _set(node, 'name', None)
    _set(node, '_requires_grad', requires_grad)
    _set(node, '_layout', None)
    _set(node, 'dtype', data.dtype)
    _set(node, 'shape', shape_of(data))
    if creator is not None:
        _set(node, '_creator_node', creator)
        _set(node, '_rank', rank + 1)
    _set(var, '_requires_grad', requires_grad)
    _set(var, '_loss_scale', None)
    _set(var, '_grad_var', None)
    _set(var, '_device', None)
    _set(var, '_grad_valid', True)
    _set(var, '_layout', None)
    _set(var, '_data', [data])
    _set(var, '_node', node)
    _set(var, '_grad', None)
    return var
