"""F.copy (``Copy``) from the CPU to the CPU, stock vs patched."""
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer import _backend
from chainer.backends import _cpu
from chainer.functions.array import copy

from chainer_fastpath.testing import (
    applied, check_same, gradients, grad_vars,
    special_variable as _specials, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _copy(dst):
    return lambda x: F.copy(x, dst)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'copy': lambda: (_copy(-1), [_v(3, 4)]),
    'numpy_device': lambda: (_copy('@numpy'), [_v(3, dtype=numpy.float16)]),
    'device_object': lambda: (_copy(chainer.get_device('@numpy')), [
        _v(2, 3, dtype=numpy.float64)]),
    'array': lambda: (lambda a: F.copy(a.array, -1), [_v(3)]),
    'specials': lambda: (_copy(-1), [_specials((5, 7))]),
    '0d': lambda: (_copy(-1), [_v()]),
    'empty': lambda: (_copy(-1), [_v(0, 3)]),
    'strided': lambda: (_copy(-1), [strided_variable(2, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'copy': lambda d: applied(_copy(-1), _v(3, 4, dtype=d)),
    '0d': lambda d: applied(_copy('@numpy'), _v(dtype=d)),
    'chained': lambda d: applied(lambda a: F.copy(_copy(-1)(a) * 2.0, -1),
                                 _v(3, dtype=d)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['copy', 'chained'],
    compiled_forward=dict.fromkeys(APPLY_CASES, _cpu._array_to_cpu)))


def test_output_and_gradient_hold_the_same_arrays_as_stock():
    def fn():
        x = _v(3)
        y = F.copy(x, -1)
        gy = numpy.ones(3, numpy.float32)
        y.grad = gy
        y.backward()
        return y.array is x.array, x.grad is gy, grad_vars(x)
    check_same(fn)


def test_integer_input_same_as_stock():
    def fn():
        y = F.copy(numpy.arange(3), -1)
        return y.array, y.requires_grad
    check_same(fn)


class _Device(_cpu.CpuDevice):
    pass


@pytest.mark.parametrize('make', [
    lambda: copy.Copy(_Device(), _Device()),
    lambda: copy.Copy(_cpu.CpuDevice(), _Device()),
    lambda: copy.Copy(_Device(), _cpu.CpuDevice()),
], ids=['both', 'out', 'in'])
def test_other_devices_are_stocks(make, patched_stats):
    def fn():
        x = _v(3)
        y, = make().apply((x,))
        y.grad = numpy.ones(3, numpy.float32)
        y.backward()
        return y.array, grad_vars(x)
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {'case left to stock: Copy': 1}


@pytest.mark.parametrize('owner,name', [
    (_cpu.CpuDevice, 'send'), (_cpu.CpuDevice, 'send_array'),
    (_backend, '_convert_arrays'), (_cpu, '_array_to_cpu'),
    (copy.Copy, 'forward'), (copy.Copy, '__init__')])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['copy'], numpy.float32))


def test_send_replaced_on_the_instance_is_called():
    def fn():
        device = _cpu.CpuDevice()
        calls = []
        device.send = lambda a: calls.append(a) or a * 2
        y, = copy.Copy(device, device).apply((_v(3),))
        return y.array, len(calls)
    stock, patched = check_same(fn)
    assert stock[1] == 1


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(3, 4)
    type_check_is_cached(copy.Copy, lambda: F.copy(x, -1))


def test_mock_spy_of_send_array_sees_the_array():
    # A spy with the original as side effect is called with the input's
    # array, stock and patched.
    def fn():
        x = _v(3)
        with mock.patch.object(_cpu.CpuDevice, 'send_array', autospec=True,
                               side_effect=_cpu.CpuDevice.send_array) as m:
            F.copy(x, -1)
        return [c.args[1] is x.array for c in m.call_args_list]
    check_same(fn)
