"""The backward engine's loop: ``chainer._backprop._backprop_to_all``,
compiled.

From the outputs' gradients, each function node is taken from the
candidates (``heap``) in stock's order, its output gradients popped from
the gradient table (``grad_table``), its step run (``step``), and its
inputs' creators queued; at the end the leaves get their gradients, as
stock sets them. Everything stock does happens here, in the same order:
hooks see the same calls, gradients are checked with stock's messages.
"""
from cpython.object cimport PyTypeObject, Py_TYPE, hashfunc

import collections

import numpy

import chainer
from chainer import backend
from chainer import variable as _variable_mod

from chainer_fastpath._backward.grad_table cimport (
    GradTable, sums_unobservable)
from chainer_fastpath._backward.graph_reads cimport (
    creator_of, is_plain_variable, raw_array, requires_grad)
from chainer_fastpath._backward.heap cimport Candidates
from chainer_fastpath._backward.step cimport run_step
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, set_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport method_is
from chainer_fastpath._core._config cimport ConfigView, function_hooks
from chainer_fastpath._core._grads cimport Grad, as_variable, grad_raw
from chainer_fastpath._core._ndarray cimport (
    cfp_descr_of, cfp_dims, cfp_nd, numpy_struct_matches)
from chainer_fastpath._core._objects cimport node_data
from chainer_fastpath._core._registry cimport stock_callees
from chainer_fastpath._core._tuples cimport nones, set_item

cfp_attr_enable(_attrs.FAST)
# The graph's state, read and written through per-site caches (_attrs.h).
cdef cfp_attr _get_rank = get_site('rank')
cdef cfp_attr _get_has_chainerx_array = get_site('_has_chainerx_array')
cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _get_layout = get_site('_layout')
cdef cfp_attr _get_variable = get_site('_variable')
cdef cfp_attr _get_dtype = get_site('dtype')
cdef cfp_attr _get_shape = get_site('shape')
cdef cfp_attr _get_inputs = get_site('inputs')
cdef cfp_attr _get_outputs = get_site('outputs')
cdef cfp_attr _get_local_function_hooks = get_site('_local_function_hooks')
cdef cfp_attr _set_grad_var = set_site('_grad_var')
cdef cfp_attr _set_grad = set_site('_grad')
cdef cfp_attr _set_loss_scale = set_site('_loss_scale')

cdef object _ndarray = numpy.ndarray
cdef type _Variable = chainer.Variable
cdef type _VariableNode = _variable_mod.VariableNode
cdef object _get_variable_or_none = _VariableNode.get_variable_or_none
cdef object _check_grad_type = _variable_mod._check_grad_type
cdef object _OrderedDict = collections.OrderedDict
cdef object _using_device = chainer.using_device
cdef object _get_device_from_array = backend.get_device_from_array
cdef hashfunc _object_hash = (<PyTypeObject *>object).tp_hash


cdef object backprop(outputs, retain_grad, loss_scale):
    """``chainer._backprop._backprop_to_all``, compiled."""
    cdef GradTable table = GradTable()
    table.sums_stock = sums_unobservable()
    cdef Candidates cand_funcs = Candidates()
    cdef set seen_set = set()
    cdef set leaf_nodes = set()
    cdef list lst, in_data, out_grad_array, in_grad
    cdef tuple inputs, target_input_indexes, out_grad, outs
    cdef Py_ssize_t i, k
    cdef bint all_numpy

    for y, gy in outputs:
        table.get_as_list(y).append(gy)
        _add_node(cand_funcs, seen_set, leaf_nodes, y)
    y = None

    base_hooks = function_hooks().values()
    cdef bint callees_stock = stock_callees()
    while not cand_funcs.empty():
        func = cand_funcs.pop()
        inputs = get(func, &_get_inputs)
        target_input_indexes = _requiring_grad(inputs)
        outs = _output_nodes(get(func, &_get_outputs))  # via weak refs
        out_grad = nones(len(outs))
        for i in range(len(outs)):
            y = outs[i]
            set_item(out_grad, i, (
                table.pop(y) if y is not None and creator_of(y) is not None
                else None))
        if not target_input_indexes:
            continue

        local = get(func, &_get_local_function_hooks)
        if local is not None and len(local) != 0:
            local_hooks = _OrderedDict(function_hooks())
            local_hooks.update(func.local_function_hooks)
            hooks = local_hooks.values()
        else:
            hooks = base_hooks

        # The arrays go to hooks and to the device choice only: without
        # hooks, for exact nodes and gradient Variables (whose reads have
        # no effects), only whether they are all NumPy's is needed.
        all_numpy = True
        if not hooks and _all_numpy_plain(inputs, out_grad):
            in_data = out_grad_array = None
        else:
            in_data = []
            for x in inputs:
                d = node_data(x)
                if d is not None and type(d) is not _ndarray:
                    all_numpy = False
                in_data.append(d)
            out_grad_array = []
            for g in out_grad:
                if g is None:
                    out_grad_array.append(None)
                else:
                    d = raw_array(g)
                    if d is not None and type(d) is not _ndarray:
                        all_numpy = False
                    out_grad_array.append(d)

        if all_numpy:
            # the CPU device: its context does nothing
            in_grad = run_step(table, func, inputs, target_input_indexes,
                               out_grad, in_data, out_grad_array, hooks,
                               not base_hooks
                               and not ConfigView.current().get(
                                   'enable_backprop'), callees_stock)
        else:
            with _using_device(_get_device_from_array(
                    *(in_data + out_grad_array))):
                in_grad = run_step(table, func, inputs,
                                   target_input_indexes, out_grad, in_data,
                                   out_grad_array, hooks, False,
                                   callees_stock)

        if retain_grad:
            for y, gy in zip(outs, out_grad):
                if y is not None:
                    y._set_grad_var_if_available(as_variable(gy))
            gy = None
        out_grad = None

        for k in range(0, len(in_grad), 2):
            x = in_grad[k]
            lst = in_grad[k + 1]
            if not lst:
                continue
            for gx_elem in lst:
                if gx_elem is not None:
                    _check_grad(func, x, raw_array(gx_elem))
            gx_elem = None
            _add_node(cand_funcs, seen_set, leaf_nodes, x)
        lst = None
        in_grad = None

    for x in leaf_nodes:
        if type(x) is _VariableNode and method_is(
                x, 'get_variable_or_none', _get_variable_or_none):
            x_var = get(x, &_get_variable)()
        else:
            x_var = x.get_variable_or_none()
        gx = table.pop(x)
        if x_var is not None:
            _set_leaf_grad(x_var, as_variable(gx))
            put(x_var, &_set_loss_scale, loss_scale)
    for lst in table.grads.values():
        assert lst == []


cdef inline void _add_node(Candidates cand_funcs, set seen_set,
                           set leaf_nodes, node) except *:
    """Queues ``node``'s creator (once: the first time it is seen), or
    records ``node`` as a leaf."""
    creator = creator_of(node)
    if creator is None:
        leaf_nodes.add(node)
        return
    cdef Py_ssize_t seen = len(seen_set)
    if Py_TYPE(creator).tp_hash == _object_hash:
        # Hashed and compared by identity: adding it tells whether it was
        # there, in one lookup. (Stock pushes first; the set is the pass's
        # own, and an error from the rank ends the pass.)
        seen_set.add(creator)
        if len(seen_set) != seen:
            cand_funcs.push(get(creator, &_get_rank), seen, creator)
    elif creator not in seen_set:
        cand_funcs.push(get(creator, &_get_rank), seen, creator)
        seen_set.add(creator)


# What _requiring_grad gives most nodes: a tuple of ints is immutable, so
# handing the same one out again is unobservable, and one object less per
# step for the cyclic collector to count.
cdef tuple _FIRST = (0,)
cdef tuple _SECOND = (1,)
cdef tuple _BOTH = (0, 1)


cdef tuple _requiring_grad(tuple inputs):
    """``tuple([i for i, x in enumerate(inputs) if x.requires_grad])``."""
    cdef Py_ssize_t n = len(inputs), k = 0, i
    cdef Py_ssize_t found[8]
    if n > 8:
        return tuple([i for i in range(n) if requires_grad(inputs[i])])
    for i in range(n):
        if requires_grad(inputs[i]):
            found[k] = i
            k += 1
    if k == 1 and found[0] <= 1:
        return _FIRST if found[0] == 0 else _SECOND
    if k == 2 and found[0] == 0 and found[1] == 1:
        return _BOTH
    cdef tuple t = nones(k)
    for i in range(k):
        set_item(t, i, found[i])
    return t


cdef tuple _output_nodes(refs):
    """``[y() for y in refs]`` (the output nodes through their weak
    references), as a tuple."""
    if type(refs) is not tuple:
        return tuple([y() for y in refs])
    cdef Py_ssize_t i, n = len(<tuple>refs)
    cdef tuple t = nones(n)
    for i in range(n):
        set_item(t, i, (<tuple>refs)[i]())
    return t


cdef bint _all_numpy_plain(tuple inputs, tuple out_grad) except -1:
    """True where every input is an exact VariableNode and every output
    gradient None or an exact Variable, and all their arrays (those there
    are) NumPy's; False where any is not, or not known without a property
    (whose read the caller then makes, once, as stock does)."""
    for x in inputs:
        if type(x) is not _VariableNode:
            return False
        d = get(x, &_get_data)
        if d is not None and type(d) is not _ndarray:
            return False
    for g in out_grad:
        if g is None:
            continue
        if type(g) is Grad:
            d = grad_raw(g)
        elif type(g) is not _Variable or get(g, &_get_has_chainerx_array):
            return False
        else:
            d = (<list>get(g, &_get_data))[0]
        if d is not None and type(d) is not _ndarray:
            return False
    return True


cdef inline void _set_leaf_grad(var, gv) except *:
    """``var._set_grad_var_without_check(gv)``."""
    if is_plain_variable(var) and (gv is None or is_plain_variable(gv)):
        put(var, &_set_grad_var, gv)
        put(var, &_set_grad,
            None if gv is None else (<list>get(gv, &_get_data))[0])
    else:
        var._set_grad_var_without_check(gv)


cdef inline void _check_grad(func, x, gx) except *:
    """``variable._check_grad_type(func, x, True, gx)`` with the common
    all-good case decided here."""
    if (type(gx) is _ndarray and type(x) is _VariableNode
            and get(x, &_get_layout) is None):
        x_data = get(x, &_get_data)
        if x_data is None or type(x_data) is _ndarray:
            dtype = get(x, &_get_dtype)
            shape = get(x, &_get_shape)
            if (dtype is not None and shape is not None
                    and _same_dtype(gx, dtype) and _same_shape(gx, shape)):
                return
    _check_grad_type(func, x, True, gx)


cdef inline bint _same_dtype(object a, object dtype) except -1:
    """``a.dtype == dtype`` for an ndarray ``a``, decided without building
    objects when ``dtype`` is ``a``'s own descr."""
    if numpy_struct_matches() and cfp_descr_of(a) == <void *>dtype:
        return True
    return a.dtype == dtype


cdef inline bint _same_shape(object a, object shape) except -1:
    """``a.shape == shape`` for an ndarray ``a``, read from its dims."""
    cdef Py_ssize_t i, nd
    cdef Py_ssize_t *dims
    if not numpy_struct_matches() or type(shape) is not tuple:
        return a.shape == shape
    nd = cfp_nd(a)
    if len(<tuple>shape) != nd:
        return False
    dims = cfp_dims(a)
    for i in range(nd):
        d = (<tuple>shape)[i]
        if type(d) is not int:
            return a.shape == shape
        if <Py_ssize_t>d != dims[i]:
            return False
    return True
