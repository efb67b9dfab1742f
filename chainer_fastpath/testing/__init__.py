"""Helpers for testing code against the fast path."""
from chainer_fastpath.testing.differential import (  # NOQA
    assert_same, check_same, run_both)
