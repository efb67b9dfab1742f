"""Indexing a Variable (``GetItem``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import get_item

from chainer_fastpath.testing import (
    applied, check_error_same, check_same, error_of, gradients,
    strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'getitem': lambda: (lambda a: a[1:, ::2], [_v(3, 4)]),
    'ellipsis_none': lambda: (lambda a: a[..., None], [_v(3, 4)]),
    'none_ellipsis': lambda: (lambda a: a[None, ...], [_v(3, 4)]),
    'int_then_slice': lambda: (lambda a: a[-1, 1:3], [_v(3, 4)]),
    'all_ints': lambda: (lambda a: a[1, 2], [_v(3, 4)]),
    'empty_tuple': lambda: (lambda a: a[()], [_v(3, 4)]),
    'empty_tuple_0d': lambda: (lambda a: a[()], [_v()]),
    'reversed': lambda: (lambda a: a[::-1, ::-2], [_v(3, 4)]),
    'empty_slice': lambda: (lambda a: a[2:1], [_v(3, 4)]),
    'strided': lambda: (lambda a: a[:, 1], [strided_variable(3, 4)]),
    'fortran': lambda: (lambda a: a[1:], [chainer.Variable(
        numpy.asfortranarray(_v(3, 4).array))]),
    'list': lambda: (lambda a: a[[0, 2]], [_v(3, 4)]),
    'int_array': lambda: (lambda a: a[numpy.array([2, 0, 2])], [_v(3, 4)]),
    'bool_array': lambda: (lambda a: a[numpy.array([True, False, True])],
                           [_v(3, 4)]),
    'numpy_int': lambda: (lambda a: a[numpy.int64(1)], [_v(3, 4)]),
    'bool_index': lambda: (lambda a: a[True], [_v(3, 4)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'get_item_slice': lambda d: applied(lambda a: a[1:, ::2],
                                        _v(3, 5, dtype=d)),
    'get_item_int': lambda d: applied(lambda a: a[1], _v(3, 5, dtype=d)),
    'get_item_repeated_index': lambda d: applied(
        lambda a: a[numpy.array([0, 2, 0])], _v(3, 5, dtype=d)),
    'get_item_ellipsis_none': lambda d: applied(
        lambda a: a[..., None], _v(3, 5, dtype=d)),
    'get_item_0d': lambda d: applied(lambda a: a[()], _v(dtype=d)),
    'get_item_empty': lambda d: applied(lambda a: a[2:1],
                                        _v(3, 5, dtype=d)),
}


# The apply cases of basic indexing (slices, ints, None, Ellipsis), which
# the compiled forward takes; arrays, lists, bools and NumPy integers stay
# stock's.
BASIC_INDEXES = sorted(set(APPLY_CASES) - {
    'list', 'int_array', 'bool_array', 'numpy_int', 'bool_index'})


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['get_item_slice', 'get_item_ellipsis_none'],
    compiled_forward=dict.fromkeys(BASIC_INDEXES, get_item.GetItem.forward)))


@pytest.mark.parametrize('index', [
    (5,), (0, 0, 0), (slice(None), 1.5), ('a',), (Ellipsis, Ellipsis)],
    ids=['out_of_range', 'too_many', 'float', 'str', 'two_ellipses'])
@pytest.mark.parametrize('type_check', [True, False])
def test_bad_index_same_error_as_stock(index, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            return get_item.GetItem(index).apply((_v(3, 4),))[0].array
    check_error_same(fn)


def test_slices_replaced_after_construction_same_as_stock():
    # __init__ makes a tuple of the slices; one set afterwards is used as
    # it is.
    def fn():
        node = get_item.GetItem((1,))
        node.slices = [0, 1]
        return node.apply((_v(3, 4),))[0].array
    check_same(fn)


def test_gradient_forward_is_compiled(compiled_instead):
    def fn():
        x = _v(3, 4)
        y = x[1:, None]
        y.grad = numpy.ones((2, 1, 4), numpy.float32)
        y.backward()
    compiled_instead(fn, get_item.GetItemGrad.forward)


@pytest.mark.parametrize('owner,name', [
    (get_item.GetItem, 'forward'), (get_item.GetItemGrad, 'forward')])
def test_mocked_method_is_called(owner, name, mock_is_called):
    mock_is_called(owner, name, lambda: gradients(
        BACKWARD_CASES['get_item_ellipsis_none'], numpy.float32))


@pytest.mark.parametrize('mode', ['raise', 'call', 'warn'])
def test_gradient_overflow_under_errstate_as_stock(mode):
    # Adding a gradient into zeros cannot overflow; a NaN stays a NaN.
    def fn():
        x = _v(3, 4)
        y = x[None, 1:]
        y.grad = numpy.full((1, 2, 4), numpy.nan, numpy.float32)
        with numpy.errstate(all=mode):
            y.backward()
        return x.grad
    check_same(fn)


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(get_item.GetItem, lambda: x[0])


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64])
def test_gradient_of_random_basic_indices_same_as_stock(dtype):
    # GetItemGrad adds the gradient into zeros at the indexed items: the
    # ufunc on the view, as add.at's sums (0 + -0.0 is +0.0; NaNs keep
    # their payload), for slices of any step, ints, None and Ellipsis.
    rng = numpy.random.RandomState(9)
    special = numpy.array([-0.0, numpy.nan, numpy.inf, -numpy.inf], dtype)

    def index(n):
        kind = rng.randint(4)
        if kind == 0:
            return int(rng.randint(-n, n))
        if kind == 1:
            step = int(rng.choice([-2, -1, 1, 2, 3]))
            return slice(int(rng.randint(-n, n)), None, step)
        if kind == 2:
            return None
        return slice(None)
    cases = []
    for _ in range(100):
        shape = tuple(rng.randint(1, 5, rng.randint(1, 4)))
        k = rng.randint(1, len(shape) + 1)
        if rng.rand() < 0.2:    # the last k axes
            slices = (Ellipsis,) + tuple(index(n) for n in shape[-k:])
        else:
            slices = tuple(index(n) for n in shape[:k])
        gy = rng.uniform(-1, 1, numpy.zeros(shape)[slices].shape)
        gy = numpy.asarray(gy).astype(dtype)
        flat = gy.reshape(-1)
        flat[rng.rand(flat.size) < 0.3] = special[0]
        if flat.size:
            flat[rng.randint(flat.size)] = special[rng.randint(4)]
        cases.append((shape, slices, gy))

    def fn():
        out = []
        for shape, slices, gy in cases:
            x = chainer.Variable(numpy.zeros(shape, dtype))
            y = F.get_item(x, slices)
            y.grad = gy.copy()
            out.append((error_of(y.backward), x.grad))
        return out
    check_same(fn)
