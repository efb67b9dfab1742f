"""F.max, F.min, F.argmax and F.argmin (``Max``, ``Min``, ``ArgMax``,
``ArgMin``), stock vs patched: compiled forwards, and the backwards of
``Max`` and ``Min``."""
import warnings

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.math import minmax

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of,
    outputs, strided_variable, variable as _v, warned)
from chainer_fastpath.testing.cases import function_tests


def _fortran(*shape):
    return chainer.Variable(numpy.asfortranarray(_v(*shape).array))


def _byteswapped(*shape):
    return chainer.Variable(_v(*shape).array.astype('>f4'))


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {}
for _f in ('max', 'min'):
    for _name, _kwargs in (('all', {}), ('axis', {'axis': 1}),
                           ('negative_axis', {'axis': -1}),
                           ('axes', {'axis': (0, 2)}),
                           ('keepdims', {'axis': 1, 'keepdims': True}),
                           ('all_keepdims', {'keepdims': True})):
        APPLY_CASES['{}_{}'.format(_f, _name)] = (
            lambda f=_f, kw=_kwargs: (
                lambda a: getattr(F, f)(a, **kw), [_v(2, 3, 4)]))
APPLY_CASES.update({
    'max_strided': lambda: (lambda a: F.max(a, axis=0),
                            [strided_variable(3, 4)]),
    'max_fortran': lambda: (lambda a: F.max(a, axis=1), [_fortran(3, 4)]),
    'max_0d': lambda: (F.max, [_v()]),
    'max_empty_batch': lambda: (lambda a: F.max(a, axis=1), [_v(0, 3)]),
})

# name -> builds (fn, args), for the index functions, whose integer outputs
# have no gradient, and for cases stock cannot differentiate: forward only.
FORWARD_CASES = {
    'argmax_strided': lambda: (lambda a: F.argmax(a, axis=0),
                               [strided_variable(3, 4)]),
    # (Stock's backward fails on byte-swapped data: forward only.)
    'max_byteswapped': lambda: (lambda a: F.max(a, axis=1),
                                [_byteswapped(3, 4)]),
    'argmax_byteswapped': lambda: (lambda a: F.argmax(a, axis=1),
                                   [_byteswapped(3, 4)]),
    'argmax_ties': lambda: (lambda a: F.argmax(a, axis=1),
                            [chainer.Variable(numpy.ones((2, 3),
                                                         numpy.float32))]),
    'argmin_empty_batch': lambda: (lambda a: F.argmin(a, axis=1),
                                   [_v(0, 3)]),
    # Along rows (the last axis): ties, zeros of both signs, NaNs, rows of
    # one item.
    'argmax_rows': lambda: (lambda a: F.argmax(a, axis=-1), [_v(30, 45)]),
    'argmin_rows_ties': lambda: (lambda a: F.argmin(a, axis=1), [
        chainer.Variable(numpy.array([[2, 1, 1, 3], [5, 5, 4, 4]],
                                     numpy.float64))]),
    'max_rows_zeros': lambda: (lambda a: F.max(a, axis=1), [
        chainer.Variable(numpy.array([[-0.0, 0.0, -1.0], [0.0, -0.0, -2.0]],
                                     numpy.float32))]),
    'min_rows_nan': lambda: (lambda a: F.min(a, axis=1), [
        chainer.Variable(numpy.array([[1.0, numpy.nan, -numpy.nan],
                                      [0.5, 2.0, 1.0]], numpy.float32))]),
    'argmax_rows_nan': lambda: (lambda a: F.argmax(a, axis=1), [
        chainer.Variable(numpy.array([[1.0, numpy.nan, 3.0]],
                                     numpy.float32))]),
    'max_rows_of_one': lambda: (lambda a: F.max(a, axis=1), [_v(4, 1)]),
}
for _f in ('argmax', 'argmin'):
    for _name, _kwargs in (('all', {}), ('axis', {'axis': 1}),
                           ('negative_axis', {'axis': -1})):
        FORWARD_CASES['{}_{}'.format(_f, _name)] = (
            lambda f=_f, kw=_kwargs: (
                lambda a: getattr(F, f)(a, **kw), [_v(2, 3, 4)]))


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('backprop', [True, False])
@pytest.mark.parametrize('case', sorted(FORWARD_CASES))
def test_index_outputs_same_as_stock(case, backprop, type_check):
    with chainer.using_config('type_check', type_check):
        check_same(lambda: outputs(FORWARD_CASES[case], False)
                   if not backprop else
                   _recorded_outputs(FORWARD_CASES[case]))


def _recorded_outputs(build):
    fn, xs = build()
    y = fn(*xs)
    return y.array, y.requires_grad, type(y.creator).__name__


# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'max_axis': lambda d: applied(lambda a: F.max(a, axis=1),
                                  _v(2, 3, 4, dtype=d)),
    'min_all': lambda d: applied(F.min, _v(3, 4, dtype=d)),
    'max_keepdims': lambda d: applied(
        lambda a: F.max(a, axis=(0, 1), keepdims=True), _v(2, 3, dtype=d)),
    'max_ties': lambda d: applied(
        lambda a: F.max(a, axis=1),
        chainer.Variable(numpy.ones((2, 3), d))),
    'min_negative_axes': lambda d: applied(
        lambda a: F.min(a, axis=(-1, 0)), _v(2, 3, 4, dtype=d)),
    'max_0d': lambda d: applied(F.max, _v(dtype=d)),
    'min_0d': lambda d: applied(F.min, _v(dtype=d)),
    'max_nan': lambda d: applied(
        lambda a: F.max(a, axis=0),
        chainer.Variable(numpy.array([[1, numpy.nan], [2, 0]], d))),
}


globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['max_axis', 'min_all',
                                                'min_negative_axes']))


@pytest.mark.parametrize('mode', ['raise', 'warn'])
def test_gradient_products_under_errstate_as_stock(mode):
    # gy inf at a position the mask zeroes: inf * 0 in stock's Mul.
    def fn():
        x = _v(2, 3)
        y = F.max(x, axis=None, keepdims=True)
        y.grad = numpy.full(y.shape, numpy.inf, numpy.float32)
        with numpy.errstate(all=mode), warnings.catch_warnings(
                record=True) as caught:
            warnings.simplefilter('always')
            result = error_of(y.backward)
        return result, x.grad, [(str(w.message), w.filename, w.lineno)
                                for w in caught]
    check_same(fn)


@pytest.mark.parametrize('axis', [None, (0,), (1, 0), (5,), [0], (0.0,)])
def test_axis_changed_before_the_backward_as_stock(axis):
    def fn():
        x = _v(2, 3)
        y = F.max(x, axis=0)
        y.creator.axis = axis
        y.grad = numpy.ones_like(y.array)
        return error_of(y.backward), x.grad
    check_same(fn)


@pytest.mark.parametrize('f,cls', [
    (F.max, minmax.Max), (F.min, minmax.Min),
    (F.argmax, minmax.ArgMax), (F.argmin, minmax.ArgMin)])
def test_forward_is_compiled(f, cls, compiled_instead):
    x = _v(3, 4)
    compiled_instead(lambda: f(x, axis=1), cls._fwd)


@pytest.mark.parametrize('cls,f', [
    (minmax.Max, lambda x: F.max(x, axis=1)),
    (minmax.ArgMax, lambda x: F.argmax(x, axis=1))])
def test_passed_type_check_is_cached(cls, f, type_check_is_cached):
    x = _v(3, 4)
    type_check_is_cached(cls, lambda: f(x))


@pytest.mark.parametrize('owner,name', [
    (minmax.Max, '_fwd'),
    (minmax.SelectorBase, 'retain_inputs'),
    (minmax.SelectorBase, 'retain_outputs'),
    (minmax.ArgMin, '_fwd'),
])
def test_mocked_method_is_called(owner, name, mock_is_called):
    def fn():
        x = _v(3, 4)
        return F.min(x, axis=0).array, F.argmin(x, axis=0).array, F.max(
            x, axis=0).array

    check_same(fn)
    mock_is_called(owner, name, fn)


@pytest.mark.parametrize('f', ['max', 'min', 'argmax', 'argmin'])
@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('x,axis', [
    (numpy.arange(6).reshape(2, 3), 1),
    (numpy.zeros((2, 3), numpy.float32), 2),
    (numpy.zeros((2, 3), numpy.float32), -3),
    (numpy.zeros((0, 3), numpy.float32), 0),
    (numpy.zeros((0, 3), numpy.float32), None),
], ids=['int', 'axis', 'negative_axis', 'empty_axis', 'empty'])
def test_bad_input_same_error_as_stock(f, x, axis, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return getattr(F, f)(x, axis=axis).array
    check_error_same(fn)


@pytest.mark.parametrize('cls,axis', [
    (minmax.Max, 1.5), (minmax.Max, [0]), (minmax.ArgMax, (0,)),
    (minmax.ArgMax, 1.0)], ids=['float', 'list', 'tuple', 'int_float'])
def test_axis_set_after_construction_same_as_stock(cls, axis):
    # __init__ validates the axis; one set afterwards reaches NumPy as is.
    def fn():
        node = cls(axis=0)
        node.axis = axis
        with chainer.using_config('type_check', False):
            return node.apply((_v(2, 3),))[0].array
    check_error_same(fn)


@pytest.mark.parametrize('f', ['max', 'min', 'argmax'])
@pytest.mark.parametrize('mode', ['raise', 'call', 'warn'])
def test_nan_inputs_under_errstate_as_stock(f, mode):
    x = numpy.array([[1, numpy.nan, -numpy.inf], [numpy.nan, 0, 2]],
                    numpy.float32)

    def fn():
        calls = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            with numpy.errstate(all=mode):
                old = numpy.seterrcall(lambda *a: calls.append(a))
                try:
                    result = error_of(lambda: getattr(F, f)(x, axis=1).array)
                finally:
                    numpy.seterrcall(old)
        return result, calls, [(w.category, str(w.message), w.filename,
                                w.lineno) for w in caught]

    check_same(fn)


@pytest.mark.parametrize('f', [F.max, F.min])
@pytest.mark.parametrize('keepdims', [numpy.bool_(True), 1])
@pytest.mark.parametrize('axis', [None, 1])
def test_keepdims_not_a_bool_warns_as_stock(f, axis, keepdims):
    x = _v(2, 3)
    stock, _ = check_same(lambda: warned(
        lambda: f(x, axis=axis, keepdims=keepdims).array))
    assert stock[1] or type(keepdims) is int


def _edge_array(rng, shape, dtype, share):
    # Ties, zeros of both signs, infinities and NaNs among a few values.
    a = rng.choice([-1.5, 0.25, 2.0, 3.0], shape).astype(dtype)
    special = numpy.array([0.0, -0.0, numpy.inf, -numpy.inf, numpy.nan],
                          dtype)
    flat = a.reshape(-1)
    at = rng.rand(flat.size) < share
    flat[at] = rng.choice(special, int(at.sum()))
    return a


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('f', ['max', 'min', 'argmax', 'argmin'])
def test_random_edges_same_as_stock(dtype, f):
    # The compiled loops find the value NumPy's find (the first index, for
    # the index functions); NaNs, and zeros found by max and min, go back
    # to NumPy, which chooses their bits.
    rng = numpy.random.RandomState(11)
    cases = []
    for _ in range(150):
        shape = tuple(rng.randint(0, 6, rng.randint(0, 4)))
        nd = len(shape)
        axis = None if nd == 0 or rng.rand() < 0.2 else int(
            rng.randint(-nd, nd))
        share = [0, 0.1, 0.5][rng.randint(3)]
        keepdims = bool(rng.randint(2))
        cases.append((_edge_array(rng, shape, dtype, share), axis, keepdims))

    def fn():
        out = []
        for x, axis, keepdims in cases:
            kwargs = {'axis': axis}
            if f in ('max', 'min'):
                kwargs['keepdims'] = keepdims
            result = []
            out.append((warned(lambda: result.append(
                getattr(F, f)(x, **kwargs).array)), result))
        return out
    check_same(fn)
