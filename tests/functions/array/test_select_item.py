"""F.select_item (``SelectItem``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import select_item

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, gradients, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _t(*values, dtype=numpy.int32):
    return numpy.array(values, dtype)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'select': lambda: (F.select_item, [_v(3, 4), _t(0, 3, 1)]),
    'int64_labels': lambda: (F.select_item,
                             [_v(2, 4), _t(2, 2, dtype=numpy.int64)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'select': lambda d: applied(lambda x: F.select_item(x, _t(0, 3, 1)),
                                _v(3, 4, dtype=d)),
    'strided': lambda d: applied(lambda x: F.select_item(x, _t(2, 0)),
                                 strided_variable(2, 3, dtype=d)),
    'empty': lambda d: applied(
        lambda x: F.select_item(x, _t(dtype=numpy.int32)),
        _v(0, 3, dtype=d)),
    'label_variable': lambda d: applied(
        lambda x: F.select_item(x, chainer.Variable(_t(1, 1))),
        _v(2, 2, dtype=d)),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['select']))


def test_forward_is_compiled(compiled_instead):
    x, t = _v(3, 4), _t(0, 1, 2)
    compiled_instead(lambda: F.select_item(x, t),
                     select_item.SelectItem.forward)


def test_debug_mode_is_stocks():
    def fn():
        with chainer.using_config('debug', True):
            return F.select_item(_v(2, 3), _t(0, 3))
    assert check_error_same(fn)[0] == 'ValueError'


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('x,t', [
    ((2, 3), _t(0, 3)),
    ((2, 3), _t(0, 1, 2)),
    ((2, 3), _t(0.0, 1.0, dtype=numpy.float32)),
    ((6,), _t(0, 1)),
], ids=['label_out_of_range', 'batch', 'float_labels', 'ndim'])
def test_bad_input_same_error_as_stock(x, t, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            y = F.select_item(_v(*x), t)
            y.grad = numpy.ones_like(y.array)
            y.backward()
    check_error_same(fn)


def test_gradient_of_another_shape_same_as_stock(patched_stats):
    def fn():
        x = _v(2, 3)
        y = F.select_item(x, _t(0, 1))
        y._set_grad_var_without_check(chainer.Variable(
            numpy.ones((1,), numpy.float32)))
        y.backward()
        return x.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: SelectItem': 1}


def test_passed_type_check_is_cached(type_check_is_cached):
    x, t = _v(3, 4), _t(0, 1, 2)
    type_check_is_cached(select_item.SelectItem,
                         lambda: F.select_item(x, t))


@pytest.mark.parametrize('owner,name', [
    (select_item.SelectItem, 'forward'),
    (select_item.SelectItem, 'retain_inputs'),
    (select_item.Assign, 'forward_cpu'),
    (select_item.Assign, 'forward'),
])
def test_mocked_callee_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['select'], numpy.float32))
