"""Fixtures the convolutions' tests share."""
import pytest

import chainer

from chainer_fastpath.testing import (
    check_same, error_of, grad_vars, variable)


def _output_gradient(shape, layout, dtype):
    # An (n, c, h, w) output gradient in other memory orders than C's.
    n, c, h, w = shape
    if layout == 'transposed':
        return variable(n, c, w, h, dtype=dtype).array.transpose(0, 1, 3, 2)
    if layout == 'strided':
        return variable(n, c, h, 2 * w, dtype=dtype).array[..., ::2]
    assert layout == 'channels_last'
    return variable(n, h, w, c, dtype=dtype).array.transpose(0, 3, 1, 2)


@pytest.fixture
def odd_layout_gradients_same():
    """``odd_layout_gradients_same(build, layout, dtype)``: asserts the
    gradients from the output of ``build(dtype)`` (a gradient case) are
    stock's for an output gradient laid out as ``layout`` says
    ('transposed', 'strided', 'channels_last')."""
    def check(build, layout, dtype):
        def fn():
            inputs, y = build(dtype)
            y.grad = _output_gradient(y.shape, layout, dtype)
            y.backward()
            return grad_vars(*inputs)
        check_same(fn)
    return check


@pytest.fixture
def changed_geometry_same():
    """``changed_geometry_same(apply, attributes, type_check)``: asserts
    that the backward from ``y = apply(x, W, b)`` whose node's
    ``attributes`` (name -> value) were set after the forward gives
    stock's error, or stock's gradients."""
    def check(apply, attributes, type_check):
        def fn():
            x, W, b = variable(2, 2, 5, 5), variable(2, 2, 3, 3), variable(2)
            y = apply(x, W, b)
            for name, value in attributes.items():
                setattr(y.creator, name, value)
            y.grad = variable(*y.shape).array
            return error_of(y.backward), grad_vars(x, W, b)
        with chainer.using_config('type_check', type_check):
            check_same(fn)
    return check
