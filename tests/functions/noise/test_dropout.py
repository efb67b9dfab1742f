"""F.dropout (``Dropout``, ``DropoutGrad``), stock vs patched: the same
masks from the same draws of NumPy's generator, in the same order."""
import warnings
from unittest import mock

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.noise import dropout

from chainer_fastpath.testing import (
    applied, applied_state, check_same, error_of, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests


def _not_training(a):
    with chainer.using_config('train', False):
        return F.dropout(a, 0.5)


def _mask_given(a):
    mask = (numpy.arange(a.size).reshape(a.shape) % 3 != 0).astype(a.dtype)
    return F.dropout(a, 0.5, mask=mask * 2)


def _return_mask(a):
    y, mask = F.dropout(a, 0.25, return_mask=True)
    return y, chainer.Variable(mask)


def _grad_node(a):
    mask = numpy.where(numpy.arange(a.size) % 2, 2, 0).astype(a.dtype)
    return dropout.DropoutGrad(mask.reshape(a.shape)).apply((a,))[0]


def _transposed(n, c, h, w, **kwargs):
    # (n, c, h, w) whose memory is ordered (n, h, w, c)
    a = _v(n, h, w, c, **kwargs).array
    return chainer.Variable(a.transpose(0, 3, 1, 2))


def _twice(a):
    # Two masks drawn one after the other: the generator's order.
    return F.dropout(a, 0.5), F.dropout(a, 0.3)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'dropout': lambda: (lambda a: F.dropout(a, 0.5), [_v(10, 10)]),
    'float64': lambda: (lambda a: F.dropout(a, 0.2),
                        [_v(4, 5, dtype=numpy.float64)]),
    'ratio_0': lambda: (lambda a: F.dropout(a, 0.0), [_v(4, 3)]),
    'ratio_near_1': lambda: (lambda a: F.dropout(a, 0.999), [_v(40, 3)]),
    'float16': lambda: (lambda a: F.dropout(a, 0.3),
                        [_v(4, 3, dtype=numpy.float16)]),
    'not_training': lambda: (_not_training, [_v(4, 3)]),
    'empty': lambda: (F.dropout, [_v(0, 3)]),
    'mask_given': lambda: (_mask_given, [_v(3, 4)]),
    'return_mask': lambda: (_return_mask, [_v(3, 4, 2)]),
    'twice': lambda: (_twice, [_v(5, 2)]),
    'grad_node': lambda: (_grad_node, [_v(3, 4)]),
    'strided': lambda: (lambda a: F.dropout(a, 0.5), [strided_variable(3, 4)]),
    'tiny': lambda: (lambda a: F.dropout(a, 0.5),
                     [_v(3, 3, low=1e-39, high=2e-39)]),
    # a convolution's output: channels last in memory
    'transposed': lambda: (lambda a: F.dropout(a, 0.5),
                           [_transposed(2, 4, 3, 5)]),
    'transposed_float64': lambda: (lambda a: F.dropout(a, 0.1), [
        _transposed(3, 2, 4, 2, dtype=numpy.float64)]),
    'transposed_axis_of_1': lambda: (lambda a: F.dropout(a, 0.5),
                                     [_transposed(2, 1, 3, 4)]),
    'reversed': lambda: (lambda a: F.dropout(a, 0.5),
                         [chainer.Variable(_v(4, 5).array[::-1])]),
    'transposed_tiny': lambda: (lambda a: F.dropout(a, 0.5), [
        _transposed(2, 3, 2, 2, low=1e-39, high=2e-39)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'dropout': lambda d: applied(lambda a: F.dropout(a, 0.4),
                                 _v(5, 6, dtype=d)),
    'grad_node': lambda d: applied(_grad_node, _v(2, 5, dtype=d)),
    'mask_given': lambda d: applied(_mask_given, _v(2, 3, dtype=d)),
    'transposed': lambda d: applied(lambda a: F.dropout(a, 0.4),
                                    _transposed(2, 3, 2, 4, dtype=d)),
}

globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['dropout', 'mask_given', 'grad_node'],
    compiled_backward=True,
    compiled_forward=dict(
        dict.fromkeys(['dropout', 'float64', 'ratio_0', 'ratio_near_1',
                       'mask_given', 'return_mask', 'twice', 'transposed',
                       'transposed_float64'],
                      dropout.Dropout.forward_cpu),
        grad_node=dropout.DropoutGrad.forward)))


@pytest.mark.parametrize('values', [
    (numpy.inf, 1), (-numpy.inf, 0.5), (numpy.nan, 0.5), (3e38, 3.3e38),
    (1e-39, 2e-39), (1e-45, 1e-45)])
def test_elements_that_could_raise_are_drawn_as_stock(values):
    # Left to stock before any draw: the generator is where stock leaves it.
    def fn():
        x = _v(4, 4)
        x.array[1, 1:3] = values
        with numpy.errstate(all='ignore'):
            y = F.dropout(x, 0.5)
        return y.array, numpy.random.rand(3)
    check_same(fn)


def test_generator_left_as_stock_leaves_it():
    def fn():
        F.dropout(_v(6, 7), 0.5)
        F.dropout(_v(2, 2, dtype=numpy.float64), 0.1)
        return numpy.random.get_state()[1]
    check_same(fn)


def test_replaced_rand_is_called():
    calls = []

    def rand(*shape):
        calls.append(shape)
        return numpy.full(shape, 0.75)

    def fn():
        del calls[:]
        with mock.patch('numpy.random.rand', rand):
            y = F.dropout(_v(2, 3), 0.5)
        return y.array, list(calls)
    stock, patched = check_same(fn)
    assert stock[1] == [(2, 3)]


@pytest.mark.parametrize('method', ['forward', 'forward_cpu'])
def test_replaced_forward_method_is_called(method):
    original = getattr(dropout.Dropout, method)
    calls = []

    def spy(self, *args):
        calls.append(method)
        return original(self, *args)

    def fn():
        del calls[:]
        with mock.patch.object(dropout.Dropout, method, spy):
            y = F.dropout(_v(2, 3), 0.5)
        return y.array, list(calls)
    stock, _ = check_same(fn)
    assert stock[1] == [method]


@pytest.mark.parametrize('setting', ['raise', 'warn'])
def test_errstate_on_products_is_stocks(setting):
    # inf * 0 where the mask drops an inf, and overflow where it keeps a
    # huge value: NumPy acts on them in stock's expression.
    def fn():
        x = _v(4, 4)
        x.array[0, :] = numpy.inf
        x.array[1, :] = 3e38
        with numpy.errstate(all=setting), warnings.catch_warnings(
                record=True) as w:
            warnings.simplefilter('always')
            error = error_of(lambda: F.dropout(x, 0.5))
        return error, [(str(x.message), x.filename, x.lineno) for x in w]
    check_same(fn)


@pytest.mark.parametrize('ratio', [1.0, numpy.float32(0.5), 0, 'half'])
def test_ratios_set_after_construction_as_stock(ratio):
    def fn():
        node = dropout.Dropout(0.5)
        node.dropout_ratio = ratio
        return applied_state(node, (_v(2, 2),)), numpy.random.rand(2)
    check_same(fn)


def test_ratio_whose_arithmetic_runs_code_runs_it_once():
    calls = []

    class Ratio(float):
        def __rsub__(self, other):
            calls.append(other)
            return float(other) - float(self)

    def fn():
        del calls[:]
        y = F.dropout(_v(3, 2), Ratio(0.25))
        return y.array, list(calls)
    stock, _ = check_same(fn)
    assert stock[1] == [1]


def test_subclass_runs_its_own_forward():
    class Mine(dropout.Dropout):
        def forward_cpu(self, x):
            return x[0] * 3,

    def fn():
        return Mine(0.5).apply((_v(2, 2),))[0].array
    check_same(fn)


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(dropout.Dropout, lambda: F.dropout(x))
