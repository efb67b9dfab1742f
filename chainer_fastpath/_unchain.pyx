"""``Variable.unchain_backward`` compiled: stock's walk over the graph, in
stock's order, with the nodes of Chainer's own classes unchained through
the attributes their stock methods set.

Truncated BPTT calls it once per segment, on a graph of every step. A node
whose ``unchain`` or ``creator_node`` is not stock's is asked through the
method; a Variable subclass, a ChainerX array or a replaced ``creator_node``
on Variable runs the original.
"""
from chainer import function_node
from chainer import variable

from chainer_fastpath._core._audit cimport StockMethods, method_is
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef type _Variable = variable.Variable
cdef type _Parameter = variable.Parameter
cdef type _VariableNode = variable.VariableNode
cdef object _function_unchain = function_node.FunctionNode.unchain
cdef object _node_unchain = _VariableNode.unchain
# Properties: compared on the class, once per call.
cdef StockMethods _variable_props = StockMethods(_Variable, ('creator_node',))
cdef StockMethods _node_props = StockMethods(_VariableNode, ('creator_node',))

cdef EntryStats _stats_unchain = _stats.entry('Variable.unchain_backward')
cdef object _original = None


TARGETS = ((_Variable, 'unchain_backward'),)


def bind(owner, attribute, original):
    """Keeps the stock ``unchain_backward`` to fall back to; returns its
    replacement."""
    global _original
    _original = original
    return unchain_backward


cdef Signature _signature = Signature(('self',))


def unchain_backward(*args, **kwargs):
    """Drop-in for ``chainer.Variable.unchain_backward``."""
    cdef tuple values = _signature.bind(args, kwargs)
    if values is None:
        # Python's TypeError, worded as for stock's method.
        _stats_unchain.fallback(_signature.mismatch)
        return _original(*args, **kwargs)
    return _unchain_backward(values[0])


cdef _unchain_backward(self):
    reason = None
    if type(self) is not _Variable and type(self) is not _Parameter:
        reason = 'Variable subclass'
    elif self._has_chainerx_array:
        reason = 'ChainerX array'
    elif not _variable_props.on_class():
        reason = 'Variable.creator_node replaced'
    if reason is not None:
        _stats_unchain.fallback(reason)
        return _original(self)
    _stats_unchain.fast += 1
    cdef bint plain_nodes = _node_props.on_class()
    cdef list cand_funcs = []
    cdef set seen_set = set()
    # Variable.creator_node reads the node's attribute itself.
    _add_cand(self._node._creator_node, cand_funcs, seen_set)
    while cand_funcs:
        func = cand_funcs.pop()
        for var in func.inputs:
            _add_cand(_creator_of(var, plain_nodes), cand_funcs, seen_set)
        if (method_is(func, 'unchain', _function_unchain)
                and not func._is_chainerx_fallback_mode):
            _unchain_function(func, plain_nodes)
        else:
            func.unchain()


cdef inline void _add_cand(cand, list cand_funcs, set seen_set) except *:
    if cand is not None and cand not in seen_set:
        cand_funcs.append(cand)
        seen_set.add(cand)


cdef inline object _creator_of(node, bint plain_nodes):
    """``node.creator_node``."""
    if plain_nodes and type(node) is _VariableNode:
        return node._creator_node
    return node.creator_node


cdef void _unchain_function(func, bint plain_nodes) except *:
    """``FunctionNode.unchain``, outside ChainerX fallback mode."""
    for y in func.outputs:
        y_ref = y()
        if y_ref is None:
            continue
        # VariableNode.unchain: ``self.creator_node = None``, whose setter
        # then only sets the attribute.
        if (plain_nodes and type(y_ref) is _VariableNode
                and method_is(y_ref, 'unchain', _node_unchain)):
            y_ref._creator_node = None
        else:
            y_ref.unchain()
    func.inputs = None
    func.outputs = None
