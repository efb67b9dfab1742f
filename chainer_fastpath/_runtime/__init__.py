"""What the compiled functions and the entry points share at run time,
above ``_core``: a node applied from compiled code (``_apply_node``), the
public-function replacements' common part (``_public``), the
``force_array`` the compiled forwards call (``_forced``) and gradient sums
several function families need (``_sum_grads``).

No module here is installed by the patch table and none imports an entry
point or a function module. Where the runtime calls into an entry point's
fast path (``FunctionNode.apply``, ``chainer.utils.force_array``), that
entry point fills it in from above when it is imported or bound, as the
function modules fill the registry.
"""
