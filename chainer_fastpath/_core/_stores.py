"""Instance state written by Python bytecode, for the compiled paths.

From Python 3.11 the interpreter specializes ``obj.name = value`` for a
class whose instances keep their attributes inline: the store checks the
class's version and writes the slot it found the first time. Compiled code
has no such cache: each store it makes looks the name up on the class, then
in the instance's key table. Where a compiled path writes several
attributes of new objects at once, one call of a function here costs less
than the stores it makes (``docs/design/per-call-cost.md``).

Each function writes exactly the attributes, values and order its
docstring names: what the stock constructor or ``apply`` leaves.
"""


def variable(var, node, ref, requires_grad, dtype, shape, data, creator,
             rank):
    """What ``Variable(data, requires_grad=requires_grad)`` leaves on the
    bare ``var`` and ``node`` (``ref``: a weak reference to ``var``); then,
    unless ``creator`` is None, ``var.creator_node = creator`` (whose rank
    is ``rank``), as ``FunctionNode.apply`` leaves each output."""
    node._variable = ref
    node.name = None
    node._requires_grad = requires_grad
    node._layout = None
    node.dtype = dtype
    node.shape = shape
    if creator is not None:
        node._creator_node = creator
        node._rank = rank + 1
    var._requires_grad = requires_grad
    var._loss_scale = None
    var._grad_var = None
    var._device = None
    var._grad_valid = True
    var._layout = None
    var._data = [data]
    var._node = node
    var._grad = None
