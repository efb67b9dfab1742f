# cython: boundscheck=True, wraparound=True
"""Compiled ``BernoulliLogProb``: the forward on NumPy arrays.

Stock's forward computes the log-probability, then replaces it where the
logit is infinite, under ``numpy.errstate(divide='ignore',
invalid='raise')``. Both parts run with NumPy's error handling off
(``_fpe``); where NumPy would have acted on a floating-point exception in
either, as errstate is in each, the node's own code runs.
"""
import numpy

import chainer
from chainer.distributions import bernoulli

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    FE_INVALID, FE_OVERFLOW, FE_UNDERFLOW, acts, quiet_begin, quiet_end)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_HALF, builtin_typenum,
    cfp_descr_of, numpy_struct_matches)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled

cdef type _ndarray = numpy.ndarray
cdef object _utils = chainer.utils
cdef object _exp = numpy.exp
cdef object _add = numpy.add
cdef object _subtract = numpy.subtract
cdef object _multiply = numpy.multiply
cdef object _negative = numpy.negative
cdef object _log = numpy.log
cdef object _isinf = numpy.isinf
cdef object _bitwise_and = numpy.bitwise_and
cdef object _where = numpy.where
cdef object _inf = numpy.inf


cdef bint _float_pair(object logit, object x):
    """Whether ``logit`` and ``x`` are ndarrays of one float dtype (where
    they differ, stock's last cast may warn)."""
    if (not numpy_struct_matches() or type(logit) is not _ndarray
            or type(x) is not _ndarray
            or cfp_descr_of(logit) != cfp_descr_of(x)):
        return False
    cdef int num = builtin_typenum(logit)
    return (num == CFP_NPY_HALF or num == CFP_NPY_FLOAT
            or num == CFP_NPY_DOUBLE)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # BernoulliLogProb.forward, xp NumPy.
    if len(inputs) != 2:
        return NOT_HANDLED
    logit, x = inputs
    if not _float_pair(logit, x):
        return NOT_HANDLED
    binary_check = node.binary_check
    invalid = None
    cdef int raised
    saved = quiet_begin()
    try:
        # Stock's ``logit * (x - 1) - log(exp(-logit) + 1)`` by the ufuncs
        # its operators call: an operator on an array only this code holds
        # has NumPy look for a temporary to reuse, which from compiled code
        # means walking the C stack (backtrace) per call, for nothing.
        y = _subtract(_multiply(logit, _subtract(x, 1)),
                      _log(_add(_exp(_negative(logit)), 1)))
        y = _utils.force_array(y)
        logit_isinf = _isinf(logit)
        ispinf = _bitwise_and(logit_isinf, logit > 0)
        isminf = _bitwise_and(logit_isinf, logit <= 0)
        if binary_check:
            invalid = _utils.force_array(_bitwise_and(x != 0, x != 1))
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    # Stock's errstate: a division by zero ignored, an invalid operation
    # raised, overflow and underflow as outside.
    saved = quiet_begin()
    try:
        y = _where(ispinf, _log(x), y)
        y = _where(isminf, _log(1 - x), y)
    finally:
        raised = quiet_end(saved)
        if raised & FE_INVALID or acts(raised & (FE_OVERFLOW
                                                 | FE_UNDERFLOW)):
            return NOT_HANDLED
    retain_inputs(node, (0, 1))
    node.logit_ispinf = ispinf
    node.logit_isminf = isminf
    if binary_check:
        node.invalid = invalid
        y[invalid] = -_inf
    return _utils.force_array(y, logit.dtype),


# BernoulliLogProb keeps FunctionNode's check, which checks nothing: the
# base's is the one read.
ENTRIES = (
    compiled(bernoulli.BernoulliLogProb, _forward,
             ('forward', 'retain_inputs'), NULL, (), (), NULL, -1, (),
             chainer.FunctionNode),
)
