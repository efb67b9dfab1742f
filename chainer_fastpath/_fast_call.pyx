# cython: boundscheck=True, wraparound=True
"""Fast path for ``FunctionNode.apply``.

Stock ``apply`` (chainer/function_node.py) is the model: every step it takes
is taken here, in the same order, or skipped only where it provably has no
effect on NumPy arrays (device contexts, memory layouts when every layout is
``None``, empty hook lists). Whatever this path does not handle is decided
before any state changes, and then the original runs, counted with a reason.
"""

import collections

import numpy

from chainer import function_node
from chainer import variable
from chainer.functions.math import basic_math

from cpython.object cimport PyObject

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_class_has, cfp_class_value,
    cfp_getattr as get, cfp_setattr as put, get_site, lookup_site, set_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport (
    StockMethods, class_finds, method_is_at, stock_replaced)
from chainer_fastpath._core._stats cimport EntryStats, python_ran
from chainer_fastpath._core import _stats
from chainer_fastpath._core._objects cimport (
    construct, constructs_plainly, dtype_of, new_variable, shape_of,
    untracked_refs, weak_ref)
from chainer_fastpath._core._dicts cimport cfp_dict_item_keyed, cfp_keyed_memo
from chainer_fastpath._core._tuples cimport nones, set_item
from chainer_fastpath._core._apply cimport check_outputs, none_layouts
from chainer_fastpath._core._config cimport ConfigView, function_hooks
from chainer_fastpath._core import _registry
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, Compiled, lookup, node_class, run_forward)
from chainer_fastpath._core._type_check cimport check_types, passed_before
from chainer_fastpath._runtime._apply_node cimport install_apply

cdef EntryStats _stats_apply = _stats.entry('FunctionNode.apply')
# The applies of new nodes that made no node (the runtime's apply_new).
cdef EntryStats _stats_nodeless = _stats.entry('FunctionNode.apply, no node')

cfp_attr_enable(_attrs.FAST)
# The inputs' and the node's state, read and written through per-site
# caches (_attrs.h): each a few instructions where a generic access from C
# costs a type lookup and a key search.
cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _get_has_chainerx_array = get_site('_has_chainerx_array')
cdef cfp_attr _get_layout = get_site('_layout')
cdef cfp_attr _get_requires_grad = get_site('_requires_grad')
cdef cfp_attr _get_node = get_site('_node')
cdef cfp_attr _get_rank = get_site('_rank')
cdef cfp_attr _get_value = get_site('value')
cdef cfp_attr _get_local_function_hooks = get_site('_local_function_hooks')
cdef cfp_attr _get_is_elementwise = get_site('is_elementwise')
cdef cfp_attr _get_output_layouts = get_site('_output_layouts')
cdef cfp_attr _get_input_retained = get_site('_input_indexes_to_retain')
cdef cfp_attr _get_output_retained = get_site('_output_indexes_to_retain')
cdef cfp_attr _set_input_layouts = set_site('_input_layouts')
cdef cfp_attr _set_input_retained = set_site('_input_indexes_to_retain')
cdef cfp_attr _set_output_retained = set_site('_output_indexes_to_retain')
cdef cfp_attr _set_output_layouts = set_site('_output_layouts')
cdef cfp_attr _set_output_count = set_site('_output_count')
cdef cfp_attr _set_rank = set_site('rank')
cdef cfp_attr _set_inputs = set_site('inputs')
cdef cfp_attr _set_outputs = set_site('outputs')
cdef cfp_attr _set_lazy_grad_sum = set_site('lazy_grad_sum')
cdef cfp_attr _set_retained_output_data = set_site('_retained_output_data')
# A retained variable's node.
cdef cfp_attr _set_data = set_site('_data')
cdef cfp_attr _set_dtype = set_site('dtype')
cdef cfp_attr _set_shape = set_site('shape')
# Methods that must still be stock's.
cdef cfp_attr _check_layout_forward_site = lookup_site('check_layout_forward')
cdef cfp_attr _retain_data_site = lookup_site('retain_data')
cdef cfp_attr _update_data_info_site = lookup_site('_update_data_info')
# Properties that must still be stock's.
cdef cfp_attr _label_site = lookup_site('label')
cdef cfp_attr _output_layouts_site = lookup_site('output_layouts')
cdef object _original_apply = None

cdef type _ndarray = numpy.ndarray
cdef type _Variable = variable.Variable
cdef type _Parameter = variable.Parameter
cdef type _FunctionNode = function_node.FunctionNode
cdef object _check_layout_forward = _FunctionNode.check_layout_forward
cdef object _label = _FunctionNode.__dict__['label']
cdef object _output_layouts = _FunctionNode.__dict__['output_layouts']
cdef type _VariableNode = variable.VariableNode
cdef object _update_data_info = _VariableNode.__dict__['_update_data_info']
cdef object _retain_data = _Variable.__dict__['retain_data']
# What ``Variable.retain_data`` calls on the node: the ``data`` setter.
cdef StockMethods _node_setter = StockMethods(
    _VariableNode, ('data', '_update_data_info'))


cdef frozenset _CONSTANT_LABELS = _registry.CONSTANT_LABELS
# The members of _CONSTANT_LABELS and of _VALUE_LABELS last found.
cdef object _last_constant_label = None
cdef object _last_value_label = None


def _value_labels():
    # Label properties of the nodes with a constant operand:
    # '<op> %s' % _convert_value_to_string(self.value).
    # Classes put in their place before this import give none of their
    # own: their label is then evaluated as stock evaluates it.
    m = basic_math
    labels = (vars(cls).get('label')
              for cls in (m.AddConstant, m.SubFromConstant, m.MulConstant,
                          m.DivFromConstant, m.PowVarConst, m.PowConstVar))
    return frozenset(label for label in labels if label is not None)


cdef frozenset _VALUE_LABELS = _value_labels()
cdef dict _basic_math_globals = basic_math.__dict__
cdef object _convert_value = basic_math._convert_value_to_string
cdef cfp_keyed_memo _convert_value_read


cdef bint _label_is_pure(object node, object label) except -1:
    """Whether evaluating ``label``, the class's label property, can
    neither fail nor change anything: a constant string, or a constant
    operand's label while its value is an int or a float and the helper it
    calls is stock's (a replaced one, a mock, is called as stock calls
    it)."""
    global _last_constant_label, _last_value_label
    if label is _last_constant_label:
        return True
    # Most calls apply the class of the call before.
    if label is not _last_value_label:
        if label in _CONSTANT_LABELS:
            _last_constant_label = label
            return True
        if label not in _VALUE_LABELS:
            return False
        _last_value_label = label
    t = type(get(node, &_get_value))
    if t is not float and t is not int:
        return False
    # The module's global as its attribute gives it (a missing one raises).
    cdef PyObject *helper = cfp_dict_item_keyed(
        &_convert_value_read, _basic_math_globals, '_convert_value_to_string')
    if helper is NULL:
        return basic_math._convert_value_to_string is _convert_value
    return <object>helper is _convert_value


cdef object _OrderedDict = collections.OrderedDict


TARGETS = ((_FunctionNode, 'apply'),)


def bind(owner, attribute, original):
    """Keeps the stock ``apply`` to fall back to; returns its
    replacement."""
    global _original_apply
    _original_apply = original
    # The compiled backwards stand for stock's applies: this one too.
    _registry.accept_equivalent(original, apply)
    return apply


cdef str _unsupported_variable(object x, object data):
    """Why a Variable input, whose array is ``data``, is not for the fast
    path, or None when it is."""
    if get(x, &_get_has_chainerx_array):
        return 'ChainerX array'
    if type(data) is not _ndarray:
        if data is None:
            return 'uninitialized input variable'
        return _array_reason(data)
    if get(x, &_get_layout) is not None:
        return 'non-standard memory layout'
    return None


cdef str _unsupported_other(object x):
    """Why an input that is neither a Variable nor an ndarray is not for
    the fast path."""
    if isinstance(x, _Variable):
        return 'Variable subclass ' + type(x).__name__
    return _array_reason(x)


cdef str _array_reason(object a):
    cdef str module = type(a).__module__ or ''
    if module.startswith('cupy'):
        return 'CuPy array (GPU path not verified)'
    if module.startswith('chainerx'):
        return 'ChainerX array'
    if module.startswith('ideep'):
        return 'iDeep array'
    return 'array type ' + type(a).__name__


cdef object _hooks_of(object self):
    """The dict whose values stock calls as the function hooks: the
    thread's own dict, or a copy of it updated with the local hooks."""
    cdef object hooks = function_hooks()
    local = get(self, &_get_local_function_hooks)
    if local is not None and len(local) > 0:
        hooks = _OrderedDict(hooks)
        hooks.update(local)
    return hooks


cdef inline object _values(object hooks):
    # A live view, iterated as Python iterates it: stock reads the dict again
    # for the postprocess calls (a hook added in the meantime is called), and
    # a dict changed during a loop raises the dict's own RuntimeError.
    return hooks.values()


cdef inline str _gather(object inputs, tuple in_tuple, bint *raw,
                        bint *requires_grad):
    """One pass over ``inputs`` (a tuple or list as long as ``in_tuple``):
    puts each one's array in ``in_tuple``, sets ``raw`` where one is an
    ndarray and ``requires_grad`` where a Variable requires a gradient.
    Returns why the inputs are not for the fast path, or None."""
    cdef Py_ssize_t i
    cdef str reason
    for i in range(len(in_tuple)):
        x = inputs[i]
        t = type(x)
        if t is _ndarray:
            raw[0] = True
            y = x
        elif t is _Variable or t is _Parameter:
            y = (<list>get(x, &_get_data))[0]
            reason = _unsupported_variable(x, y)
            if reason is not None:
                return reason
            if get(x, &_get_requires_grad):
                requires_grad[0] = True
        else:
            return _unsupported_other(x)
        set_item(in_tuple, i, y)
    return None


cdef object _input_variable(object x):
    """``chainer.as_variable`` for a raw array input."""
    return new_variable(x, False, None, 0)


cdef object _apply_unrecorded(object cls, tuple inputs, ConfigView config):
    # The runtime's apply_new without backprop (_runtime/_apply_node.pyx):
    # what _apply does for a new node of cls, in no-backprop mode, when the
    # node's own state cannot matter; or NOT_HANDLED, before anything is
    # done, for _apply to do.
    cdef Compiled entry = lookup(cls)
    if (entry is None or entry.nodeless is None
            or not constructs_plainly(cls) or not entry.nodeless.on_class()
            or (entry.forward_functions is not None
                and not entry.forward_functions.unchanged())
            or not class_finds(cls, 'apply', _patched_apply)
            or config.get('debug')
            or config.get('schedule_func') is not None
            or stock_replaced() is not None or function_hooks()):
        return NOT_HANDLED
    cdef Py_ssize_t i, n = len(inputs)
    cdef tuple in_tuple = nones(n)
    cdef bint raw = False, requires_grad = False
    if (n == 0 or _gather(inputs, in_tuple, &raw, &requires_grad) is not None
            or (config.get('type_check')
                and not passed_before(entry, in_tuple))):
        return NOT_HANDLED
    outputs = entry.forward(None, in_tuple, config)
    if outputs is NOT_HANDLED:
        return NOT_HANDLED
    _stats_nodeless.fast += 1
    entry.forward_calls += 1
    cdef Py_ssize_t n_out = len(<tuple>outputs)
    if n_out != 1 or type((<tuple>outputs)[0]) is not _ndarray:
        # Stock's checks, and errors about a node as stock's would be.
        check_outputs(construct(cls), outputs, cls.is_elementwise)
    cdef tuple ret = nones(n_out)
    for i in range(n_out):
        y = (<tuple>outputs)[i]
        if type(y) is _ndarray:
            y = new_variable(y, requires_grad, None, 0)
        else:
            y = _Variable(y, requires_grad=requires_grad)
        set_item(ret, i, y)
    return ret


def apply(self, inputs):
    """Drop-in for ``FunctionNode.apply``; same results, same errors."""
    return _apply(self, inputs, None)


cdef object _patched_apply = apply
# The runtime's apply_or_debug and apply_new (the Variable operators', the
# public functions') take this fast path where a node's apply is ours.
install_apply(apply, _apply, _apply_unrecorded)


cdef object _apply(object self, object inputs, ConfigView config):
    # ``config``: the current configuration where the caller read it, and
    # found debug mode off just before (the runtime's apply_or_debug):
    # nothing runs in between, so a second read would find what it found.
    cdef bint debug = False
    if config is None:
        config = ConfigView.current()
        debug = config.get('debug')
    cdef str reason = None
    cdef Py_ssize_t i, n = 0
    cdef bint requires_grad = False, raw = False
    cdef object x, y, t, hooks, outputs, retained, rank = 0
    # The inputs' arrays, and their Variables: the inputs themselves where
    # all are Variables, else a list holding None for each raw array, whose
    # Variable is made only if something needs it (graph, retention,
    # layout check).
    cdef tuple in_tuple = None
    cdef object input_vars = None

    if debug:
        reason = 'debug mode'
    elif config.get('schedule_func') is not None:
        reason = 'static graph (schedule_func)'
    elif type(inputs) is not tuple and type(inputs) is not list:
        reason = 'inputs neither tuple nor list'
    elif stock_replaced() is not None:
        reason = stock_replaced()
    else:
        n = len(inputs)
        in_tuple = nones(n)
        reason = _gather(inputs, in_tuple, &raw, &requires_grad)
    if reason is not None:
        _stats_apply.fallback(reason)
        python_ran(node_class(self), 'forward', reason)
        return _original_apply(self, inputs)
    _stats_apply.fast += 1
    if raw:
        input_vars = [None if type(x) is _ndarray else x for x in inputs]
    elif type(inputs) is tuple:
        input_vars = inputs
    else:
        # Stock's list is its own; the caller's may change meanwhile.
        input_vars = tuple(inputs)

    cdef PyObject *label_found
    if not cfp_class_has(self, &_label_site, _label):
        if cfp_class_value(self, &_label_site, &label_found):
            label = <object>label_found if label_found is not NULL else None
        else:
            label = type(self).label
        if label is not _label and not _label_is_pure(self, label):
            # Stock evaluates the label for its array-compatibility message
            # on every call; an overridden label may raise.
            self.label

    put(self, &_set_input_layouts, none_layouts(n))

    if config.get('type_check'):
        check_types(self, in_tuple)

    if not method_is_at(self, &_check_layout_forward_site,
                        _check_layout_forward):
        # Stock passes a list of Variables, the one it goes on with.
        input_vars = list(input_vars)
        _materialize(input_vars, in_tuple)
        self.check_layout_forward(input_vars)

    hooks = _hooks_of(self)
    if hooks:
        for hook in _values(hooks):
            hook.forward_preprocess(self, in_tuple)
        # A hook may rebind what the compiled forwards stand for (NumPy's
        # functions, Chainer's properties): the node's own forward then
        # calls the replacement, as often as stock does.
        reason = stock_replaced()

    put(self, &_set_input_retained, None)
    put(self, &_set_output_retained, None)
    if reason is None:
        outputs = run_forward(self, in_tuple, config)
    else:
        python_ran(node_class(self), 'forward', reason)
        outputs = NOT_HANDLED
    if outputs is NOT_HANDLED:
        outputs = self.forward(in_tuple)

    cdef bint elementwise = get(self, &_get_is_elementwise)
    check_outputs(self, outputs, elementwise)
    cdef Py_ssize_t n_out = len(<tuple>outputs)

    cdef object layouts = get(self, &_get_output_layouts)
    if elementwise:
        assert layouts is None
        if n == 0:
            # Stock gives the outputs input 0's layout: with no input, its
            # IndexError.
            self._input_layouts[0]
        layouts = none_layouts(n_out)
        put(self, &_set_output_layouts, layouts)
    elif layouts is None:
        layouts = none_layouts(n_out)
        put(self, &_set_output_layouts, layouts)
    cdef tuple out_layouts
    if (cfp_class_has(self, &_output_layouts_site, _output_layouts)
            or type(self).output_layouts is _output_layouts):
        out_layouts = layouts
    else:
        out_layouts = self.output_layouts

    if hooks:
        for hook in _values(hooks):
            hook.forward_postprocess(self, in_tuple)

    put(self, &_set_output_count, n_out)

    cdef bint backprop = config.get('enable_backprop')
    cdef tuple input_nodes = None
    if backprop:
        input_nodes = nones(n)
        for i in range(n):
            x = input_vars[i]
            if x is None:
                x = _input_variable(in_tuple[i])
                (<list>input_vars)[i] = x
            y = get(x, &_get_node)
            set_item(input_nodes, i, y)
            t = get(y, &_get_rank)
            if t > rank:
                rank = t
        put(self, &_set_rank, rank)
    cdef object creator = self if backprop else None
    cdef tuple ret = nones(n_out)
    for i in range(n_out):
        y = (<tuple>outputs)[i]
        if type(y) is _ndarray and out_layouts[i] is None:
            y = new_variable(y, requires_grad, creator, rank)
        else:
            y = _Variable(y, requires_grad=requires_grad,
                          layout=out_layouts[i])
            if backprop:
                y._node.creator_node = self
        set_item(ret, i, y)

    if backprop:
        put(self, &_set_inputs, input_nodes)
        refs = nones(n_out)
        for i in range(n_out):
            set_item(refs, i, weak_ref(get(ret[i], &_get_node)))
        put(self, &_set_outputs, untracked_refs(refs))

        retained = get(self, &_get_input_retained)
        if retained is not None:
            for index in retained:
                _retain(input_vars[index])

        retained = get(self, &_get_output_retained)
        if retained is not None:
            retained_data = []
            for index in retained:
                _retain(ret[index])
                retained_data.append(outputs[index])
            put(self, &_set_retained_output_data, tuple(retained_data))

        put(self, &_set_lazy_grad_sum, config.get('lazy_grad_sum'))

    return ret


cdef inline void _retain(object var) except *:
    """``var.retain_data()``, inlined while it and what it calls are
    stock's: the node keeps the array and refreshes its dtype and shape."""
    cdef type t = type(var)
    cdef object node
    if ((t is _Variable or t is _Parameter)
            and method_is_at(var, &_retain_data_site, _retain_data)):
        node = get(var, &_get_node)
        if (type(node) is _VariableNode and _node_setter.on_class()
                and method_is_at(node, &_update_data_info_site,
                                 _update_data_info)
                and get(node, &_get_layout) is None):
            data = (<list>get(var, &_get_data))[0]
            put(node, &_set_data, data)
            if data is None:
                put(node, &_set_dtype, None)
                put(node, &_set_shape, None)
            else:
                put(node, &_set_dtype, dtype_of(data))
                put(node, &_set_shape, shape_of(data))
            return
    var.retain_data()


cdef inline void _materialize(list input_vars, tuple in_data):
    """Wraps the raw-array inputs in Variables, as ``as_variable`` does."""
    cdef Py_ssize_t i
    for i in range(len(input_vars)):
        if input_vars[i] is None:
            input_vars[i] = _input_variable(in_data[i])
