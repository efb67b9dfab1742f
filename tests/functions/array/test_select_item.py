"""F.select_item (``SelectItem``), stock vs patched."""
import pickle

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


def _items(dtype):
    # An argmax's indices, booleans, complex numbers: items of every kind
    # of number.
    return numpy.arange(-6, 6).reshape(3, 4).astype(dtype)


def _unpickled(a):
    return pickle.loads(pickle.dumps(a))


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'select': lambda: (F.select_item, [_v(3, 4), _t(0, 3, 1)]),
    'int64_labels': lambda: (F.select_item,
                             [_v(2, 4), _t(2, 2, dtype=numpy.int64)]),
    'negative_labels': lambda: (F.select_item, [_v(3, 4), _t(-1, -4, 2)]),
    'strided_labels': lambda: (F.select_item, [
        _v(3, 4, dtype=numpy.float64),
        _t(0, 9, 3, 9, 1, 9, dtype=numpy.int64)[::2]]),
    'transposed': lambda: (F.select_item,
                           [chainer.Variable(_v(4, 3).array.T), _t(3, 0, 1)]),
    'int8_labels': lambda: (F.select_item,
                            [_v(2, 3), _t(2, -1, dtype=numpy.int8)]),
    'float16': lambda: (F.select_item,
                        [_v(3, 2, dtype=numpy.float16), _t(1, 0, 1)]),
    'unpickled': lambda: (F.select_item, [
        chainer.Variable(_unpickled(_v(3, 4).array)),
        _unpickled(_t(0, 3, 1))]),
}


# Items that are no gradient's: an argmax's indices (as CRF1d's Viterbi
# path picks them), booleans, complex numbers, a byte order of their own.
ITEM_CASES = {
    'int64_items': lambda: (F.select_item,
                            [_items(numpy.int64), _t(3, -1, 0)]),
    'int32_items': lambda: (F.select_item,
                            [_items(numpy.int32), _t(1, 2, -4)]),
    'bool_items': lambda: (F.select_item, [_items(bool), _t(0, 1, 3)]),
    'complex_items': lambda: (F.select_item,
                              [_items(numpy.complex128), _t(2, 0, 1)]),
    'unpickled_int64_items': lambda: (F.select_item, [
        _unpickled(_items(numpy.int64)), _t(3, 2, 1, dtype=numpy.int64)]),
    'big_endian_items': lambda: (F.select_item,
                                 [_items('>i8'), _t(0, 3, 1)]),
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
    'negative_labels': lambda d: applied(
        lambda x: F.select_item(x, _t(-1, 0, -3, dtype=numpy.int64)),
        _v(3, 3, dtype=d)),
    'transposed': lambda d: applied(
        lambda x: F.select_item(F.transpose(x), _t(3, 0, 1)),
        _v(4, 3, dtype=d)),
    'unpickled': lambda d: applied(
        lambda x: F.select_item(x, _unpickled(_t(2, 0, 2))),
        chainer.Variable(_unpickled(_v(3, 3, dtype=d).array))),
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


@pytest.mark.parametrize('gy_dtype', [numpy.float32, numpy.float64])
def test_gradient_of_another_dtype_same_as_stock(gy_dtype):
    # The items are assigned as NumPy casts them.
    def fn():
        x = _v(3, 2)
        y = F.select_item(x, _t(1, 0, 1))
        y._set_grad_var_without_check(chainer.Variable(
            numpy.array([0.1, -2.5, 1e-45], gy_dtype)))
        y.backward()
        return x.grad
    check_same(fn)


def test_nan_bits_copied_as_stock():
    # A signaling NaN and a payload are copied, not computed on.
    def fn():
        x = numpy.array([[1, 0x7fa00001], [0xffc00002, 3]],
                        numpy.uint32).view(numpy.float32)
        with chainer.no_backprop_mode():
            return F.select_item(x, _t(1, 0)).array.view(numpy.uint32)
    assert check_same(fn)[0].tolist() == [0x7fa00001, 0xffc00002]


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('case', sorted(ITEM_CASES))
def test_items_of_every_kind_same_as_stock(case, type_check):
    def fn():
        f, args = ITEM_CASES[case]()
        with chainer.using_config('type_check', type_check):
            y = f(*args)
        return y.array, y.requires_grad
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.int64])
def test_unpickled_dtype_kept_as_stock(dtype):
    # NumPy's indexing gives its result the input's own descr, equal to
    # the builtin one without being it.
    def fn():
        x = _unpickled(_items(dtype))
        with chainer.no_backprop_mode():
            y = F.select_item(x, _t(0, 3, 1)).array
        return y, y.dtype is x.dtype, y.dtype.isbuiltin
    assert check_same(fn)[0][1:] == (True, 0)
