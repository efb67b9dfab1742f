"""What the pooling tests share: geometry the compiled loops do not take."""
import subprocess
import sys

import numpy
import pytest

# Strides below 1, negative pads, kernels of no size or larger than the
# image, values past 2**31, NumPy integers, bools and floats: stock's
# slices raise, or index as Python's slices do.
BAD_GEOMETRY = [
    dict(ksize=2, stride=0),
    dict(ksize=2, stride=-1),
    dict(ksize=(2, 3), stride=(1, -2)),
    dict(ksize=0),
    dict(ksize=-1, stride=1),
    dict(ksize=(3, 0), stride=1),
    dict(ksize=2, pad=-1),
    dict(ksize=3, pad=(0, -2)),
    dict(ksize=9),
    dict(ksize=2, stride=2 ** 62),
    dict(ksize=2 ** 40, stride=1),
    dict(ksize=2, pad=2 ** 31),
    dict(ksize=(numpy.int64(2), 2)),
    dict(ksize=2, stride=(2, numpy.int32(1))),
    dict(ksize=2, pad=(True, 0)),
    dict(ksize=2.0),
]

_CHILD = '''
import sys

import numpy
import chainer
import chainer.functions as F
from chainer.functions.pooling import average_pooling_2d, max_pooling_nd
from chainer_fastpath.testing import applied_state, check_same, variable

node, public, kwargs = eval(sys.argv[1], {'numpy': numpy})
def forward():
    x = variable(2, 3, 5, 4)
    return applied_state(eval(node), (x,))
def backward():
    x = variable(2, 3, 5, 4)
    try:
        y = eval(public)(x, **kwargs)
        y.grad = numpy.ones(y.shape, numpy.float32)
        y.backward()
    except Exception as e:
        return type(e).__name__, str(e)
    return x.grad
for type_check in (True, False):
    with chainer.using_config('type_check', type_check):
        check_same(forward)
        check_same(backward)
'''


def pytest_generate_tests(metafunc):
    if 'bad_geometry' in metafunc.fixturenames:
        metafunc.parametrize('bad_geometry', BAD_GEOMETRY, ids=repr)


@pytest.fixture
def geometry_as_stock():
    """``geometry_as_stock(node, public, kwargs)``: asserts that the node
    ``node`` (an expression of ``kwargs``) applied, and the public function
    ``public`` called with ``kwargs`` and backpropagated, give stock's
    results or errors, with and without the type check. A write outside
    an array would crash, so the cases run in a child process."""
    def check(node, public, kwargs):
        child = subprocess.run(
            [sys.executable, '-c', _CHILD, repr((node, public, kwargs))],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True)
        assert child.returncode == 0, child.stdout[-3000:]
    return check
