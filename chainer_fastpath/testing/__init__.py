"""Helpers for testing code against the fast path."""
from chainer_fastpath.testing.differential import (  # NOQA
    FLOAT_DTYPES, applied, assert_same, check_error_after_passing,
    check_gradients_same, check_outputs_same, check_same,
    error_after_passing, error_of, grad_vars, gradients, outputs, run_both,
    variable)
