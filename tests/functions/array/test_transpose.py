"""F.transpose (``Transpose``: its type check is cached), stock vs patched."""
import numpy

import chainer.functions as F
from chainer.functions.array import transpose

from chainer_fastpath.testing import (
    applied, strided_variable, variable as _v)
from chainer_fastpath.testing.cases import function_tests

# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'transpose': lambda: (lambda a: F.transpose(a), [_v(2, 3, 4)]),
    'axes': lambda: (lambda a: F.transpose(a, (1, 0, 2)), [_v(2, 3, 4)]),
    'negative_axes': lambda: (lambda a: F.transpose(a, (-1, 0, -2)),
                              [_v(2, 3, 4)]),
    'float64_strided': lambda: (
        F.transpose, [strided_variable(3, 2, dtype=numpy.float64)]),
    '0d': lambda: (F.transpose, [_v()]),
    'empty': lambda: (F.transpose, [_v(0, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'transpose': lambda d: applied(F.transpose, _v(2, 3, 4, dtype=d)),
    'axes': lambda d: applied(lambda a: F.transpose(a, (2, 0, 1)),
                              _v(2, 3, 4, dtype=d)),
}


# Only the type check is compiled: the backward is stock's.
globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                second_order=['axes'],
                                compiled_backward=False))


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(transpose.Transpose, lambda: F.transpose(x))
