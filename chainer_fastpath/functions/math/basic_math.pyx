# cython: boundscheck=True, wraparound=True
"""Compiled arithmetic nodes of ``basic_math``: ``Add``, ``AddConstant``,
``Sub``, ``SubFromConstant``, ``Mul``, ``MulConstant``, ``Neg``, on NumPy
arrays; passed type checks of those and of ``Div`` and ``PowVarConst``
cached.

Each NumPy operation runs with NumPy's error handling off (``_fpe``); where
NumPy would act on a floating-point exception, the node's own code runs.
"""
import numpy

import chainer
import chainer.functions
from chainer.functions.math import basic_math

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet2
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_HALF, builtin_typenum, layout_ok)
from chainer_fastpath._core._objects cimport new_variable
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, Compiled, compiled)
from chainer_fastpath._core._retained cimport (
    float_operands, grad_array, requires_grad_of)

cdef object _utils = chainer.utils
cdef object _preprocess_const = basic_math._preprocess_const
cdef object _np_add = numpy.add
cdef object _np_subtract = numpy.subtract
cdef object _np_multiply = numpy.multiply


cdef inline object _forced(object y, int raised):
    """``(force_array(y),)``, or NOT_HANDLED where NumPy would have acted
    on a flag ``raised`` computing ``y``."""
    if acts(raised):
        return NOT_HANDLED
    return _utils.force_array(y),


# -- forwards ---------------------------------------------------------------

cdef object _add(object node, tuple x, ConfigView config):
    cdef int raised = 0
    y = quiet2(_np_add, x[0], x[1], &raised)
    return _forced(y, raised)


cdef object _sub(object node, tuple x, ConfigView config):
    cdef int raised = 0
    y = quiet2(_np_subtract, x[0], x[1], &raised)
    return _forced(y, raised)


cdef object _mul(object node, tuple x, ConfigView config):
    # Mul.forward: may broadcast.
    node._input_indexes_to_retain = (0, 1)
    cdef int raised = 0
    y = quiet2(_np_multiply, x[0], x[1], &raised)
    return _forced(y, raised)


cdef inline bint _converts_quietly(object x, object value):
    """Whether ``x.dtype.type(value)`` raises no floating-point exception
    and gives no warning: a Python number that a float16 holds as a normal
    number or zero, and a float dtype."""
    if type(value) is not float and type(value) is not int:
        return False
    if not (value == 0 or 2.0 ** -14 <= abs(value) <= 65504.0):
        return False
    if not layout_ok():
        return False
    cdef int num = builtin_typenum(x)
    return (num == CFP_NPY_HALF or num == CFP_NPY_FLOAT
            or num == CFP_NPY_DOUBLE)


cdef inline object _constant(object node, tuple in_data):
    # _preprocess_const(x, value): the value in the input's dtype; None
    # where that helper is not stock's. A conversion that may warn is the
    # helper's own call, so that it warns from its line.
    if basic_math._preprocess_const is not _preprocess_const:
        return None
    x = in_data[0]
    value = node.value
    if not _converts_quietly(x, value):
        return _preprocess_const(x, value)
    return x.dtype.type(value)


cdef object _add_constant(object node, tuple in_data, ConfigView config):
    value = _constant(node, in_data)
    if value is None:
        return NOT_HANDLED
    cdef int raised = 0
    y = quiet2(_np_add, in_data[0], value, &raised)
    return _forced(y, raised)


cdef object _sub_from_constant(object node, tuple in_data,
                               ConfigView config):
    value = _constant(node, in_data)
    if value is None:
        return NOT_HANDLED
    cdef int raised = 0
    y = quiet2(_np_subtract, value, in_data[0], &raised)
    return _forced(y, raised)


cdef object _mul_constant(object node, tuple in_data, ConfigView config):
    value = _constant(node, in_data)
    if value is None:
        return NOT_HANDLED
    cdef int raised = 0
    y = quiet2(_np_multiply, value, in_data[0], &raised)
    return _forced(y, raised)


# -- backwards --------------------------------------------------------------

cdef object _add_grad(object func, tuple indexes, tuple grad_outputs):
    # Add.backward: F.sum_to(gy, x.shape) is gy itself where shapes match.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    inputs = func.inputs
    for i in indexes:
        if gy.shape != inputs[i].shape:
            return NOT_HANDLED
    return (gy_var,) * len(indexes)


cdef object _add_constant_grad(object func, tuple indexes,
                               tuple grad_outputs):
    # AddConstant.backward returns its gradients as they are.
    return grad_outputs


cdef object _broadcast_shape(tuple a, tuple b):
    """NumPy's broadcast of shapes ``a`` and ``b``, or None where they do
    not broadcast."""
    cdef Py_ssize_t na = len(a), nb = len(b), n = max(na, nb), i
    cdef list out = [None] * n
    for i in range(1, n + 1):
        da = a[na - i] if i <= na else 1
        db = b[nb - i] if i <= nb else 1
        if da == db or db == 1:
            out[n - i] = da
        elif da == 1:
            out[n - i] = db
        else:
            return None
    return tuple(out)


cdef object _mul_grad(object func, tuple indexes, tuple grad_outputs):
    # Mul.backward: F.sum_to(gy * x[1 - i], x[i].shape), where the product
    # is a Mul node (its type check passes for one float dtype and shapes
    # that broadcast) and sum_to the identity (the product already has
    # x[i]'s shape).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    xs = float_operands(func, gy, False)
    if xs is None:
        return NOT_HANDLED
    shape = gy.shape
    for i in indexes:
        if _broadcast_shape(shape, xs[1 - i].shape) != xs[i].shape:
            return NOT_HANDLED
    inputs = func.inputs
    cdef bint gy_rg = gy_var._requires_grad
    cdef int raised = 0
    cdef list products = []
    for i in indexes:
        products.append(quiet2(_np_multiply, gy, xs[1 - i], &raised))
    if acts(raised):
        return NOT_HANDLED
    return tuple([
        new_variable(_utils.force_array(gx),
                     gy_rg or requires_grad_of(inputs[1 - i]), None, 0)
        for i, gx in zip(indexes, products)])


cdef object _mul_constant_grad(object func, tuple indexes,
                               tuple grad_outputs):
    # MulConstant.backward: ``value * gy``, a MulConstant node (its type
    # check only names the input) computing value (in gy's dtype) * gy.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    value = func.value
    if gy is None or not _converts_quietly(gy, value):
        return NOT_HANDLED
    cdef int raised = 0
    gx = quiet2(_np_multiply, gy.dtype.type(value), gy, &raised)
    if acts(raised):
        return NOT_HANDLED
    return (new_variable(_utils.force_array(gx), gy_var._requires_grad,
                         None, 0),)


cdef object _neg_grad(object func, tuple indexes, tuple grad_outputs):
    # Neg.backward and SubFromConstant.backward: ``-gy``, a Neg node (its
    # type check only names the input).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    return (new_variable(_utils.force_array(-gy), gy_var._requires_grad,
                         None, 0),)


cdef tuple _SUM_TO = ((chainer.functions, 'sum_to'),)
cdef tuple _CONSTANT_NODES = (
    (basic_math.MulConstant, 'forward'),
    (basic_math.Neg, 'forward'),
    (basic_math, '_preprocess_const'))

ENTRIES = (
    compiled(basic_math.Add, _add, ('forward',),
             _add_grad, _SUM_TO, type_check=()),
    compiled(basic_math.AddConstant, _add_constant, ('forward',),
             _add_constant_grad, (), type_check=()),
    compiled(basic_math.Sub, _sub, ('forward',), NULL, (), type_check=()),
    compiled(basic_math.SubFromConstant, _sub_from_constant, ('forward',),
             _neg_grad, _CONSTANT_NODES, type_check=()),
    compiled(basic_math.Mul, _mul, ('forward', 'retain_inputs'),
             _mul_grad, _SUM_TO + (
                 (basic_math.Mul, 'check_type_forward'),
                 (basic_math.Mul, 'forward'),
                 (chainer.Variable, '__mul__')),
             type_check=()),
    compiled(basic_math.MulConstant, _mul_constant, ('forward',),
             _mul_constant_grad, _CONSTANT_NODES, type_check=()),
    compiled(basic_math.Neg, NULL, (), _neg_grad, _CONSTANT_NODES,
             type_check=()),
    Compiled(basic_math.Div, type_check=()),
    Compiled(basic_math.PowVarConst, type_check=()),
)
