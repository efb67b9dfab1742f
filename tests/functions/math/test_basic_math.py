"""The arithmetic nodes of ``basic_math`` (Add, AddConstant, Sub,
SubFromConstant, Mul, MulConstant, Div, DivFromConstant, Neg, PowVarConst,
PowConstVar), stock vs patched."""
import operator

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import basic_math
from chainer.functions.math import sum as sum_mod

import chainer_fastpath
from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of, gradients,
    strided_variable, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests
from chainer_fastpath.testing.differential import outputs

f16 = numpy.float16


def _specials(n, dtype=numpy.float32):
    """A Variable of NaNs with payloads, infinities, signed zeros,
    subnormals, negative and huge numbers."""
    finfo = numpy.finfo(dtype)
    pool = numpy.array([numpy.nan, -numpy.nan, numpy.inf, -numpy.inf, 0.0,
                        -0.0, finfo.tiny / 2, -1.5, 0.5, 2.0, finfo.max,
                        -finfo.max], dtype)
    values = numpy.resize(pool, n)
    uint = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}[
        values.itemsize]
    nan = numpy.isnan(values)
    values.view(uint)[nan] ^= numpy.arange(1, nan.sum() + 1).astype(uint)
    return chainer.Variable(values)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'add': lambda: (lambda a, b: a + b, [_v(3, 4), _v(3, 4)]),
    'add_broadcast': lambda: (F.add, [_v(3, 4), _v(3, 4)]),
    'add_array': lambda: (lambda a, b: a + b, [_v(3, 4), _v(3, 4).array]),
    'radd_const': lambda: (lambda a: 2.5 + a, [_v(3)]),
    'sub': lambda: (lambda a, b: a - b, [_v(2, 3), _v(2, 3)]),
    'mul': lambda: (lambda a, b: a * b, [_v(2, 3), _v(2, 3)]),
    'div': lambda: (lambda a, b: a / b, [_v(2, 3), _v(2, 3, low=1, high=2)]),
    'neg_pow': lambda: (lambda a: (-a) ** 2, [_v(5)]),
    'neg': lambda: (lambda a: -a, [_v(3, 4)]),
    'neg_float16_0d': lambda: (lambda a: -a, [_v(dtype=f16)]),
    'abs': lambda: (abs, [_v(3, 4)]),
    'absolute_float16_0d': lambda: (F.absolute, [_v(dtype=f16)]),
    'absolute_transposed': lambda: (F.absolute, [
        chainer.Variable(_v(3, 4).array.T)]),
    'div_broadcast_forward': lambda: (lambda a, b: a / b, [
        _v(3, 4), _v(4, low=1, high=2)]),
    'div_float16': lambda: (lambda a, b: a / b, [
        _v(7, dtype=f16), _v(7, low=1, high=2, dtype=f16)]),
    'div_0d': lambda: (lambda a, b: a / b, [_v(), _v(low=1, high=2)]),
    'div_transposed': lambda: (lambda a, b: a / b, [
        chainer.Variable(_v(3, 4).array.T), _v(4, 3, low=1, high=2)]),
    'div_array': lambda: (lambda a, b: a / b.array, [
        _v(2, 3), _v(2, 3, low=1, high=2)]),
    'rdiv': lambda: (lambda a: 2 / a, [_v(3, 4, low=1, high=2)]),
    'rdiv_float16': lambda: (lambda a: 0.1 / a, [
        _v(5, low=1, high=2, dtype=f16)]),
    'rdiv_numpy_scalar': lambda: (lambda a: numpy.float64(3) / a, [
        _v(5, low=1, high=2)]),
    'rdiv_0d': lambda: (lambda a: 3.5 / a, [_v(low=1, high=2)]),
    'pow_2': lambda: (lambda a: a ** 2, [_v(3, 4)]),
    'pow_half': lambda: (lambda a: a ** 0.5, [_v(3, 4, low=0, high=2)]),
    'pow_minus_one': lambda: (lambda a: a ** -1, [_v(6, low=1, high=2)]),
    'pow_one': lambda: (lambda a: a ** 1, [_v(6)]),
    'pow_zero': lambda: (lambda a: a ** 0.0, [_v(6)]),
    'pow_odd': lambda: (lambda a: a ** 1.7, [_v(6, low=0, high=2)]),
    'pow_float16': lambda: (lambda a: a ** 3, [_v(6, dtype=f16)]),
    'pow_0d': lambda: (lambda a: a ** 2.5, [_v(low=0, high=2)]),
    'rpow': lambda: (lambda a: 2.0 ** a, [_v(3, 4)]),
    'rpow_float16': lambda: (lambda a: 3 ** a, [_v(6, dtype=f16)]),
    'multi_add': lambda: (lambda a, b, c: F.add(a, b, c),
                          [_v(2), _v(2), _v(2)]),
    'mul_mask': lambda: (lambda a, b: a * (b.array > 0).astype(
        numpy.float32)[:, :1], [_v(3, 4), _v(3, 4)]),
    'mul_array_cast': lambda: (lambda a, b: a * b.array.astype(
        numpy.float64), [_v(3, 4), _v(3, 4)]),
    'rsub_int': lambda: (lambda a: 1 - a, [_v(3, 4)]),
    'rsub_float16': lambda: (lambda a: 0.5 - a,
                             [_v(3, dtype=numpy.float16)]),
    # Views: broadcast by F.broadcast (CRF1d's alpha against its cost
    # matrix), a column window, NaNs among broadcast items.
    'add_broadcast_views': lambda: (
        lambda a, b: F.add(*F.broadcast(a[..., None], b)),
        [_v(3, 5), _v(5, 5)]),
    'mul_window': lambda: (lambda a, b: a[:, :3] * b, [_v(4, 5), _v(4, 3)]),
    'sub_broadcast_nans': lambda: (
        lambda a, b: operator.sub(*F.broadcast(a, b)),
        [chainer.Variable(numpy.array([[numpy.nan], [1.0]], numpy.float32)),
         chainer.Variable(numpy.array([-numpy.nan, 2.0, numpy.inf],
                                      numpy.float32))]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'add': lambda d: applied(lambda a, b: a + b, _v(3, 4, dtype=d),
                             _v(3, 4, dtype=d)),
    'add_broadcast': lambda d: applied(F.add, _v(3, 4, dtype=d),
                                       _v(1, 4, dtype=d)),
    'add_same_input': lambda d: applied(lambda a: a + a, _v(2, 2, dtype=d)),
    'add_constant': lambda d: applied(lambda a: a + 1, _v(2, 3, dtype=d)),
    'mul': lambda d: applied(lambda a, b: a * b, _v(3, 4, dtype=d),
                             _v(3, 4, dtype=d)),
    'mul_square': lambda d: applied(lambda a: a * a, _v(3, 4, dtype=d)),
    'mul_const_input': lambda d: applied(
        lambda a, b: a * b, _v(3, 4, dtype=d),
        _v(3, 4, dtype=d, requires_grad=False)),
    'mul_broadcast': lambda d: applied(lambda a, b: a * b, _v(3, 4, dtype=d),
                                       _v(1, 4, dtype=d)),
    # A mask: the product already has the Variable's shape, so sum_to is
    # the identity and the compiled case applies.
    'mul_broadcast_array': lambda d: applied(
        lambda a: a * numpy.array([[1], [0], [1]], d), _v(3, 4, dtype=d)),
    'mul_broadcast_rhs_row': lambda d: applied(
        lambda a, b: a * b, _v(3, 4, dtype=d),
        _v(4, dtype=d, requires_grad=False)),
    'mul_constant': lambda d: applied(lambda a: a * 0.5, _v(3, 4, dtype=d)),
    'mul_constant_int': lambda d: applied(lambda a: 3 * a,
                                          _v(3, 4, dtype=d)),
    'neg': lambda d: applied(lambda a: -a, _v(3, 4, dtype=d)),
    'abs': lambda d: applied(abs, _v(3, 4, dtype=d)),
    'absolute_0d': lambda d: applied(F.absolute, _v(dtype=d)),
    'absolute_empty': lambda d: applied(F.absolute, _v(0, 2, dtype=d)),
    'sub_from_constant': lambda d: applied(lambda a: 1 - a,
                                           _v(3, 4, dtype=d)),
    'sub': lambda d: applied(lambda a, b: a - b, _v(3, 4, dtype=d),
                             _v(3, 4, dtype=d)),
    'sub_broadcast': lambda d: applied(lambda a, b: a - b,
                                       _v(2, 1, 4, dtype=d),
                                       _v(3, 1, dtype=d)),
    'sub_lhs_only': lambda d: applied(
        lambda a, b: a - b, _v(3, 4, dtype=d),
        _v(4, dtype=d, requires_grad=False)),
    'sub_rhs_only': lambda d: applied(
        lambda a, b: a - b, _v(3, 4, dtype=d, requires_grad=False),
        _v(1, 4, dtype=d)),
    'sub_strided': lambda d: applied(lambda a, b: a - b,
                                     strided_variable(3, 2, dtype=d),
                                     _v(3, 2, dtype=d)),
    'sub_empty': lambda d: applied(lambda a, b: a - b, _v(0, 2, dtype=d),
                                   _v(2, dtype=d)),
    'sub_0d': lambda d: applied(lambda a, b: a - b, _v(dtype=d),
                                _v(3, dtype=d)),
    'add_broadcast_lead': lambda d: applied(F.add, _v(2, 3, 4, dtype=d),
                                            _v(4, dtype=d)),
    'mul_broadcast_both': lambda d: applied(lambda a, b: a * b,
                                            _v(3, 1, dtype=d),
                                            _v(1, 4, dtype=d)),
    'div': lambda d: applied(lambda a, b: a / b, _v(3, 4, dtype=d),
                             _v(3, 4, low=1, high=2, dtype=d)),
    'div_broadcast': lambda d: applied(
        lambda a, b: a / b, _v(3, 4, dtype=d),
        _v(4, low=1, high=2, dtype=d)),
    'div_constant_rhs': lambda d: applied(
        lambda a, b: a / b, _v(2, 3, dtype=d),
        _v(2, 3, low=1, high=2, dtype=d, requires_grad=False)),
    'div_strided': lambda d: applied(
        lambda a, b: a / b, strided_variable(2, 3, dtype=d),
        _v(1, 3, low=1, high=2, dtype=d)),
    'div_empty': lambda d: applied(lambda a, b: a / b, _v(0, 3, dtype=d),
                                   _v(3, low=1, high=2, dtype=d)),
    'pow': lambda d: applied(lambda a: a ** 2, _v(3, 4, dtype=d)),
    'pow_float': lambda d: applied(lambda a: a ** 1.5,
                                   _v(3, 4, low=0.5, high=2, dtype=d)),
    'pow_negative': lambda d: applied(lambda a: a ** -1,
                                      _v(3, low=0.5, high=2, dtype=d)),
    'pow_strided': lambda d: applied(lambda a: a ** 3,
                                     strided_variable(2, 3, dtype=d)),
    'pow_0d': lambda d: applied(lambda a: a ** 2, _v(dtype=d)),
    'neg_0d': lambda d: applied(lambda a: -a, _v(dtype=d)),
    'div_from_constant': lambda d: applied(
        lambda a: 2 / a, _v(3, 4, low=1, high=2, dtype=d)),
    'div_from_constant_float': lambda d: applied(
        lambda a: -0.3 / a, _v(5, low=0.5, high=2, dtype=d)),
    'div_from_constant_strided': lambda d: applied(
        lambda a: 1.5 / a, strided_variable(2, 3, dtype=d)),
    'div_from_constant_0d': lambda d: applied(
        lambda a: 3 / a, _v(low=1, high=2, dtype=d)),
    'div_from_constant_empty': lambda d: applied(
        lambda a: 3 / a, _v(0, 2, dtype=d)),
}


def _ones(*shape):
    return chainer.Variable(numpy.ones(shape, numpy.float32))


# name -> (a call whose type check passes, a call that stock rejects)
TYPE_CHECK_SEQUENCES = {
    'sub_from_constant_two_inputs': (
        lambda: 1 - _ones(3),
        lambda: basic_math.SubFromConstant(1).apply((_ones(3), _ones(3)))),
}


# apply case -> the stock forward its compiled one stands for.
COMPILED_FORWARDS = {
    'neg': basic_math.Neg.forward,
    'abs': basic_math.Absolute.forward,
    'div': basic_math.Div.forward,
    'div_float16': basic_math.Div.forward,
    'rdiv': basic_math.DivFromConstant.forward,
    'rdiv_float16': basic_math.DivFromConstant.forward,
    'pow_2': basic_math.PowVarConst.forward,
    'pow_float16': basic_math.PowVarConst.forward,
    'rpow': basic_math.PowConstVar.forward,
    'add': basic_math.Add.forward,
    'add_broadcast': basic_math.Add.forward,
    'add_array': basic_math.Add.forward,
    'radd_const': basic_math.AddConstant.forward,
    'sub': basic_math.Sub.forward,
    'mul': basic_math.Mul.forward,
    'mul_mask': basic_math.Mul.forward,
    'mul_array_cast': basic_math.Mul.forward,
    'rsub_int': basic_math.SubFromConstant.forward,
    'rsub_float16': basic_math.SubFromConstant.forward,
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['abs', 'sub', 'sub_broadcast', 'mul_broadcast',
                  'add_broadcast', 'div', 'div_broadcast', 'pow', 'pow_float',
                  'div_from_constant'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=COMPILED_FORWARDS))


# name -> builds (fn, args) whose outputs and gradients meet NaNs,
# infinities, zeros and overflow: compared with NumPy acting on nothing.
SPECIAL_CASES = {
    'neg': lambda: (lambda a: -a, [_specials(12, numpy.float64)]),
    'abs': lambda: (abs, [_specials(12)]),
    'div': lambda: (lambda a, b: a / b, [
        _specials(144), chainer.Variable(_specials(12).array.repeat(12))]),
    'div_float16': lambda: (lambda a, b: a / b, [
        _specials(144, f16), chainer.Variable(
            _specials(12, f16).array.repeat(12))]),
    'rdiv': lambda: (lambda a: 1.0 / a, [_specials(12)]),
    'rdiv_float16': lambda: (lambda a: 1.0 / a, [_specials(12, f16)]),
    'pow_half': lambda: (lambda a: a ** 0.5, [_specials(12)]),
    'pow_cube': lambda: (lambda a: a ** 3, [_specials(12, numpy.float64)]),
    'pow_odd_float16': lambda: (lambda a: a ** 1.5, [_specials(12, f16)]),
    'rpow': lambda: (lambda a: 0.5 ** a, [_specials(12)]),
    # Constant nodes: values whose conversion rounds, is exact, is -0.0.
    'add_const': lambda: (lambda a: a + 0.1, [_specials(12)]),
    'add_const_strided': lambda: (lambda a: a + 1e-3, [
        chainer.Variable(_specials(24).array[::2])]),
    'sub_const_float64': lambda: (lambda a: a - 2.75, [
        _specials(12, numpy.float64)]),
    'rsub_const': lambda: (lambda a: -0.0 - a, [_specials(12)]),
    'mul_const': lambda: (lambda a: a * -3, [_specials(12)]),
    'rmul_const_float64': lambda: (lambda a: 0.1 * a, [
        _specials(12, numpy.float64)]),
    'add_const_0d': lambda: (lambda a: a + 65504.0, [
        chainer.Variable(_specials(12).array[5:6].reshape(()))]),
}


@pytest.mark.parametrize('case', sorted(SPECIAL_CASES))
def test_special_values_same_as_stock(case):
    def fn():
        with numpy.errstate(all='ignore'):
            return outputs(SPECIAL_CASES[case], True)
    check_same(fn)


@pytest.mark.parametrize('case,forward', [
    ('div', basic_math.Div.forward),
    ('rdiv', basic_math.DivFromConstant.forward),
    ('pow_half', basic_math.PowVarConst.forward),
    ('rpow', basic_math.PowConstVar.forward),
    ('add_const', basic_math.AddConstant.forward),
    ('rsub_const', basic_math.SubFromConstant.forward),
    ('mul_const', basic_math.MulConstant.forward),
])
def test_special_values_ignored_are_compiled(case, forward,
                                             compiled_instead):
    fn, xs = SPECIAL_CASES[case]()

    def run():
        with numpy.errstate(all='ignore'):
            return fn(*xs)
    compiled_instead(run, forward)


def _mixed_dtypes_mul():
    with chainer.using_config('type_check', False):
        a, b = _v(2, 3), _v(2, 3, dtype=numpy.float64)
        y = a * b
    y.grad = numpy.ones((2, 3))
    y.backward()
    return a.grad, b.grad


def test_uncompiled_cases_are_counted(patched_stats):
    # Mul of two dtypes (type check off): its gradient nodes' checks fail.
    check_error_same(_mixed_dtypes_mul)
    assert patched_stats(lambda: error_of(_mixed_dtypes_mul))[
        'fallback'] == {'case left to stock: Mul': 1}


@pytest.mark.parametrize('owner,name', [
    (sum_mod.SumTo, 'forward'),
    (F, 'sum_to'),
    (chainer.utils, 'sum_to'),
    (basic_math.Neg, 'forward'),
])
def test_mocked_callee_of_sub_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['sub_broadcast'], numpy.float32))


def test_mocked_retain_inputs_of_mul_is_called(spy):
    calls = spy(basic_math.Mul, 'retain_inputs')
    with chainer_fastpath.enabled():
        _v(2) * _v(2)
    assert [indexes for _, indexes in calls] == [(0, 1)]


@pytest.mark.parametrize('cls,call', [
    (basic_math.Add, lambda x, y: x + y),
    (basic_math.AddConstant, lambda x, y: x + 1),
    (basic_math.Sub, lambda x, y: x - y),
    (basic_math.SubFromConstant, lambda x, y: 1 - x),
    (basic_math.Mul, lambda x, y: x * y),
    (basic_math.MulConstant, lambda x, y: x * 2),
    (basic_math.Div, lambda x, y: x / y),
    (basic_math.Neg, lambda x, y: -x),
    (basic_math.PowVarConst, lambda x, y: x ** 2),
    (basic_math.DivFromConstant, lambda x, y: 2 / x),
    (basic_math.PowConstVar, lambda x, y: 2 ** x),
], ids=lambda v: getattr(v, '__name__', ''))
def test_passed_type_check_is_cached(type_check_is_cached, cls, call):
    x, y = _v(2, 3), _v(2, 3)
    type_check_is_cached(cls, lambda: call(x, y))


@pytest.mark.parametrize('owner,name', [
    (basic_math.DivGrad, 'forward_cpu'),
    (basic_math.DivGrad, '__init__'),
    (chainer.utils, 'sum_to'),
])
def test_mocked_callee_of_div_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['div_broadcast'], numpy.float32))


@pytest.mark.parametrize('owner,name', [
    (basic_math.PowVarConstGrad, 'forward_cpu'),
    (basic_math.PowVarConstGrad, 'check_type_forward'),
    (basic_math, '_preprocess_const'),
    (chainer.utils, 'force_type'),
])
def test_mocked_callee_of_pow_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['pow'], numpy.float32))


def test_pow_of_a_numpy_scalar_exponent_is_left_to_stock(patched_stats):
    def fn():
        x = _v(3, low=0.5, high=2)
        y = x ** numpy.float64(2.5)
        y.grad = numpy.ones(3, numpy.float32)
        return error_of(y.backward), x.grad
    check_same(fn)
    assert patched_stats(fn)['fallback'] == {
        'case left to stock: PowVarConst': 1}


@pytest.mark.parametrize('rhs', [0.0, numpy.inf])
def test_div_by_zero_and_inf_same_as_stock(rhs):
    def fn():
        a = _v(2, 3)
        b = chainer.Variable(numpy.full((2, 3), rhs, numpy.float32))
        with numpy.errstate(all='ignore'):
            y = a / b
            y.grad = numpy.ones((2, 3), numpy.float32)
            y.backward()
        return y.array, a.grad, b.grad
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.uint8, numpy.int8, numpy.bool_])
@pytest.mark.parametrize('op', [
    lambda x: -1 / x, lambda x: x + 300, lambda x: 300 - x, lambda x: x * -1,
    lambda x: x ** 300, lambda x: -1 ** x])
@pytest.mark.parametrize('type_check', [True, False])
def test_constant_converted_to_an_integer_dtype_warns_once(
        dtype, op, type_check):
    # NumPy's DeprecationWarning for a Python int out of the dtype's range
    # comes once, from stock's helper (a fuzz finding: twice, patched).
    def run():
        x = chainer.Variable(numpy.zeros(3, dtype))
        with chainer.using_config('type_check', type_check):
            return warned(lambda: op(x).array)
    check_same(run)


@pytest.mark.parametrize('dtype', [numpy.int32, numpy.int64])
@pytest.mark.parametrize('value', [45, -3, 0, 2 ** 31 - 1, -(2 ** 31),
                                   2 ** 31, 2 ** 62, True, 2.5])
@pytest.mark.parametrize('shape', [(), (5,), (2, 3)])
def test_integer_times_a_constant_same_as_stock(dtype, value, shape,
                                                python_calls):
    # CRF1d's `y_prev * n_label` on label Variables: products wrap as
    # NumPy's do; a value outside the dtype's range (NumPy warns or
    # raises), a bool or a float is left to stock.
    def run():
        x = chainer.Variable(
            (numpy.arange(6)[:int(numpy.prod(shape))] * 12345678 - 9)
            .astype(dtype).reshape(shape))
        return warned(lambda: error_of(lambda: (x * value).array))
    check_same(run)
    compiled = type(value) is int and (
        dtype is numpy.int64 or -2 ** 31 <= value < 2 ** 31)
    with chainer_fastpath.enabled():
        stock_forwards = python_calls(run, basic_math.MulConstant.forward)
    assert stock_forwards == (0 if compiled else 1)
