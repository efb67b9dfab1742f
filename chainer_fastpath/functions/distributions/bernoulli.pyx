# cython: boundscheck=True, wraparound=True
"""Compiled ``BernoulliLogProb``: forward and backward on NumPy arrays.

Stock's forward computes the log-probability, then replaces it where the
logit is infinite, under ``numpy.errstate(divide='ignore',
invalid='raise')``. Both parts run with NumPy's error handling off
(``_fpe``); where NumPy would have acted on a floating-point exception in
either, as errstate is in each, the node's own code runs.

The backward is stock's expression of nodes, ``x - 1 / (1 + exp(-logit))``
made NaN where the logit is infinite, times ``gy``: each node's NumPy call
on the arrays, without the nodes (no graph is recorded there).
"""
import numpy

import chainer
from chainer.distributions import bernoulli
from chainer.functions.array import where
from chainer.functions.math import basic_math
from chainer.functions.math import exponential
from chainer.functions.math import sum as sum_module

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    FE_INVALID, FE_OVERFLOW, FE_UNDERFLOW, acts, quiet_begin, quiet_end)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_HALF, builtin_typenum,
    cfp_descr_of, cfp_dims, cfp_nd, numpy_struct_matches)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    requires_grad_of, retained_inputs)

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
cdef object _true_divide = numpy.true_divide
cdef object _bitwise_or = numpy.bitwise_or
cdef object _array = numpy.array
cdef object _nan = numpy.nan
cdef object _bool = numpy.dtype(numpy.bool_)


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


cdef bint _same_shaped(object a, object like, object dtype):
    # An ndarray of ``like``'s shape (at least one axis) and ``dtype``.
    if type(a) is not _ndarray or a.dtype != dtype:
        return False
    cdef int k, nd = cfp_nd(like)
    if cfp_nd(a) != nd:
        return False
    for k in range(nd):
        if cfp_dims(a)[k] != cfp_dims(like)[k]:
            return False
    return True


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # BernoulliLogProb.backward, xp NumPy: the nodes' forwards in turn (Neg,
    # Exp, AddConstant, DivFromConstant, Sub, Where, maybe Where again,
    # Mul), on operands of one dtype and shape, whose type checks pass;
    # sum_to then returns its input.
    if len(grad_outputs) != 1:
        return NOT_HANDLED
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    arrays = retained_inputs(func, [])
    if gy is None or arrays is None or len(arrays) != 2:
        return NOT_HANDLED
    logit, x = arrays
    if not _float_pair(logit, x) or cfp_nd(logit) == 0:
        return NOT_HANDLED
    dtype = logit.dtype
    ispinf = func.logit_ispinf
    isminf = func.logit_isminf
    binary_check = func.binary_check
    invalid = func.invalid if binary_check else None
    if (not _same_shaped(gy, logit, dtype)
            or not _same_shaped(x, logit, dtype)
            or not _same_shaped(ispinf, logit, _bool)
            or not _same_shaped(isminf, logit, _bool)
            or binary_check and not _same_shaped(invalid, logit, _bool)):
        return NOT_HANDLED
    one = dtype.type(1.)    # _preprocess_const(x, 1.)
    cdef int raised
    saved = quiet_begin()
    try:
        dlogit = _subtract(x, _true_divide(
            one, _add(_exp(_negative(logit)), one)))
        nan = _array(_nan).astype(dtype)
        dlogit = _where(_bitwise_or(ispinf, isminf), nan, dlogit)
        if binary_check:
            dlogit = _where(invalid, nan, dlogit)
        gx = _multiply(gy, dlogit)
    finally:
        # Stock's nodes warn, raise or call back from their own lines.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    inputs = func.inputs
    return new_grad(gx, grad_requires_grad(gy_var)
                    or requires_grad_of(inputs[0])
                    or requires_grad_of(inputs[1])), None


# BernoulliLogProb keeps FunctionNode's check, which checks nothing: the
# base's is the one read.
ENTRIES = (
    compiled(bernoulli.BernoulliLogProb, _forward,
             ('forward', 'retain_inputs'), _backward, (
                 (chainer.Variable, '__neg__'),
                 (basic_math.Neg, 'check_type_forward'),
                 (basic_math.Neg, 'forward'),
                 (basic_math.Neg, 'retain_inputs'),
                 (exponential, 'exp'),
                 (exponential.Exp, 'check_type_forward'),
                 (exponential.Exp, 'forward'),
                 (exponential.Exp, 'forward_cpu'),
                 (exponential.Exp, 'retain_outputs'),
                 (chainer.Variable, '__radd__'),
                 (basic_math.AddConstant, '__init__'),
                 (basic_math.AddConstant, 'check_type_forward'),
                 (basic_math.AddConstant, 'forward'),
                 (chainer.Variable, '__rtruediv__'),
                 (basic_math.DivFromConstant, '__init__'),
                 (basic_math.DivFromConstant, 'check_type_forward'),
                 (basic_math.DivFromConstant, 'forward'),
                 (basic_math.DivFromConstant, 'retain_inputs'),
                 (chainer.Variable, '__sub__'),
                 (basic_math.Sub, 'check_type_forward'),
                 (basic_math.Sub, 'forward'),
                 (where, 'where'),
                 (where.Where, '__init__'),
                 (where.Where, 'check_type_forward'),
                 (where.Where, 'forward'),
                 (chainer.Variable, '__mul__'),
                 (basic_math.Mul, 'check_type_forward'),
                 (basic_math.Mul, 'forward'),
                 (basic_math.Mul, 'retain_inputs'),
                 (sum_module, 'sum_to'),
                 (basic_math, '_preprocess_const')),
             (), NULL, -1, ('backward', 'get_retained_inputs'),
             chainer.FunctionNode),
)
