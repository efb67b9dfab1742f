"""Debug mode records where each node was created (``node.stack``, shown in
its error messages): the frames must be stock's, including those of the
callers the patch compiles (the Variable operators, ``F.add``,
``Link.__call__``), which therefore run their original code in debug mode.

Found by the fuzzer (category 'debug-stack' in
chainer_fastpath.testing.fuzz.known).
"""
import os

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L

import chainer_fastpath

from chainer_fastpath.testing import check_same


def _frames(variable):
    return [(f.name, os.path.basename(f.filename))
            for f in variable.creator.stack]


def _x():
    return chainer.Variable(numpy.arange(1, 4, dtype=numpy.float32))


@pytest.mark.parametrize('op', [
    lambda x: x * x, lambda x: x * 2.0, lambda x: x * numpy.ones(3, 'f'),
    lambda x: 2.0 * x, lambda x: x + x, lambda x: x + 1, lambda x: 1 + x,
    lambda x: x - x, lambda x: x - 1, lambda x: 1 - x,
    lambda x: F.add(x, x), lambda x: F.add(x, x, x),
    lambda x: F.relu(x), lambda x: F.sum(x), lambda x: F.sum(x, axis=0),
    lambda x: F.concat((x, x), 0), lambda x: F.linear(x[None], x[None]),
])
def test_operator_frame_in_debug_stack(op):
    def fn():
        with chainer.using_config('debug', True):
            return _frames(op(_x()))
    check_same(fn)


def test_link_call_frame_in_debug_stack():
    def fn():
        with chainer.using_config('debug', True):
            link = L.Linear(3, 2)
            return _frames(link(numpy.ones((1, 3), numpy.float32)))
    check_same(fn)


def test_debug_mode_is_a_counted_fallback_while_it_lasts():
    chainer_fastpath.enable()
    x = _x()
    with chainer.using_config('debug', True):
        x * x
    x * x
    assert chainer_fastpath.stats()['basic_math.mul'] == {
        'fast': 1, 'fallback': {'debug mode': 1}}


def test_optimizer_update_frame_in_debug_stack():
    def fn():
        with chainer.using_config('debug', True):
            link = L.Linear(3, 2)
            optimizer = chainer.optimizers.SGD()
            optimizer.setup(link)
            made = []

            def loss(x):
                y = F.sum(link(x))
                made.append(_frames(y))
                return y
            optimizer.update(loss, numpy.ones((1, 3), numpy.float32))
            return made
    check_same(fn)


def test_debug_mode_set_globally_is_seen():
    chainer_fastpath.enable()
    x = _x()
    chainer.set_debug(True)
    try:
        x * x
    finally:
        chainer.set_debug(False)
    x * x
    assert chainer_fastpath.stats()['basic_math.mul'] == {
        'fast': 1, 'fallback': {'debug mode': 1}}
