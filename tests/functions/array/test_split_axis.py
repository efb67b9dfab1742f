"""F.split_axis (``SplitAxis``), stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.array import split_axis

import chainer_fastpath
from chainer_fastpath.testing import (
    applied, applied_state, check_same, run_both, strided_variable,
    variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'split_axis': lambda: (lambda a: F.split_axis(a, 3, axis=1),
                           [_v(2, 6)]),
    'split_axis_indices': lambda: (lambda a: F.split_axis(a, [1, 3], 0),
                                   [_v(4, 3)]),
    'split_axis_array_indices': lambda: (
        lambda a: F.split_axis(a, numpy.array([2, 2, 3]), -1), [_v(2, 4)]),
    # Stock's backward cannot handle unsorted indices: forward only.
    'split_axis_unsorted_indices': lambda: (
        lambda a: F.split_axis(a.array, [3, 1, -1], 1), [_v(2, 5)]),
    'split_axis_one_section': lambda: (
        lambda a: F.split_axis(a, 1, 0, force_tuple=False), [_v(3, 2)]),
    'split_axis_3d_middle': lambda: (lambda a: F.split_axis(a, 2, axis=1),
                                     [_v(2, 4, 3)]),
    'split_axis_strided_float16': lambda: (
        lambda a: F.split_axis(a, 2, axis=1),
        [strided_variable(3, 4, dtype=numpy.float16)]),
    'split_axis_empty': lambda: (lambda a: F.split_axis(a, 2, axis=1),
                                 [_v(0, 4)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'split_axis': lambda d: applied(
        lambda a: F.concat(F.split_axis(a, 3, axis=1)[::-1], axis=1),
        _v(2, 6, dtype=d)),
    'split_axis_unused_part': lambda d: applied(
        lambda a: F.split_axis(a, [1, 3], axis=0)[1], _v(4, 3, dtype=d)),
}


def _ones(*shape):
    return chainer.Variable(numpy.ones(shape, numpy.float32))


# name -> (a call whose type check passes, a call that stock rejects)
TYPE_CHECK_SEQUENCES = {
    'split_axis_other_sections': (
        lambda: F.split_axis(_ones(2, 6), 3, 1),
        lambda: F.split_axis(_ones(2, 6), 4, 1)),
    'split_axis_other_indices': (
        lambda: F.split_axis(_ones(2, 6), (2, 4), 1),
        lambda: F.split_axis(_ones(2, 6), (2, 7), 1)),
    'split_axis_other_index_list': (
        lambda: F.split_axis(_ones(2, 6), [2, 4], 1),
        lambda: F.split_axis(_ones(2, 6), [2, 7], 1)),
    'split_axis_index_list_after_tuple': (
        lambda: F.split_axis(_ones(2, 6), (2, 4), 1),
        lambda: F.split_axis(_ones(2, 6), [2, 7], 1)),
    'split_axis_other_axis': (
        lambda: F.split_axis(_ones(2, 6), 2, 1),
        lambda: F.split_axis(_ones(2, 6), 2, 2)),
}


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES, second_order=['split_axis'],
    type_check_sequences=TYPE_CHECK_SEQUENCES,
    compiled_forward=dict.fromkeys(APPLY_CASES, split_axis.SplitAxis.forward)))


def test_split_axis_unusual_arguments_go_to_stock(python_calls):
    # Sections that are not a Python int, indices that are not integers:
    # stock's forward runs (and raises where it raises).
    x = _v(2, 4)
    with chainer_fastpath.enabled():
        assert python_calls(lambda: F.split_axis(x, numpy.array(2), 1),
                            split_axis.SplitAxis.forward) == 1

    def bad():
        node = split_axis.SplitAxis([1], 1)
        node.indices = [1.5]
        try:
            node.apply((x,))
        except Exception as e:
            return type(e).__name__, str(e)
    stock, patched = run_both(bad)
    assert stock == patched
    assert stock[0] == 'TypeError'


def test_mocked_numpy_split_is_called_by_split_axis(spy):
    calls = spy(numpy, 'split')
    with chainer_fastpath.enabled():
        F.split_axis(_v(2, 4), 2, 1)
    assert len(calls) == 1


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(split_axis.SplitAxis,
                         lambda: F.split_axis(x, 3, 1))


def test_passed_type_check_with_index_list_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(split_axis.SplitAxis,
                         lambda: F.split_axis(x, [1], 1))


# name -> (indices_or_sections, axis, shape): passing and failing checks,
# decided by the checker or left by it to stock's check
CHECKS = {
    'sections': (3, 1, (2, 6)),
    'sections_not_dividing': (4, 1, (2, 6)),
    'indices': ([1, 3], 0, (4, 3)),
    'indices_past_the_end': ([1, 5], 0, (4, 3)),
    'indices_empty': ([], 0, (4, 3)),
    'indices_empty_axis_below_ndim': ([], -3, (4, 3)),
    'indices_array': (numpy.array([1, 2]), 1, (2, 4)),
    'indices_numpy_int': ([1, numpy.int64(2)], 1, (2, 4)),
    'negative_axis': (2, -1, (3, 4)),
    'axis_past_ndim': (2, 2, (3, 4)),
    'axis_below_ndim': (2, -3, (3, 4)),
    'axis_numpy_int': (2, numpy.int64(1), (3, 4)),
    'zero_d': (1, 0, ()),
}


@pytest.mark.parametrize('name', sorted(CHECKS))
def test_type_check_same_as_stock(name):
    def fn():
        ios, axis, shape = CHECKS[name]
        x = numpy.random.uniform(-1, 1, shape).astype(numpy.float32)
        return applied_state(split_axis.SplitAxis(ios, axis), [x])
    check_same(fn)


def test_varying_shapes_are_checked_compiled(compiled_instead):
    compiled_instead(lambda: [F.split_axis(_v(n + 1, 3), [n], 0)
                              for n in range(1, 20)],
                     split_axis.SplitAxis.check_type_forward)
