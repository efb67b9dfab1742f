"""F.concat (``Concat``), stock vs patched."""
import pickle

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import split_axis
from chainer.functions.array import concat

from chainer_fastpath.testing import (
    applied, applied_state, check_same, gradients, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'concat': lambda: (lambda a, b: F.concat((a, b), axis=1),
                       [_v(2, 3), _v(2, 2)]),
    'array_and_variable': lambda: (
        lambda a, b: F.concat((a.array, b), axis=0), [_v(1, 3), _v(2, 3)]),
    'strided_float64': lambda: (
        lambda a, b: F.concat((a, b), axis=-1),
        [strided_variable(2, 3, dtype=numpy.float64),
         _v(2, 1, dtype=numpy.float64)]),
    '1d_empty': lambda: (lambda a, b: F.concat((a, b), axis=0),
                         [_v(0), _v(3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'concat': lambda d: applied(lambda a, b: F.concat((a, b), axis=1),
                                _v(2, 3, dtype=d), _v(2, 4, dtype=d)),
    'concat_axis0_three': lambda d: applied(
        lambda a, b, c: F.concat((a, b, c), axis=0),
        _v(1, 3, dtype=d), _v(2, 3, dtype=d), _v(1, 3, dtype=d)),
    'concat_one': lambda d: applied(lambda a: F.concat((a,)),
                                    _v(2, 3, dtype=d)),
    'concat_negative_axis': lambda d: applied(
        lambda a, b: F.concat((a, b), axis=-1), _v(2, 3, 2, dtype=d),
        _v(2, 3, 1, dtype=d)),
    'concat_middle_axis_empty': lambda d: applied(
        lambda a, b, c: F.concat((a, b, c), axis=1), _v(2, 0, 2, dtype=d),
        _v(2, 3, 2, dtype=d), _v(2, 1, 2, dtype=d)),
}


def _ones(*shape):
    return chainer.Variable(numpy.ones(shape, numpy.float32))


# name -> (a call whose type check passes, a call that stock rejects)
TYPE_CHECK_SEQUENCES = {
    'other_axis_attribute': (
        lambda: F.concat((_ones(2, 3), _ones(2, 4)), 1),
        lambda: F.concat((_ones(2, 3), _ones(2, 4)), 0)),
}


def _float32_gradients():
    return gradients(BACKWARD_CASES['concat'], numpy.float32)


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['concat', 'concat_negative_axis'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(APPLY_CASES, concat.Concat.forward)))


@pytest.mark.parametrize('name', ['forward', 'check_type_forward'])
def test_mocked_method_of_an_inner_node_is_called(name, mock_is_called):
    # Concat's backward applies SplitAxis: a spy on it is called, stock and
    # patched.
    reasons = mock_is_called(split_axis.SplitAxis, name, _float32_gradients)
    assert reasons == {'patched or mocked method': 1}


def test_mocked_numpy_split_is_called_by_concat_backward(spy, patched_stats):
    # A NumPy function replaced sends the whole backward pass to stock.
    calls = spy(numpy, 'split')
    reasons = patched_stats(_float32_gradients, 'Variable.backward')
    assert len(calls) == 1
    assert reasons['fallback'] == {'numpy.split replaced': 1}


def test_concat_backward_gives_stock_views():
    # The gradients are views of the concatenated gradient, as
    # numpy.split leaves them: same shapes, strides and base.
    def fn():
        a, b = _v(2, 3, 2), _v(2, 1, 2)
        y = F.concat((a, b), axis=1)
        gy = numpy.random.uniform(-1, 1, y.shape).astype(numpy.float32)
        y.grad = gy
        y.backward()
        return [(g.shape, g.strides, g.base is gy, g.flags.c_contiguous)
                for g in (a.grad, b.grad)]
    stock, patched = check_same(fn)
    assert stock == patched


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(concat.Concat, lambda: F.concat([x, x], 1))


def _layouts(rng):
    # Inputs for one concatenation: shapes with ones and (sometimes) an
    # empty dimension, dtypes mixed now and then, and views whose strides
    # are not a new array's.
    nd = rng.randint(1, 5)
    shape = [int(rng.choice([1, 1, 2, 3])) for _ in range(nd)]
    axis = int(rng.randint(-nd, nd))
    dtype = rng.choice(['float16', 'float32', 'float64', 'int32', 'bool'])
    xs = []
    for _ in range(rng.randint(1, 4)):
        s = list(shape)
        s[axis] = int(rng.choice([0, 1, 2, 4] if rng.rand() < 0.1
                                 else [1, 2, 4]))
        d = 'float64' if rng.rand() < 0.05 else dtype
        x = (rng.randn(*s) * 8).astype(d)
        kind = rng.randint(6)
        if kind == 0:
            x = numpy.asfortranarray(x)
        elif kind == 1:
            x = numpy.repeat(x, 2, axis=-1)[..., ::2]
        elif kind == 2:
            x = x[None][0]      # a view, strides as the base's
        xs.append(x)
    return xs, axis


def test_random_layouts_same_array_as_stock():
    def run():
        rng = numpy.random.RandomState(7)
        out = []
        for _ in range(400):
            xs, axis = _layouts(rng)
            try:
                y = F.concat([chainer.Variable(x) for x in xs], axis).array
            except Exception as e:  # mixed dtypes: stock's error
                out.append((type(e), str(e)))
                continue
            out.append((y.dtype, y.shape, y.strides, y.flags.c_contiguous,
                        y.flags.f_contiguous, y.tobytes()))
        return out

    stock, patched = check_same(run)
    assert len(stock) == 400


def _a(*shape, dtype=numpy.float32):
    return numpy.random.uniform(-1, 1, shape).astype(dtype)


def _unpickled(a):
    # equal to float32, not NumPy's builtin descr
    return pickle.loads(pickle.dumps(a))


# name -> (axis, inputs): passing and failing checks, decided by the
# checker or left by it to stock's check
CHECKS = {
    'axis_1': lambda: (1, [_a(2, 3), _a(2, 1), _a(2, 4)]),
    'axis_0_varying': lambda: (0, [_a(n, 3) for n in (5, 3, 3, 1)]),
    'negative_axis': lambda: (-1, [_a(2, 3), _a(2, 4)]),
    'negative_axis_other_dim': lambda: (-2, [_a(2, 3), _a(2, 4)]),
    'axis_past_ndim': lambda: (2, [_a(2, 3), _a(2, 3)]),
    'axis_below_ndim': lambda: (-3, [_a(2, 3), _a(2, 3)]),
    'dtype_mismatch': lambda: (0, [_a(2, 3), _a(2, 3, dtype=numpy.float64)]),
    'unpickled_dtype': lambda: (0, [_a(2, 3), _unpickled(_a(1, 3))]),
    'byte_order': lambda: (0, [_a(2, 3), _a(1, 3).astype('>f4')]),
    'ndim_mismatch': lambda: (0, [_a(2, 3), _a(2, 3, 1)]),
    'shape_mismatch': lambda: (0, [_a(2, 3), _a(2, 4)]),
    'one_input': lambda: (1, [_a(2, 3)]),
    'zero_d': lambda: (0, [_a(), _a()]),
    'one_d': lambda: (0, [_a(2), _a(0), _a(3)]),
    'int_arrays': lambda: (1, [numpy.arange(6).reshape(2, 3)] * 2),
}


@pytest.mark.parametrize('name', sorted(CHECKS))
def test_type_check_same_as_stock(name):
    def fn():
        axis, xs = CHECKS[name]()
        return applied_state(concat.Concat(axis), xs)
    check_same(fn)


def test_varying_shapes_are_checked_compiled(compiled_instead):
    # A batch of sentences: a new key for each, decided without stock's
    # check.
    compiled_instead(lambda: [F.concat([_v(n, 3), _v(2, 3)], 0)
                              for n in range(1, 20)],
                     concat.Concat.check_type_forward)
