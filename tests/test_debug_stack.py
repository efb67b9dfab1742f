"""Debug mode records where each node was created (``node.stack``, shown in
its error messages): the frames must be stock's, including those of the
callers the patch compiles (the Variable operators, ``Link.__call__``).

Found by the fuzzer (category 'debug-stack' in
chainer_fastpath.testing.fuzz.known); not fixed yet, hence strict xfails.
"""
import os

import numpy
import pytest

import chainer
import chainer.links as L

from chainer_fastpath.testing import check_same


def _frames(variable):
    return [(f.name, os.path.basename(f.filename))
            for f in variable.creator.stack]


@pytest.mark.xfail(strict=True, reason='debug-stack: the compiled operator '
                                       'leaves no frame')
def test_operator_frame_in_debug_stack():
    def fn():
        with chainer.using_config('debug', True):
            x = chainer.Variable(numpy.ones(3, numpy.float32))
            return _frames(x * x)
    check_same(fn)


@pytest.mark.xfail(strict=True, reason='debug-stack: the compiled '
                                       'Link.__call__ leaves no frame')
def test_link_call_frame_in_debug_stack():
    def fn():
        with chainer.using_config('debug', True):
            link = L.Linear(3, 2)
            return _frames(link(numpy.ones((1, 3), numpy.float32)))
    check_same(fn)
