"""One function node's step of the backward pass: the hooks'
``backward_preprocess``, stock's ``_backprop_utils.backprop_step`` (not in
debug mode), the hooks' ``backward_postprocess``.

Where nothing can observe the nodes ``func.backward`` would apply (NumPy
arrays, no graph recorded, no function hook: the step is ``detached``), the
node's registry entry may stand in for it: ``run_backward`` (the function
module's compiled backward), or ``run_backward_into``, which adds the one
gradient asked for straight into the sum the gradient table owns. Its
gradients are then ``_grads.Grad`` objects, not Variables.
"""
cimport cython

import chainer
from chainer.function_node import FunctionNode
from chainer import _backprop_utils
from chainer import variable as _variable_mod

from chainer_fastpath._backward.grad_table cimport GradTable
from chainer_fastpath._backward.graph_reads cimport (
    plain_grad_array, raw_array)
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_class_has, cfp_getattr as get, get_site,
    lookup_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._config cimport function_hooks
from chainer_fastpath._core._grads cimport as_variable, as_variables
from chainer_fastpath._core._ndarray cimport (
    adds_zeros_exactly, forget_made_exact)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, Compiled, lookup_node, node_class, run_backward,
    run_backward_into)
from chainer_fastpath._core._stats cimport python_ran

cfp_attr_enable(_attrs.FAST)
cdef cfp_attr _get_inputs = get_site('inputs')
cdef cfp_attr _get_lazy_grad_sum = get_site('lazy_grad_sum')
cdef cfp_attr _backward_accumulate_site = lookup_site('backward_accumulate')
cdef object _base_accumulate = FunctionNode.__dict__['backward_accumulate']
cdef object _get_columns = _backprop_utils._get_columns
cdef type _VariableNode = _variable_mod.VariableNode


cdef list run_step(GradTable table, func, tuple inputs,
                   tuple target_input_indexes, tuple out_grad, list in_data,
                   list out_grad_array, hooks, bint detached,
                   bint callees_stock):
    """The step of ``func`` between its hooks; returns the gradients of its
    inputs that need one: stock's dict ``{node: [gradients]}``'s items one
    after the other, ``[node, [gradients], ...]``, in input order.

    Nothing outside sees that dict. For a few exact nodes, which hash and
    compare by identity, a scan of the flat list finds what the dict
    would, with no table to make; otherwise the dict is made as stock's,
    and the lookups go through it (``_grads_of``)."""
    cdef Py_ssize_t i
    cdef dict index = None
    cdef list in_grad
    if hooks:
        for hook in hooks:
            hook.backward_preprocess(
                func, tuple(in_data), tuple(out_grad_array))

    if _scannable(inputs, target_input_indexes):
        in_grad = _scanned(table, inputs, target_input_indexes)
    else:
        index = {}
        for i in target_input_indexes:
            x = inputs[i]
            if x not in index:
                index[x] = table.get_as_list(x)
        in_grad = []
        for x, lst in index.items():
            in_grad.append(x)
            in_grad.append(lst)
    _backprop_step(table, func, target_input_indexes, out_grad, in_grad,
                   index, detached, callees_stock)

    if hooks:
        for hook in hooks:
            hook.backward_postprocess(
                func, tuple(in_data), tuple(out_grad_array))
    return in_grad


# Inputs asked for, at most, whose gradient lists are found by a scan.
cdef enum:
    _SCANNED = 8


cdef bint _scannable(tuple inputs, tuple target_input_indexes) except -1:
    """Whether the inputs asked for are a few exact VariableNodes."""
    if len(target_input_indexes) > _SCANNED:
        return False
    for i in target_input_indexes:
        if type(inputs[i]) is not _VariableNode:
            return False
    return True


cdef list _scanned(GradTable table, tuple inputs,
                   tuple target_input_indexes):
    """Stock's ``{x: table.get_as_list(x)}``'s items, flat, for exact
    nodes (``_scannable``)."""
    cdef Py_ssize_t i, k
    cdef list pairs = []
    for i in target_input_indexes:
        x = inputs[i]
        for k in range(0, len(pairs), 2):
            if pairs[k] is x:
                break
        else:
            pairs.append(x)
            pairs.append(table.get_as_list(x))
    return pairs


cdef object _grads_of(list pairs, dict index, node, bint required):
    """The gradient list of ``node``, as stock's dict gives it: ``d[node]``
    (``required``) or ``d.get(node)``. ``index`` is that dict where
    ``run_step`` made one, else None (``pairs`` are then exact nodes)."""
    cdef Py_ssize_t k
    if index is None:
        for k in range(0, len(pairs), 2):
            if pairs[k] is node:
                return pairs[k + 1]
        # Not one of the keys itself (a hook rebound the inputs): the
        # dict's lookup decides, a key equal to it or its errors.
        index = {pairs[k]: pairs[k + 1] for k in range(0, len(pairs), 2)}
    return index[node] if required else index.get(node)


@cython.wraparound(True)
cdef void _amend_exception(func, e) except *:
    """The message change of ``_backprop_utils._reraise_with_stack``."""
    import traceback
    if func.stack is not None:
        additional_message = \
            '\n{}\nStacktrace of the function is below:\n{}'.format(
                '-' * _get_columns(),
                ''.join(traceback.format_list(func.stack[:-1])))
        if e.args:
            e.args = (e.args[0] + additional_message,) + e.args[1:]
        else:
            e.args = (additional_message,)


cdef void _backprop_step(GradTable table, func, tuple target_input_indexes,
                         tuple grad_outputs, list grad_inputs, dict index,
                         bint detached, bint callees_stock) except *:
    """``_backprop_utils.backprop_step`` (not in debug mode). ``detached``:
    nothing can observe the nodes ``func.backward`` would apply (NumPy
    arrays, no graph recorded, no function hook), so a compiled backward
    may stand in for it."""
    cdef Py_ssize_t len_gxs, n_inputs, k
    cdef Compiled entry
    # What an earlier step made may have reached other code since: only
    # this step's arrays are known to add zeros exactly (GradTable.adopt).
    forget_made_exact()
    inputs = get(func, &_get_inputs)
    # Stock compares the code of the node's method with that of
    # ``chainer.FunctionNode``'s as they are now: one replaced on the base
    # class is then the base's, and backward runs.
    if (not cfp_class_has(func, &_backward_accumulate_site,
                          _base_accumulate)
            and func.backward_accumulate.__code__
            is not chainer.FunctionNode.backward_accumulate.__code__):
        grad_inputs_tuple = tuple([
            as_variable(table.pop_or_none(inputs[i]))
            for i in target_input_indexes])
        python_ran(node_class(func), 'backward',
                   'backward_accumulate overridden')
        try:
            gxs = func.backward_accumulate(
                target_input_indexes, as_variables(grad_outputs),
                grad_inputs_tuple)
        except Exception as e:
            _amend_exception(func, e)
            raise
    else:
        entry = lookup_node(func) if detached else None
        if entry is not None and _summed_into(
                table, entry, func, target_input_indexes, grad_outputs,
                grad_inputs, index, callees_stock):
            return
        try:
            gxs = NOT_HANDLED
            if detached:
                gxs = run_backward(entry, func, target_input_indexes,
                                   grad_outputs, callees_stock)
            else:
                python_ran(node_class(func), 'backward',
                           'graph recorded or function hook')
            if gxs is NOT_HANDLED:
                gxs = func.backward(target_input_indexes,
                                    as_variables(grad_outputs))
        except Exception as e:
            _amend_exception(func, e)
            raise

        len_gxs = len(gxs)
        n_inputs = len(inputs)
        if len_gxs == n_inputs:
            # Every input asked for (the indexes rise, unique, up to the
            # last input's) is the tuple itself: no copy made to be read
            # once.
            if (type(gxs) is not tuple
                    or len(target_input_indexes) != n_inputs
                    or target_input_indexes[n_inputs - 1] != n_inputs - 1):
                gxs = tuple([gxs[i] for i in target_input_indexes])
        elif len_gxs != len(target_input_indexes):
            msg = 'number of gradients returned from backward is incorrect: '
            if n_inputs == len(target_input_indexes):
                msg += (
                    '%s != expected %s' % (len_gxs, n_inputs))
            else:
                msg += (
                    '%s != expected %s or %s'
                    % (len_gxs, n_inputs, len(target_input_indexes)))
            raise ValueError(func._get_error_message(msg))

    if type(gxs) is list:
        # A snapshot, whose length no code run below can change.
        gxs = tuple(gxs)
    if type(gxs) is tuple:
        # zip's pairs, without its iterators
        for k in range(min(len(target_input_indexes), len(gxs))):
            _add_grad(grad_inputs, index, inputs,
                      target_input_indexes[k], gxs[k])
    else:
        for i, gx in zip(target_input_indexes, gxs):
            _add_grad(grad_inputs, index, inputs, i, gx)
    del gxs

    if not get(func, &_get_lazy_grad_sum):
        for k in range(0, len(grad_inputs), 2):
            table.reduce(grad_inputs[k], grad_inputs[k + 1])


cdef inline void _add_grad(list grad_inputs, dict index, object inputs,
                           object i, object gx) except *:
    if gx is None or raw_array(gx) is None:
        return
    (<list>_grads_of(grad_inputs, index, inputs[i], True)).append(gx)


cdef bint _summed_into(GradTable table, Compiled entry, func,
                       tuple target_input_indexes, tuple grad_outputs,
                       list grad_inputs, dict index,
                       bint callees_stock) except -1:
    """Adds, by ``entry.backward_into``, the gradient of the one input of
    ``func`` that needs one straight into that input's gradient sum, where
    the gradient table owns the sum and would add the gradient to it in
    place next (``GradTable.reduce``). For a gradient that is zero outside
    a few rows (EmbedID's), adding zeros to a sum free of -0.0 and
    signaling NaNs changes nothing, so only the rows are added. False where
    the usual path must run."""
    if (entry.backward_into is NULL
            or target_input_indexes != (entry.into_index,)
            or get(func, &_get_lazy_grad_sum)):
        return False
    # Read again after the hooks' backward_preprocess, which may have
    # rebound it: stock's own code then raises, or goes on.
    inputs = get(func, &_get_inputs)
    if type(inputs) is not tuple or len(<tuple>inputs) <= entry.into_index:
        return False
    node = (<tuple>inputs)[entry.into_index]
    cdef list lst = _grads_of(grad_inputs, index, node, False)
    if lst is None:
        return False
    if len(lst) != 1:
        return False
    a = lst[0]
    if a is not table.owned.get(node):
        return False
    arr = plain_grad_array(a)
    if arr is None or function_hooks():
        return False
    if table.exact_sums.get(node) is not a:
        # Once true, in-place sums keep it true: an IEEE sum is never a
        # signaling NaN, and is -0.0 only where both terms are.
        if not adds_zeros_exactly(arr):
            return False
        table.exact_sums[node] = a
    return run_backward_into(entry, func, grad_outputs, a, callees_stock)
