# Stock reads these through Python properties of Variable and VariableNode;
# for the exact stock classes, whose properties return the attribute, the
# attribute is read directly. Inline in every module that cimports them;
# the per-site caches and the classes are graph_reads.pyx's.
from chainer_fastpath._core._attrs cimport cfp_attr, cfp_getattr
from chainer_fastpath._core._grads cimport Grad, grad_layout, grad_raw

cdef type _ndarray, _Variable, _Parameter, _VariableNode
cdef cfp_attr _get_creator_node, _get_requires_grad
cdef cfp_attr _get_has_chainerx_array, _get_data, _get_layout


cdef inline object creator_of(node):
    """``node.creator_node``."""
    if type(node) is _VariableNode:
        return cfp_getattr(node, &_get_creator_node)
    return node.creator_node


cdef inline bint requires_grad(node) except -1:
    """``node.requires_grad``."""
    if type(node) is _VariableNode:
        return cfp_getattr(node, &_get_requires_grad)
    return node.requires_grad


cdef inline object raw_array(var):
    """``var.raw_array`` (for a ``Grad``, its Variable's)."""
    if type(var) is Grad:
        return grad_raw(var)
    if (type(var) is _Variable
            and not cfp_getattr(var, &_get_has_chainerx_array)):
        return (<list>cfp_getattr(var, &_get_data))[0]
    return var.raw_array


cdef inline bint is_plain_variable(var):
    """A stock Variable or Parameter of a NumPy array with the standard
    layout, whose gradient accessors are the attributes they wrap."""
    cdef type t = type(var)
    return ((t is _Variable or t is _Parameter)
            and not cfp_getattr(var, &_get_has_chainerx_array)
            and cfp_getattr(var, &_get_layout) is None)


cdef inline object plain_grad_array(g):
    """The NumPy array of gradient ``g`` where ``g`` is a ``Grad`` or an
    exact Variable with the standard layout, else None."""
    if type(g) is not Grad and type(g) is not _Variable:
        return None
    if grad_layout(g) is not None:
        return None
    a = grad_raw(g)
    return a if type(a) is _ndarray else None
