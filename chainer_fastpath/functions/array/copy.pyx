# cython: boundscheck=True, wraparound=True
"""Compiled ``Copy`` from the CPU to the CPU: NumPy's device sends an
ndarray as it is, so the output is the input's array and the gradient the
output gradient's. Any other device, or a device whose ``send`` or
``send_array`` is not stock's, is stock's."""
from chainer import _backend
from chainer.backends import _cpu
from chainer.functions.array import copy

from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)

cdef type _CpuDevice = _cpu.CpuDevice
cdef StockMethods _sends = StockMethods(_CpuDevice, ('send', 'send_array'))


cdef bint _sent_as_is(object device) except -1:
    """Whether ``device.send(a)`` returns an ndarray ``a`` itself: a
    CpuDevice whose methods are stock's."""
    return type(device) is _CpuDevice and _sends.found_by(device)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Copy.forward: out_device.send(x), on a CpuDevice _array_to_cpu(x),
    # which returns an ndarray as it is.
    if len(inputs) != 1 or not _sent_as_is(node.out_device):
        return NOT_HANDLED
    return inputs


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Copy.backward: Copy(out_device, in_device).apply((gy,)), whose type
    # check only names its input and whose forward sends gy back to the
    # input's device: gy's array itself on the CPU.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if (gy is None or not _sent_as_is(func._in_device)
            or not _sent_as_is(func.out_device)):
        return NOT_HANDLED
    return (new_grad(gy, grad_requires_grad(gy_var)),)


ENTRIES = (
    forward_callees(compiled(
        copy.Copy, _forward, ('forward',),
        _backward, backward_callees=(
            (copy.Copy, '__init__'),
            (copy.Copy, 'check_type_forward'),
            (copy.Copy, 'forward'),
            (_CpuDevice, 'send'),
            (_CpuDevice, 'send_array'),
            (_backend, '_convert_arrays'),
            (_cpu, '_array_to_cpu')),
        type_check=()), (
            (_backend, '_convert_arrays'),
            (_cpu, '_array_to_cpu'))),
)
