"""Helpers for testing code against the fast path."""
from chainer_fastpath.testing.differential import (  # NOQA
    FLOAT_DTYPES, NAN_BITS_REPRODUCIBLE, applied, applied_state, assert_same,
    bits, check_error_after_passing, check_error_same, check_gradients_same,
    check_outputs_same, check_same, check_second_order_same,
    error_after_passing, error_of, grad_vars, gradients, misaligned, outputs,
    run_both, second_order, special_variable, strided_variable, variable,
    warned)
