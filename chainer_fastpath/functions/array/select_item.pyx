# cython: boundscheck=True, wraparound=True
"""Compiled ``SelectItem``: forward and backward on NumPy arrays."""
import numpy

from chainer.functions.array import select_item

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport retained_inputs

cdef object _zeros = numpy.zeros


cdef object _forward(object node, tuple inputs, ConfigView config):
    # SelectItem.forward on NumPy arrays; debug mode's label check is left
    # to stock.
    if len(inputs) != 2 or config.get('debug'):
        return NOT_HANDLED
    retain_inputs(node, (1,))
    x, t = inputs
    node._in_shape = x.shape
    node._in_dtype = x.dtype
    return x[range(t.size), t],


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # SelectItem.backward: Assign(x.shape, x.dtype, t).apply(gy) for x (a
    # node without a type check whose forward_cpu scatters gy into zeros),
    # None for t.
    gy_var = grad_outputs[0]
    if func._input_indexes_to_retain != (1,):
        return NOT_HANDLED
    ts = retained_inputs(func, [])
    if ts is None:
        return NOT_HANDLED
    cdef list ret = []
    if 0 in indexes:
        gy = grad_array(gy_var)
        t = ts[0]
        if gy is None or gy.shape != t.shape:
            return NOT_HANDLED
        gx = _zeros(func._in_shape, func._in_dtype)
        gx[range(t.size), t] = gy
        ret.append(new_grad(gx, grad_requires_grad(gy_var)))
    if 1 in indexes:
        ret.append(None)
    return tuple(ret)


ENTRIES = (
    compiled(select_item.SelectItem, _forward, ('forward', 'retain_inputs'),
             _backward, backward_callees=(
                 (select_item.Assign, '__init__'),
                 (select_item.Assign, 'check_type_forward'),
                 (select_item.Assign, 'forward'),
                 (select_item.Assign, 'forward_cpu')),
             type_check=()),
)
