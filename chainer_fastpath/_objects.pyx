"""Variables and VariableNodes built without their Python ``__init__``.

Each function leaves exactly the instance state the stock constructor would
(the same ``__dict__`` keys, in the same order, with the same values).
"""
from cpython.object cimport PyObject, PyTypeObject
from cpython.weakref cimport PyWeakref_NewRef

from chainer import variable

cdef extern from "Python.h":
    int PyObject_GenericSetDict(object obj, object value, void* context) \
        except -1

cdef type _Variable = variable.Variable
cdef type _VariableNode = variable.VariableNode
cdef tuple _NO_ARGS = ()


cdef inline object _bare(type cls):
    """``object.__new__(cls)`` through the type's own slot."""
    return (<PyTypeObject*>cls).tp_new(cls, <PyObject*>_NO_ARGS, NULL)


cdef object new_variable(object data, bint requires_grad, object creator,
                         object rank):
    """``Variable(data, requires_grad=requires_grad)`` for a NumPy array,
    then, when ``creator`` is not None, ``y.creator_node = creator`` (whose
    rank is ``rank``) as stock ``apply`` does for its outputs."""
    cdef object var = _bare(_Variable)
    cdef object node = _bare(_VariableNode)
    cdef dict node_dict = {
        '_variable': PyWeakref_NewRef(var, None),
        'name': None,
        '_requires_grad': requires_grad,
        '_layout': None,
        'dtype': data.dtype,
        'shape': data.shape,
    }
    if creator is not None:
        node_dict['_creator_node'] = creator
        node_dict['_rank'] = rank + 1
    PyObject_GenericSetDict(node, node_dict, NULL)
    PyObject_GenericSetDict(var, {
        '_requires_grad': requires_grad,
        '_loss_scale': None,
        '_grad_var': None,
        '_device': None,
        '_grad_valid': True,
        '_layout': None,
        '_data': [data],
        '_node': node,
        '_grad': None,
    }, NULL)
    return var
