# cython: boundscheck=True, wraparound=True
"""Compiled ``backward`` of the most common FunctionNodes, for NumPy arrays.

Stock ``backward`` of these nodes applies new FunctionNodes to the gradients
(``LinearGradData``, ``ReLUGrad2``, ...). While no graph is recorded and no
function hook is registered, those nodes are dropped as soon as they return,
so nothing can observe them: what remains observable is the gradient
Variables they return. Each function here returns the same Variables, built
from the same NumPy calls in the same order: either by calling NumPy directly
where the gradient nodes' type checks provably pass (Linear, the activations,
Mul, SquaredError, Concat's split, ...), or by running the stock gradient
node's own type check and forward through ``apply_detached``.

A function is used only while the node's class is exactly the audited one
and the methods and module functions its stock ``backward`` calls are still
stock's. Whatever a function cannot prove it handles as stock does (missing
retained data, dead output nodes, casts, broadcasting) it leaves to stock by
returning ``NOT_COMPILED`` before computing anything.
"""
import numpy

import chainer
import chainer.functions
from chainer.backends import intel64
from chainer.functions.activation import relu
from chainer.functions.activation import sigmoid
from chainer.functions.activation import tanh
from chainer.functions.array import broadcast
from chainer.functions.array import concat
from chainer.functions.array import get_item
from chainer.functions.array import split_axis
from chainer.functions.array import reshape
from chainer.functions.connection import embed_id
from chainer.functions.connection import linear
from chainer.functions.loss import softmax_cross_entropy
from chainer.functions.loss import squared_error
from chainer.functions.math import basic_math
from chainer.functions.math import sum as sum_mod
from chainer.functions.rnn import lstm

from chainer_fastpath import _arith
from chainer_fastpath._fast_call cimport apply_detached
from chainer_fastpath._forwards cimport NOT_COMPILED as _FORWARD_NOT_COMPILED
from chainer_fastpath._audit cimport StockMethods
from chainer_fastpath cimport _softmax_cross_entropy as _sce
from chainer_fastpath._forwards cimport embed_id_grad_into, lstm_grad
from chainer_fastpath._objects cimport new_variable, node_data
from chainer_fastpath._stats cimport EntryStats
from chainer_fastpath import _stats

NOT_COMPILED = object()

cdef EntryStats _stats_backward = _stats.entry('FunctionNode.backward')

cdef type _ndarray = numpy.ndarray
cdef object _ascontiguousarray = numpy.ascontiguousarray
cdef object _arange = numpy.arange
# What ndarray.sum calls, without numpy.core._methods._sum around it.
cdef object _add_reduce = numpy.add.reduce
cdef object _F = chainer.functions
cdef object _utils = chainer.utils

cdef enum Kind:
    LINEAR = 1
    RELU = 2
    TANH = 3
    SIGMOID = 4
    ADD = 5
    ADD_CONSTANT = 10
    SUM = 6
    SOFTMAX_CROSS_ENTROPY = 7
    LSTM = 8
    EMBED_ID = 9
    CONCAT = 11
    GET_ITEM = 12
    MUL = 13
    SPLIT_AXIS = 14
    MUL_CONSTANT = 15
    NEG = 16
    SQUARED_ERROR = 17

# Module functions that stock backwards look up at call time.
cdef tuple _F_NAMES = ('cast', 'sum', 'sum_to', 'broadcast_to', 'reshape',
                       'split_axis', 'concat')
cdef tuple _F_ORIGINALS = tuple([getattr(_F, n) for n in _F_NAMES])

# Gradient-node methods that the compiled backwards reproduce.
cdef tuple _INNER = (
    (linear.LinearGradData, 'forward'),
    (linear.LinearGradWeight, 'forward'),
    (sum_mod.Sum, 'forward'),
    (lstm.LSTMGrad, '__init__'),
    (lstm.LSTMGrad, 'forward'),
    (softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop,
     'forward'),
    (softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop,
     'forward_cpu'),
    # The activations' gradient nodes.
    (relu.ReLUGrad2, 'check_type_forward'),
    (relu.ReLUGrad2, 'forward'),
    (relu.ReLUGrad2, 'forward_cpu'),
    (tanh.TanhGrad, 'check_type_forward'),
    (tanh.TanhGrad, 'forward'),
    (tanh.TanhGrad, 'forward_cpu'),
    (sigmoid.SigmoidGrad, 'check_type_forward'),
    (sigmoid.SigmoidGrad, 'forward'),
    (sigmoid.SigmoidGrad, 'forward_cpu'),
    # Concat's backward: F.split_axis's node, its check and its forward.
    (split_axis.SplitAxis, '__init__'),
    (split_axis.SplitAxis, 'check_type_forward'),
    (split_axis.SplitAxis, 'forward'),
    # SquaredError's backward: gy * 2 * (x0 - x1) and its negation.
    (basic_math.MulConstant, 'forward'),
    (basic_math.Sub, 'check_type_forward'),
    (basic_math.Sub, 'forward'),
    (basic_math.Mul, 'check_type_forward'),
    (basic_math.Mul, 'forward'),
    (basic_math.Neg, 'forward'),
    (chainer.Variable, '__mul__'),
    (chainer.Variable, '__sub__'),
    (chainer.Variable, '__neg__'),
)
# The classes' entries, checked by their version tags; Variable's operators
# one by one, because while the patch is on they may also be ``_arith``'s,
# which apply the same nodes as stock's.
cdef dict _INNER_ALTERNATIVES = {
    (chainer.Variable, '__mul__'): _arith.mul,
    (chainer.Variable, '__sub__'): _arith.sub,
}
cdef tuple _INNER_VARIABLE = tuple([(n, getattr(c, n)) for c, n in _INNER
                                    if c is chainer.Variable])


def _inner_methods():
    names = {}
    for cls, name in _INNER:
        if cls is not chainer.Variable:
            names.setdefault(cls, []).append(name)
    return tuple([StockMethods(cls, n) for cls, n in names.items()])


cdef tuple _INNER_METHODS = _inner_methods()
# Module functions the compiled backwards reproduce.
cdef tuple _MODULE_FUNCTIONS = (
    (numpy, 'split'),
    (split_axis, '_get_indices_or_sections'),
    (basic_math, '_preprocess_const'),
)
cdef tuple _MODULE_ORIGINALS = tuple([getattr(m, n)
                                      for m, n in _MODULE_FUNCTIONS])

# class -> (kind, the methods its backward uses)
cdef dict _audited = {}
cdef tuple _RETAINED = ('get_retained_inputs', 'get_retained_outputs')


def _audit(cls, kind, names):
    _audited[cls] = (kind,
                     StockMethods(cls, ('backward',) + _RETAINED + names))


if not intel64.is_ideep_available():
    # With iDeep installed the gradient nodes may take its branch.
    _audit(linear.LinearFunction, LINEAR, ())
    _audit(relu.ReLU, RELU, ())
    _audit(tanh.Tanh, TANH, ())
    _audit(sigmoid.Sigmoid, SIGMOID, ())
    _audit(basic_math.Add, ADD, ())
    _audit(basic_math.AddConstant, ADD_CONSTANT, ())
    _audit(sum_mod.Sum, SUM, ())
    _audit(softmax_cross_entropy.SoftmaxCrossEntropy,
           SOFTMAX_CROSS_ENTROPY, ())
    _audit(lstm.LSTM, LSTM, ())
    _audit(embed_id.EmbedIDFunction, EMBED_ID, ())
    _audit(concat.Concat, CONCAT, ())
    _audit(get_item.GetItem, GET_ITEM, ())
    _audit(basic_math.Mul, MUL, ())
    _audit(split_axis.SplitAxis, SPLIT_AXIS, ())
    _audit(basic_math.MulConstant, MUL_CONSTANT, ())
    _audit(basic_math.Neg, NEG, ())
    _audit(basic_math.SubFromConstant, NEG, ())
    _audit(squared_error.SquaredError, SQUARED_ERROR, ())


cdef bint stock_callees() except -1:
    """Whether the module functions and gradient-node methods the compiled
    backwards reproduce are still stock's (checked once per backward
    pass)."""
    cdef Py_ssize_t i
    for i in range(len(_F_NAMES)):
        if getattr(_F, _F_NAMES[i]) is not _F_ORIGINALS[i]:
            return False
    for i in range(len(_INNER_METHODS)):
        if not (<StockMethods>_INNER_METHODS[i]).on_class():
            return False
    for name, original in _INNER_VARIABLE:
        current = getattr(chainer.Variable, name)
        if (current is not original and current is not
                _INNER_ALTERNATIVES.get((chainer.Variable, name))):
            return False
    for i in range(len(_MODULE_FUNCTIONS)):
        module, name = _MODULE_FUNCTIONS[i]
        if getattr(module, name) is not _MODULE_ORIGINALS[i]:
            return False
    return True


cdef object run_backward(object func, tuple indexes, tuple grad_outputs,
                         bint callees_stock):
    """``func.backward(indexes, grad_outputs)`` on NumPy arrays, for a
    caller that records no graph and has no function hook; or
    NOT_COMPILED, counted with a reason. ``callees_stock``: what
    ``stock_callees()`` said at the start of the backward pass."""
    cdef type cls = type(func)
    entry = _audited.get(cls)
    if entry is None:
        _stats_backward.fallback('no compiled backward: ' + cls.__name__)
        return NOT_COMPILED
    if not callees_stock or not (<StockMethods>(<tuple>entry)[1]).found_by(
            func):
        _stats_backward.fallback('patched or mocked method')
        return NOT_COMPILED
    gxs = _dispatch(func, (<tuple>entry)[0], indexes, grad_outputs)
    if gxs is NOT_COMPILED:
        _stats_backward.fallback('case left to stock: ' + cls.__name__)
    else:
        _stats_backward.fast += 1
    return gxs


cdef object _dispatch(object func, int kind, tuple indexes,
                      tuple grad_outputs):
    if kind == LINEAR:
        return _linear(func, indexes, grad_outputs)
    if kind == RELU:
        return _relu(func, grad_outputs)
    if kind == TANH:
        return _tanh(func, grad_outputs)
    if kind == SIGMOID:
        return _sigmoid(func, grad_outputs)
    if kind == ADD:
        return _add(func, indexes, grad_outputs)
    if kind == ADD_CONSTANT:
        # AddConstant.backward returns its gradients as they are.
        return grad_outputs
    if kind == SUM:
        return _sum(func, grad_outputs)
    if kind == SOFTMAX_CROSS_ENTROPY:
        return _softmax_cross_entropy(func, grad_outputs)
    if kind == LSTM:
        return _lstm(func, grad_outputs)
    if kind == EMBED_ID:
        return _embed_id(func, grad_outputs)
    if kind == CONCAT:
        return _concat(func, grad_outputs)
    if kind == GET_ITEM:
        return _get_item(func, grad_outputs)
    if kind == MUL:
        return _mul(func, indexes, grad_outputs)
    if kind == SPLIT_AXIS:
        return _split_axis(func, grad_outputs)
    if kind == MUL_CONSTANT:
        return _mul_constant(func, grad_outputs)
    if kind == NEG:
        return _neg(grad_outputs)
    if kind == SQUARED_ERROR:
        return _squared_error(func, grad_outputs)
    return NOT_COMPILED


# -- what get_retained_inputs / get_retained_outputs would give -----------

cdef inline object _array_of(object node):
    """``node.get_variable().raw_array``."""
    var = node._variable()
    if var is not None:
        return (<list>var._data)[0]
    return node_data(node)


cdef inline bint _requires_grad_of(object node):
    """``node.get_variable().requires_grad``."""
    var = node._variable()
    if var is not None:
        return var._requires_grad
    return node.requires_grad


cdef list _retained_inputs(object func, list arrays):
    """Appends the retained inputs' arrays to ``arrays``; returns it, or
    None where stock would see a missing one."""
    indexes = func._input_indexes_to_retain
    if indexes is None:
        return arrays
    inputs = func.inputs
    for i in indexes:
        node = inputs[i]
        if node_data(node) is None:
            return None
        a = _array_of(node)
        if type(a) is not _ndarray:
            return None
        arrays.append(a)
    return arrays


cdef bint _retained_inputs_require_grad(object func) except -1:
    indexes = func._input_indexes_to_retain
    if indexes is None:
        return False
    inputs = func.inputs
    for i in indexes:
        if _requires_grad_of(inputs[i]):
            return True
    return False


cdef object _retained_output(object func):
    """The retained output node, when it is output 0, the only one retained
    and still alive (a dead one makes stock rewire the graph); or None."""
    if func._output_indexes_to_retain != (0,):
        return None
    if func._retained_output_data is None:
        return None
    node = func.outputs[0]()
    if node is None:
        return None
    a = _array_of(node)
    if type(a) is not _ndarray:
        return None
    return node


cdef inline object _grad_array(object gy):
    """The NumPy array of gradient Variable ``gy``, or None."""
    if gy is None:
        return None
    a = (<list>gy._data)[0]
    if type(a) is not _ndarray:
        return None
    return a


# -- the backwards ----------------------------------------------------------

cdef object _linear(object func, tuple indexes, tuple grad_outputs):
    # LinearFunction.backward with LinearGradData / LinearGradWeight / Sum
    # forwards inlined: no type check to run (the first two have none; Sum's
    # passes for a float matrix), casts that are identities.
    inputs = func.inputs
    if func._input_indexes_to_retain != (0, 1):
        return NOT_COMPILED
    x_node = inputs[0]
    W_node = inputs[1]
    if node_data(x_node) is None or node_data(W_node) is None:
        return NOT_COMPILED
    x = _array_of(x_node)
    W = _array_of(W_node)
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if (gy is None or type(x) is not _ndarray or type(W) is not _ndarray
            or gy.ndim != 2 or gy.dtype.kind != 'f' or gy.dtype != x.dtype):
        return NOT_COMPILED
    cdef bint gy_rg = gy_var._requires_grad
    gy_c = gy
    if not (gy.flags.c_contiguous or gy.flags.f_contiguous) and 1 in gy.shape:
        gy_c = _ascontiguousarray(gy)
    ret = []
    if 0 in indexes:
        gx = gy_c.dot(W).astype(gy_c.dtype, copy=False)
        ret.append(new_variable(gx, _requires_grad_of(W_node) or gy_rg,
                                None, 0))
    if 1 in indexes:
        gW = gy_c.T.dot(x).astype(W.dtype, copy=False)
        ret.append(new_variable(gW, _requires_grad_of(x_node) or gy_rg,
                                None, 0))
    if 2 in indexes:
        gb = numpy.asarray(_add_reduce(gy, (0,), None, None, False))
        ret.append(new_variable(gb, gy_rg, None, 0))
    return ret


cdef tuple _activation_inputs(object func, tuple grad_outputs):
    """``(y node, gy Variable, gy array)`` of an activation's backward, or
    None where stock is left to handle it (cuDNN, a missing output or
    gradient)."""
    if func._use_cudnn:
        return None
    gy_var = grad_outputs[0]
    y_node = _retained_output(func)
    gy = _grad_array(gy_var)
    if y_node is None or gy is None:
        return None
    return y_node, gy_var, gy


cdef object _relu(object func, tuple grad_outputs):
    # ReLU.backward: ReLUGrad2(y).apply((gy,)), a node without a type check
    # whose forward_cpu (iDeep unavailable) is gy * (y > 0) cast to gy's
    # dtype.
    args = _activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_COMPILED
    y_node, gy_var, gy = args
    gx = gy * (_array_of(y_node) > 0)
    return (new_variable(_utils.force_array(gx, dtype=gy.dtype),
                         gy_var._requires_grad, None, 0),)


cdef object _tanh(object func, tuple grad_outputs):
    # Tanh.backward: TanhGrad(x).apply((y, gy)), a node without a type
    # check whose forward_cpu is gy * (1 - y * y), 1 in y's dtype.
    args = _activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_COMPILED
    y_node, gy_var, gy = args
    y = _array_of(y_node)
    one = y.dtype.type(1)
    return (new_variable(_utils.force_array(gy * (one - y * y)),
                         _requires_grad_of(y_node) or gy_var._requires_grad,
                         None, 0),)


cdef object _sigmoid(object func, tuple grad_outputs):
    # Sigmoid.backward: SigmoidGrad((x,)).apply((y, gy)), whose type check
    # asks for float y and gy and whose forward_cpu is gy * y * (1 - y),
    # 1 in y's dtype.
    args = _activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_COMPILED
    y_node, gy_var, gy = args
    y = _array_of(y_node)
    if y.dtype.kind != 'f' or gy.dtype.kind != 'f':
        return NOT_COMPILED
    one = y.dtype.type(1)
    return (new_variable(_utils.force_array(gy * y * (one - y)),
                         _requires_grad_of(y_node) or gy_var._requires_grad,
                         None, 0),)


cdef object _add(object func, tuple indexes, tuple grad_outputs):
    # Add.backward: F.sum_to(gy, x.shape) is gy itself where shapes match.
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if gy is None:
        return NOT_COMPILED
    inputs = func.inputs
    for i in indexes:
        if gy.shape != inputs[i].shape:
            return NOT_COMPILED
    return tuple([gy_var for i in indexes])


cdef object _sum(object func, tuple grad_outputs):
    # Sum.backward: reshape to keep the summed axes, then broadcast_to.
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if gy is None:
        return NOT_COMPILED
    shape = func.inputs[0].shape
    cdef Py_ssize_t ndim = len(shape)
    axis = func.axis
    if not (ndim == 0 or axis is None or func.keepdims):
        return NOT_COMPILED
    if gy.shape == shape:
        return (gy_var,)
    return apply_detached(broadcast.BroadcastTo(shape), (gy,),
                          gy_var._requires_grad)


cdef object _softmax_cross_entropy(object func, tuple grad_outputs):
    # SoftmaxCrossEntropy.backward (the node only exists without double
    # backprop): its gradient node applied to (x, t, gloss).
    gloss_var = grad_outputs[0]
    gloss = _grad_array(gloss_var)
    if gloss is None:
        return NOT_COMPILED
    arrays = _retained_inputs(func, [])
    if arrays is None or len(arrays) != 2:
        return NOT_COMPILED
    cdef bint rg = (_retained_inputs_require_grad(func)
                    or gloss_var._requires_grad)
    x, t = arrays
    if (func.y is not None and type(func.y) is _ndarray
            and func.class_weight is None and not func.soft_target
            and x.size != 0 and x.ndim == 2):
        return (new_variable(_sce_grad_2d(func, t, gloss), rg, None, 0),
                None)
    arrays.append(gloss)
    grad_node = softmax_cross_entropy._SoftmaxCrossEntropyGrad_NoDoubleBackprop(
        func.ignore_label, func.class_weight, func.y, func._coeff,
        func.soft_target)
    return apply_detached(grad_node, tuple(arrays), rg) + (None,)


cdef object _sce_grad_2d(object func, object t, object gloss):
    # _SoftmaxCrossEntropyGrad_NoDoubleBackprop.forward_cpu for a cached
    # score of a 2-D input, hard labels, no class weight: the one-pass
    # kernel, or where it declines, the same NumPy calls. It has no type
    # check, and its output, an ndarray, passes apply's.
    gx = _sce.grad(func.y, t, func.ignore_label, gloss, func._coeff)
    if gx is not None:
        return gx
    gx = func.y.copy()
    t_valid = t != func.ignore_label
    t = t * t_valid
    gx[_arange(len(t)), t] -= 1
    gx *= t_valid.reshape((len(t), 1))
    coeff = func._coeff
    if coeff is not None:
        gx *= gloss * coeff
    else:
        gx *= gloss[:, None]
    return gx


cdef object _lstm(object func, tuple grad_outputs):
    # LSTM.backward: LSTMGrad()(c_prev, x, c, gc, gh), an old-style Function
    # without a type check. A missing gradient is passed as None, as stock
    # passes it (its Variable, made by as_variable, requires no grad).
    gc_var, gh_var = grad_outputs
    gc = _grad_array(gc_var)
    gh = _grad_array(gh_var)
    if (gc is None and gc_var is not None) or (
            gh is None and gh_var is not None):
        return NOT_COMPILED
    arrays = _retained_inputs(func, [])
    c_node = _retained_output(func)
    if arrays is None or len(arrays) != 2 or c_node is None:
        return NOT_COMPILED
    arrays += [_array_of(c_node), gc, gh]
    outputs = lstm_grad(tuple(arrays))
    if outputs is _FORWARD_NOT_COMPILED:
        outputs = lstm.LSTMGrad().forward(tuple(arrays))
    if (type(outputs) is not tuple or len(<tuple>outputs) != 2
            or type(outputs[0]) is not _ndarray
            or type(outputs[1]) is not _ndarray):
        return NOT_COMPILED
    cdef bint rg = (_retained_inputs_require_grad(func)
                    or _requires_grad_of(c_node)
                    or (gc_var is not None and gc_var._requires_grad)
                    or (gh_var is not None and gh_var._requires_grad))
    return (new_variable(outputs[0], rg, None, 0),
            new_variable(outputs[1], rg, None, 0))


cdef object _embed_id(object func, tuple grad_outputs):
    # EmbedIDFunction.backward: (None, EmbedIDGrad(...).apply((x, gy))[0]).
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if gy is None:
        return NOT_COMPILED
    arrays = _retained_inputs(func, [])
    if arrays is None:
        return NOT_COMPILED
    arrays.append(gy)
    gW = apply_detached(
        embed_id.EmbedIDGrad(func._w_shape, func.ignore_label),
        tuple(arrays),
        _retained_inputs_require_grad(func) or gy_var._requires_grad)[0]
    return None, gW


# What building and applying EmbedIDGrad calls, when embed_id_into stands
# in for it.
cdef StockMethods _EMBED_ID_GRAD = StockMethods(
    embed_id.EmbedIDGrad,
    ('__init__', 'check_type_forward', 'forward', 'retain_inputs'))


cdef bint embed_id_into(object func, tuple grad_outputs, object acc_var,
                        bint callees_stock) except -1:
    """For the caller that records no graph, has no function hook and owns
    ``acc_var``, W's gradient sum so far: adds W's gradient from
    EmbedIDFunction ``func``'s stock ``backward`` into it, as the caller's
    in-place sum of the two would (``embed_id_grad_into``), and returns
    True; or False, with nothing done, where ``run_backward`` must be
    taken."""
    entry = _audited.get(type(func))
    if (entry is None or (<tuple>entry)[0] != EMBED_ID or not callees_stock
            or not (<StockMethods>(<tuple>entry)[1]).found_by(func)
            or not _EMBED_ID_GRAD.on_class()):
        return False
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if gy is None:
        return False
    arrays = _retained_inputs(func, [])
    if arrays is None or len(arrays) != 1:
        return False
    # Engine.reduce sums in place only where the sum's requires_grad stays
    # as it is; the gradient's is what _embed_id gives it.
    if (not acc_var._requires_grad
            and (_retained_inputs_require_grad(func)
                 or gy_var._requires_grad)):
        return False
    if not embed_id_grad_into((<list>acc_var._data)[0], func._w_shape,
                              func.ignore_label, arrays[0], gy):
        return False
    _stats_backward.fast += 1
    return True


cdef object _concat(object func, tuple grad_outputs):
    # Concat.backward: F.split_axis(gy, sizes, axis), sizes the cumulative
    # input sizes along axis (a NumPy integer array): a SplitAxis node whose
    # type check passes (checked below) and whose forward, numpy.split,
    # returns the views of gy between [0] + list(sizes) + [n]. The same
    # views are taken here, the offsets summed as Python integers.
    inputs = func.inputs
    if len(inputs) == 1:
        return grad_outputs
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    axis = func.axis
    if gy is None or type(axis) is not int:
        return NOT_COMPILED
    cdef Py_ssize_t ndim = gy.ndim
    cdef Py_ssize_t ax = axis
    cdef Py_ssize_t i, n_in = len(inputs)
    cdef list points = [0]
    total = 0
    for i in range(n_in - 1):
        total = total + inputs[i].shape[ax]
        points.append(total)
    # SplitAxis's check: gy.ndim > axis, gy.shape[axis] >= sizes[-1].
    if not ndim > ax:
        return NOT_COMPILED
    if ax < 0:
        ax += ndim
        if ax < 0:
            return NOT_COMPILED
    n = gy.shape[ax]
    if not n >= total:
        return NOT_COMPILED
    points.append(n)
    cdef tuple lead = (slice(None),) * ax
    cdef bint rg = gy_var._requires_grad
    cdef list ret = []
    for i in range(n_in):
        view = gy[lead + (slice(points[i], points[i + 1]),)]
        ret.append(new_variable(view, rg, None, 0))
    return tuple(ret)


cdef object _get_item(object func, tuple grad_outputs):
    # GetItem.backward: GetItemGrad(slices, x.shape).apply((gy,)).
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if gy is None:
        return NOT_COMPILED
    return apply_detached(
        get_item.GetItemGrad(func.slices, func.inputs[0].shape), (gy,),
        gy_var._requires_grad)


cdef object _broadcast_shape(tuple a, tuple b):
    """NumPy's broadcast of shapes ``a`` and ``b``, or None where they do
    not broadcast."""
    cdef Py_ssize_t na = len(a), nb = len(b), n = max(na, nb), i
    cdef list out = [None] * n
    for i in range(1, n + 1):
        da = a[na - i] if i <= na else 1
        db = b[nb - i] if i <= nb else 1
        if da == db or db == 1:
            out[n - i] = da
        elif da == 1:
            out[n - i] = db
        else:
            return None
    return tuple(out)


cdef object _mul(object func, tuple indexes, tuple grad_outputs):
    # Mul.backward: F.sum_to(gy * x[1 - i], x[i].shape), where the product
    # is a Mul node (its type check passes for one float dtype and shapes
    # that broadcast) and sum_to the identity (the product already has
    # x[i]'s shape).
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if gy is None or func._input_indexes_to_retain != (0, 1):
        return NOT_COMPILED
    xs = _retained_inputs(func, [])
    if xs is None:
        return NOT_COMPILED
    dtype = gy.dtype
    shape = gy.shape
    if dtype.kind != 'f':
        return NOT_COMPILED
    for a in xs:
        if a.dtype != dtype:
            return NOT_COMPILED
    for i in indexes:
        if _broadcast_shape(shape, xs[1 - i].shape) != xs[i].shape:
            return NOT_COMPILED
    inputs = func.inputs
    cdef bint gy_rg = gy_var._requires_grad
    return tuple([
        new_variable(_utils.force_array(gy * xs[1 - i]),
                     gy_rg or _requires_grad_of(inputs[1 - i]), None, 0)
        for i in indexes])


cdef object _split_axis(object func, tuple grad_outputs):
    # SplitAxis.backward: F.concat of the gradients, zeros for missing ones.
    dtype = func.inputs[0].dtype
    arrays = []
    cdef bint rg = False
    for gy_var, shape in zip(grad_outputs, func._shapes):
        if gy_var is None:
            arrays.append(func._xp.zeros(shape, dtype=dtype))
            continue
        gy = _grad_array(gy_var)
        if gy is None:
            return NOT_COMPILED
        arrays.append(gy)
        if gy_var._requires_grad:
            rg = True
    return (apply_detached(concat.Concat(func.axis), tuple(arrays), rg)[0],)


cdef object _mul_constant(object func, tuple grad_outputs):
    # MulConstant.backward: ``value * gy``, a MulConstant node (its type
    # check only names the input) computing value (in gy's dtype) * gy.
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    value = func.value
    if gy is None or (type(value) is not float and type(value) is not int):
        return NOT_COMPILED
    return (new_variable(_utils.force_array(gy.dtype.type(value) * gy),
                         gy_var._requires_grad, None, 0),)


cdef object _neg(tuple grad_outputs):
    # Neg.backward and SubFromConstant.backward: ``-gy``, a Neg node (its
    # type check only names the input).
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if gy is None:
        return NOT_COMPILED
    return (new_variable(_utils.force_array(-gy), gy_var._requires_grad,
                         None, 0),)


cdef object _squared_error(object func, tuple grad_outputs):
    # SquaredError.backward: gx = gy * 2 * (x0 - x1); (gx, -gx). Each
    # operator applies one node: MulConstant (value 2 in gy's dtype), Sub
    # and Mul (their type checks pass for one float dtype and one shape),
    # Neg; each forward is one NumPy operation through force_array.
    gy_var = grad_outputs[0]
    gy = _grad_array(gy_var)
    if gy is None or func._input_indexes_to_retain != (0, 1):
        return NOT_COMPILED
    xs = _retained_inputs(func, [])
    if xs is None:
        return NOT_COMPILED
    x0, x1 = xs
    dtype = gy.dtype
    shape = gy.shape
    if dtype.kind != 'f':
        return NOT_COMPILED
    for a in xs:
        if a.dtype != dtype or a.shape != shape:
            return NOT_COMPILED
    inputs = func.inputs
    cdef bint rg = (gy_var._requires_grad or _requires_grad_of(inputs[0])
                    or _requires_grad_of(inputs[1]))
    g2 = _utils.force_array(dtype.type(2) * gy)
    diff = _utils.force_array(x0 - x1)
    gx = _utils.force_array(g2 * diff)
    return (new_variable(gx, rg, None, 0),
            new_variable(_utils.force_array(-gx), rg, None, 0))
