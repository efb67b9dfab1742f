"""_core/_stock_warning: the line of stock's warnings.warn call."""
import warnings

import numpy

import chainer

from chainer_fastpath._core import _stock_warning


def test_call_line_is_the_line_stock_warns_from():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        chainer.Variable(numpy.ones((1, 1), numpy.float32)).backward()
    (w,) = caught
    line = _stock_warning.call_line(chainer.Variable.backward,
                                    'Treating a variable with only one')
    assert (w.filename, w.lineno) == (
        chainer.Variable.backward.__code__.co_filename, line)


def test_call_line_of_a_missing_message_is_none():
    assert _stock_warning.call_line(chainer.Variable.backward,
                                    'no such message') is None
