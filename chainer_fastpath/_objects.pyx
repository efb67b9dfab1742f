"""Variables and VariableNodes built without their Python ``__init__``.

Each function leaves exactly the instance state the stock constructor would
(the same ``__dict__`` keys, in the same order, with the same values).
"""
from cpython.dict cimport PyDict_Copy
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


# Templates of the two instance dicts, in stock's key order; copying one
# and replacing a few values is cheaper than inserting every key.
cdef dict _NODE_DICT = {
    '_variable': None,
    'name': None,
    '_requires_grad': False,
    '_layout': None,
    'dtype': None,
    'shape': None,
}
cdef dict _NODE_DICT_WITH_CREATOR = dict(_NODE_DICT, _creator_node=None,
                                         _rank=0)
cdef dict _VARIABLE_DICT = {
    '_requires_grad': False,
    '_loss_scale': None,
    '_grad_var': None,
    '_device': None,
    '_grad_valid': True,
    '_layout': None,
    '_data': None,
    '_node': None,
    '_grad': None,
}


cdef object new_variable(object data, bint requires_grad, object creator,
                         object rank):
    """``Variable(data, requires_grad=requires_grad)`` for a NumPy array,
    then, when ``creator`` is not None, ``y.creator_node = creator`` (whose
    rank is ``rank``) as stock ``apply`` does for its outputs."""
    cdef object var = _bare(_Variable)
    cdef object node = _bare(_VariableNode)
    cdef dict node_dict
    if creator is None:
        node_dict = PyDict_Copy(_NODE_DICT)
    else:
        node_dict = PyDict_Copy(_NODE_DICT_WITH_CREATOR)
        node_dict['_creator_node'] = creator
        node_dict['_rank'] = rank + 1
    node_dict['_variable'] = PyWeakref_NewRef(var, None)
    node_dict['_requires_grad'] = requires_grad
    node_dict['dtype'] = data.dtype
    node_dict['shape'] = data.shape
    PyObject_GenericSetDict(node, node_dict, NULL)
    cdef dict var_dict = PyDict_Copy(_VARIABLE_DICT)
    var_dict['_requires_grad'] = requires_grad
    var_dict['_data'] = [data]
    var_dict['_node'] = node
    PyObject_GenericSetDict(var, var_dict, NULL)
    return var
