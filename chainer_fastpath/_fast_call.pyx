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

from chainer_fastpath._core._audit cimport StockMethods, method_is
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats
from chainer_fastpath._core._objects cimport new_variable, weak_ref
from chainer_fastpath._core._apply cimport check_outputs, none_layouts
from chainer_fastpath._core._config cimport ConfigView, function_hooks
from chainer_fastpath._core._registry cimport NOT_HANDLED, run_forward
from chainer_fastpath._core._type_check cimport check_types

cdef EntryStats _stats_apply = _stats.entry('FunctionNode.apply')
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


def _constant_labels():
    # Label properties that only return a constant string: evaluating them
    # can neither fail nor change anything, so the fast path may skip it.
    m = basic_math
    return frozenset(cls.__dict__['label']
                     for cls in (m.Neg, m.Absolute, m.Add, m.Sub, m.Mul,
                                 m.Div))


cdef frozenset _CONSTANT_LABELS = _constant_labels()


def _value_labels():
    # Label properties of the nodes with a constant operand:
    # '<op> %s' % _convert_value_to_string(self.value).
    m = basic_math
    return frozenset(cls.__dict__['label']
                     for cls in (m.AddConstant, m.SubFromConstant,
                                 m.MulConstant, m.DivFromConstant,
                                 m.PowVarConst, m.PowConstVar))


cdef frozenset _VALUE_LABELS = _value_labels()
cdef object _basic_math = basic_math
cdef object _convert_value = basic_math._convert_value_to_string


cdef bint _label_is_pure(object node, object label) except -1:
    """Whether evaluating ``label``, the class's label property, can
    neither fail nor change anything: a constant string, or a constant
    operand's label while its value is an int or a float and the helper it
    calls is stock's (a replaced one, a mock, is called as stock calls
    it)."""
    if label in _CONSTANT_LABELS:
        return True
    if label not in _VALUE_LABELS:
        return False
    t = type(node.value)
    return ((t is float or t is int)
            and _basic_math._convert_value_to_string is _convert_value)


cdef object _OrderedDict = collections.OrderedDict


TARGETS = ((_FunctionNode, 'apply'),)


def bind(owner, attribute, original):
    """Keeps the stock ``apply`` to fall back to; returns its
    replacement."""
    global _original_apply
    _original_apply = original
    return apply


cdef str _unsupported_variable(object x, object data):
    """Why a Variable input, whose array is ``data``, is not for the fast
    path, or None when it is."""
    if x._has_chainerx_array:
        return 'ChainerX array'
    if type(data) is not _ndarray:
        if data is None:
            return 'uninitialized input variable'
        return _array_reason(data)
    if x._layout is not None:
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
    local = self._local_function_hooks
    if local is not None and len(local) > 0:
        hooks = _OrderedDict(hooks)
        hooks.update(local)
    return hooks


cdef inline object _values(object hooks):
    # A live view, iterated as Python iterates it: stock reads the dict again
    # for the postprocess calls (a hook added in the meantime is called), and
    # a dict changed during a loop raises the dict's own RuntimeError.
    return hooks.values()


cdef object _input_variable(object x):
    """``chainer.as_variable`` for a raw array input."""
    return new_variable(x, False, None, 0)


# The node that a compiled caller applies through apply_or_debug().
cdef object _caller_node = None


cdef object apply_or_debug(object node, object inputs):
    """``node.apply(inputs)``, or None (nothing done) in debug mode: there
    each node records the Python stack it was made in, so the compiled
    caller (a Variable operator) must run its original code instead, whose
    frame stock's stack shows. Costs nothing outside debug mode, where
    ``apply`` reads the mode anyway."""
    global _caller_node
    _caller_node = node
    try:
        return node.apply(inputs)
    finally:
        _caller_node = None


def apply(self, inputs):
    """Drop-in for ``FunctionNode.apply``; same results, same errors."""
    cdef ConfigView config = ConfigView.current()
    cdef str reason = None
    cdef Py_ssize_t i, n = 0
    cdef bint requires_grad = False
    cdef object x, y, t, hooks, outputs, retained, rank = 0
    cdef list in_data = None, input_vars = None, input_nodes = None

    if config.get('debug'):
        if self is _caller_node:
            return None     # to apply_or_debug's caller, applying nothing
        reason = 'debug mode'
    elif config.get('schedule_func') is not None:
        reason = 'static graph (schedule_func)'
    elif type(inputs) is not tuple and type(inputs) is not list:
        reason = 'inputs neither tuple nor list'
    else:
        # One pass: check every input and gather what stock gathers.
        n = len(inputs)
        in_data = [None] * n
        # The inputs' Variables; None for a raw array, whose Variable is
        # made only if something needs it (graph, retention, layout check).
        input_vars = [None] * n
        input_nodes = [None] * n
        for i in range(n):
            x = inputs[i]
            t = type(x)
            if t is _ndarray:
                in_data[i] = x
                continue
            if t is _Variable or t is _Parameter:
                y = (<list>x._data)[0]
                reason = _unsupported_variable(x, y)
            else:
                reason = _unsupported_other(x)
            if reason is not None:
                break
            input_vars[i] = x
            in_data[i] = y
            if x._requires_grad:
                requires_grad = True
            y = x._node
            input_nodes[i] = y
            y = y._rank
            if y > rank:
                rank = y
    if reason is not None:
        _stats_apply.fallback(reason)
        return _original_apply(self, inputs)
    _stats_apply.fast += 1

    label = type(self).label
    if label is not _label and not _label_is_pure(self, label):
        # Stock evaluates the label for its array-compatibility message on
        # every call; an overridden label may raise.
        self.label

    in_tuple = tuple(in_data)
    self._input_layouts = none_layouts(n)

    if config.get('type_check'):
        check_types(self, in_tuple)

    if not method_is(self, 'check_layout_forward', _check_layout_forward):
        _materialize(input_vars, in_data)
        self.check_layout_forward(input_vars)

    hooks = _hooks_of(self)
    if hooks:
        for hook in _values(hooks):
            hook.forward_preprocess(self, in_tuple)

    self._input_indexes_to_retain = None
    self._output_indexes_to_retain = None
    outputs = run_forward(self, in_tuple, config)
    if outputs is NOT_HANDLED:
        outputs = self.forward(in_tuple)

    cdef bint elementwise = self.is_elementwise
    check_outputs(self, outputs, elementwise)
    cdef Py_ssize_t n_out = len(<tuple>outputs)

    cdef object layouts = self._output_layouts
    if elementwise:
        assert layouts is None
        if n == 0:
            # Stock gives the outputs input 0's layout: with no input, its
            # IndexError.
            self._input_layouts[0]
        layouts = self._output_layouts = none_layouts(n_out)
    elif layouts is None:
        layouts = self._output_layouts = none_layouts(n_out)
    cdef tuple out_layouts
    if type(self).output_layouts is _output_layouts:
        out_layouts = layouts
    else:
        out_layouts = self.output_layouts

    if hooks:
        for hook in _values(hooks):
            hook.forward_postprocess(self, in_tuple)

    self._output_count = n_out

    cdef bint backprop = config.get('enable_backprop')
    if backprop:
        self.rank = rank
    cdef object creator = self if backprop else None
    cdef list ret = [None] * n_out
    for i in range(n_out):
        y = (<tuple>outputs)[i]
        if type(y) is _ndarray and out_layouts[i] is None:
            ret[i] = new_variable(y, requires_grad, creator, rank)
        else:
            y = _Variable(y, requires_grad=requires_grad,
                          layout=out_layouts[i])
            if backprop:
                y._node.creator_node = self
            ret[i] = y
    cdef tuple ret_tuple = tuple(ret)

    if backprop:
        for i in range(n):
            if input_nodes[i] is None:
                x = input_vars[i]
                if x is None:
                    x = input_vars[i] = _input_variable(in_data[i])
                input_nodes[i] = x._node
        self.inputs = tuple(input_nodes)
        for i in range(n_out):
            ret[i] = weak_ref((<object>ret[i])._node)
        self.outputs = tuple(ret)

        retained = self._input_indexes_to_retain
        if retained is not None:
            for index in retained:
                _retain(input_vars[index])

        retained = self._output_indexes_to_retain
        if retained is not None:
            retained_data = []
            for index in retained:
                _retain(ret_tuple[index])
                retained_data.append(outputs[index])
            self._retained_output_data = tuple(retained_data)

        self.lazy_grad_sum = config.get('lazy_grad_sum')

    return ret_tuple


cdef inline void _retain(object var) except *:
    """``var.retain_data()``, inlined while it and what it calls are
    stock's: the node keeps the array and refreshes its dtype and shape."""
    cdef type t = type(var)
    cdef object node
    if ((t is _Variable or t is _Parameter)
            and method_is(var, 'retain_data', _retain_data)):
        node = var._node
        if (type(node) is _VariableNode and _node_setter.on_class()
                and method_is(node, '_update_data_info', _update_data_info)
                and node._layout is None):
            data = (<list>var._data)[0]
            node._data = data
            if data is None:
                node.dtype = None
                node.shape = None
            else:
                node.dtype = data.dtype
                node.shape = data.shape
            return
    var.retain_data()


cdef inline void _materialize(list input_vars, list in_data):
    """Wraps the raw-array inputs in Variables, as ``as_variable`` does."""
    cdef Py_ssize_t i
    for i in range(len(input_vars)):
        if input_vars[i] is None:
            input_vars[i] = _input_variable(in_data[i])
