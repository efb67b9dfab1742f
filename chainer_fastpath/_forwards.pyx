# cython: boundscheck=True, wraparound=True
"""Compiled ``forward`` of the most common FunctionNodes, for NumPy inputs.

Each one performs the NumPy calls of the stock ``forward`` it stands for, in
the same order with the same arguments, and sets the same node attributes,
so outputs are identical; what it skips is the Python around them (iDeep and
static-graph dispatch, which cannot apply on this path). It is used only while
the node's class is exactly the audited one and every method the stock
``forward`` would call, on the class and on the instance, is still stock's;
otherwise ``apply`` calls ``node.forward`` as usual.
"""
import numpy

from chainer_fastpath._config cimport ConfigView

import chainer
from chainer import function_node
from chainer.backends import intel64
from chainer.functions.activation import relu
from chainer.functions.connection import linear
from chainer.functions.math import basic_math

cdef type _ndarray = numpy.ndarray
cdef object _empty = numpy.empty
cdef object _dot = numpy.dot
cdef object _maximum = numpy.maximum
cdef object _ascontiguousarray = numpy.ascontiguousarray
cdef object _utils = chainer.utils

NOT_COMPILED = object()

cdef enum Kind:
    LINEAR = 1
    RELU = 2
    ADD = 3

cdef type _FunctionNode = function_node.FunctionNode


def _method(cls, name):
    return getattr(cls, name)


# class -> (kind, ((method name, the stock function it must still be), ...))
cdef dict _audited = {}


def _audit(cls, kind, names):
    _audited[cls] = (kind, tuple((n, _method(cls, n)) for n in names))


if not intel64.is_ideep_available():
    # With iDeep installed the stock forwards may take its branch: leave
    # them to stock.
    _audit(linear.LinearFunction, LINEAR,
           ('forward', 'static_linear_no_bias', 'static_add_bias',
            'retain_inputs'))
    _audit(relu.ReLU, RELU, ('forward', 'forward_cpu', 'retain_outputs'))
    _audit(basic_math.Add, ADD, ('forward',))


cdef bint methods_unchanged(object node, type cls, tuple methods):
    """Whether each ``(name, original)`` is still what ``node`` finds,
    neither replaced on its class nor set on the instance."""
    cdef dict own = node.__dict__
    for name, original in methods:
        if name in own or getattr(cls, name) is not original:
            return False
    return True


cdef object run_forward(object node, tuple in_data):
    """``node.forward(in_data)`` compiled, or NOT_COMPILED."""
    cdef type cls = type(node)
    entry = _audited.get(cls)
    if entry is None or not methods_unchanged(node, cls, (<tuple>entry)[1]):
        return NOT_COMPILED
    cdef int kind = (<tuple>entry)[0]
    if kind == LINEAR:
        return _linear(node, in_data)
    if kind == RELU:
        return _relu(node, in_data)
    if kind == ADD:
        return _add(node, in_data)
    return NOT_COMPILED


cdef tuple _linear(object node, tuple inputs):
    # LinearFunction.forward, iDeep unavailable, no static schedule.
    node._config_use_ideep = ConfigView.current().get('use_ideep')
    cdef object x, W, b = None
    if len(inputs) == 3:
        x, W, b = inputs
    else:
        x, W = inputs
    if (isinstance(x, _ndarray)
            and not (x.flags.c_contiguous or x.flags.f_contiguous)
            and 1 in x.shape):
        x = _ascontiguousarray(x)
    y = _empty((x.shape[0], W.shape[0]), dtype=x.dtype)
    if x.dtype == W.dtype:
        _dot(x, W.T, out=y)
    else:
        y[:] = x.dot(W.T).astype(x.dtype, copy=False)
    if len(inputs) == 3:
        y += b
    node._input_indexes_to_retain = (0, 1)
    return y,


cdef tuple _relu(object node, tuple inputs):
    # FunctionNode.forward -> ReLU.forward_cpu, iDeep unavailable.
    assert len(inputs) > 0
    x, = inputs
    y = _maximum(x, 0, dtype=x.dtype)
    node._output_indexes_to_retain = (0,)
    return _utils.force_array(y),


cdef tuple _add(object node, tuple x):
    return _utils.force_array(x[0] + x[1]),
