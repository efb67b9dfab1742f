"""F.dropout (``Dropout``: its type check is cached), stock vs patched."""
import numpy

import chainer
import chainer.functions as F
from chainer.functions.noise import dropout

from chainer_fastpath.testing import applied, variable as _v
from chainer_fastpath.testing.cases import function_tests


def _not_training(a):
    with chainer.using_config('train', False):
        return F.dropout(a, 0.5)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'dropout': lambda: (lambda a: F.dropout(a, 0.5), [_v(10, 10)]),
    'ratio_0': lambda: (lambda a: F.dropout(a, 0.0), [_v(4, 3)]),
    'float16': lambda: (lambda a: F.dropout(a, 0.3),
                        [_v(4, 3, dtype=numpy.float16)]),
    'not_training': lambda: (_not_training, [_v(4, 3)]),
    'empty': lambda: (F.dropout, [_v(0, 3)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'dropout': lambda d: applied(lambda a: F.dropout(a, 0.4),
                                 _v(5, 6, dtype=d)),
}


# Only the type check is compiled: the backward is stock's.
globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                second_order=['dropout'],
                                compiled_backward=False))


def test_passed_type_check_is_cached(type_check_is_cached):
    x = _v(2, 3)
    type_check_is_cached(dropout.Dropout, lambda: F.dropout(x))
