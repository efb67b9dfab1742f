"""Variables and VariableNodes built without their Python ``__init__``.

Each function leaves exactly the instance state the stock constructor would
(the same ``__dict__`` keys, in the same order, with the same values).
"""
from cpython.weakref cimport PyWeakref_NewRef

from chainer import variable

cdef type _Variable = variable.Variable
cdef type _VariableNode = variable.VariableNode
cdef object _object_new = object.__new__


cdef object new_variable(object data, bint requires_grad):
    """``Variable(data, requires_grad=requires_grad)`` for a NumPy array."""
    cdef object var = _object_new(_Variable)
    cdef object node = _object_new(_VariableNode)
    node.__dict__ = {
        '_variable': PyWeakref_NewRef(var, None),
        'name': None,
        '_requires_grad': requires_grad,
        '_layout': None,
        'dtype': data.dtype,
        'shape': data.shape,
    }
    var.__dict__ = {
        '_requires_grad': requires_grad,
        '_loss_scale': None,
        '_grad_var': None,
        '_device': None,
        '_grad_valid': True,
        '_layout': None,
        '_data': [data],
        '_node': node,
        '_grad': None,
    }
    return var
