# cython: boundscheck=True, wraparound=True
"""Compiled arithmetic nodes of ``basic_math``: ``Add``, ``AddConstant``,
``Sub``, ``SubFromConstant``, ``Mul``, ``MulConstant``, ``Neg``,
``Absolute``, ``Div``, ``DivFromConstant``, ``PowVarConst`` on NumPy arrays,
and the forward of ``PowConstVar``; passed type checks of all of them
cached.

Each NumPy operation runs with NumPy's error handling off (``_fpe``); where
NumPy would act on a floating-point exception, the node's own code runs.
"""
import numpy

import chainer
import chainer.functions
from chainer.functions.math import basic_math
from chainer.functions.math import sum as sum_mod

from cpython.object cimport PyObject

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, get_site, retain_inputs,
    retain_outputs)
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._dicts cimport cfp_dict_item_keyed, cfp_keyed_memo
from chainer_fastpath._core._fpe cimport (
    acts, quiet1, quiet2, quiet_begin, quiet_end)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_raw, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, CFP_NPY_HALF, CFP_NPY_INT, CFP_NPY_LONG,
    CFP_NPY_LONGLONG, builtin_typenum, cfp_elsize, numpy_struct_matches)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees, nodeless)
from chainer_fastpath._core._retained cimport (
    float_operand, float_operands, requires_grad_of)
from chainer_fastpath._core._ufunc_loop cimport (
    Binary, add_loop, multiply_loop, subtract_loop)
from chainer_fastpath._runtime._forced cimport forced
from chainer_fastpath._runtime._sum_grads cimport sum_to_grad

cdef type _ndarray = numpy.ndarray
cdef object _utils = chainer.utils
cdef object _preprocess_const = basic_math._preprocess_const
cdef object _np_add = numpy.add
cdef object _np_subtract = numpy.subtract
cdef object _np_multiply = numpy.multiply
cdef object _np_divide = numpy.true_divide
cdef object _np_absolute = numpy.absolute
cdef object _np_sign = numpy.sign
cdef Binary _divide_loop = Binary(_np_divide)
cdef dict _globals = basic_math.__dict__
cdef cfp_keyed_memo _preprocess_const_read

cfp_attr_enable(_attrs.FAST)
cdef cfp_attr _get_value = get_site('value')


cdef inline bint _stock_preprocess_const() except -1:
    """Whether ``basic_math._preprocess_const`` is stock's helper."""
    cdef PyObject *found = cfp_dict_item_keyed(
        &_preprocess_const_read, _globals, '_preprocess_const')
    if found is NULL:
        return basic_math._preprocess_const is _preprocess_const
    return <object>found is _preprocess_const


cdef inline object _forced(object y, int raised):
    """``(force_array(y),)``, or NOT_HANDLED where NumPy would have acted
    on a flag ``raised`` computing ``y``."""
    if acts(raised):
        return NOT_HANDLED
    return forced(y),


# -- forwards ---------------------------------------------------------------

cdef object _add(object node, tuple x, ConfigView config):
    cdef int raised = 0
    y = add_loop.quiet(x[0], x[1], &raised)
    return _forced(y, raised)


cdef object _sub(object node, tuple x, ConfigView config):
    cdef int raised = 0
    y = subtract_loop.quiet(x[0], x[1], &raised)
    return _forced(y, raised)


cdef object _mul(object node, tuple x, ConfigView config):
    # Mul.forward: may broadcast.
    retain_inputs(node, (0, 1))
    cdef int raised = 0
    y = multiply_loop.quiet(x[0], x[1], &raised)
    return _forced(y, raised)


cdef inline bint _converts_quietly(object x, object value):
    """Whether ``x.dtype.type(value)`` raises no floating-point exception
    and gives no warning: a Python number that a float16 holds as a normal
    number or zero, and a float dtype."""
    if type(value) is not float and type(value) is not int:
        return False
    if not (value == 0 or 2.0 ** -14 <= abs(value) <= 65504.0):
        return False
    if not numpy_struct_matches():
        return False
    cdef int num = builtin_typenum(x)
    return (num == CFP_NPY_HALF or num == CFP_NPY_FLOAT
            or num == CFP_NPY_DOUBLE)


cdef inline bint _float_array(object x):
    """Whether ``x`` is an ndarray of a float dtype (the forwards below
    leave other dtypes, whose operators may raise, to stock)."""
    if not numpy_struct_matches() or type(x) is not _ndarray:
        return False
    cdef int num = builtin_typenum(x)
    return (num == CFP_NPY_HALF or num == CFP_NPY_FLOAT
            or num == CFP_NPY_DOUBLE)


cdef inline bint _int_holds(object x, object value):
    """Whether ``x`` is an int32 or int64 ndarray and ``value`` a Python
    int in its range: ``x.dtype.type(value)`` is exact and warns nothing
    (an index times a constant: CRF1d's ``y_prev * n_label``)."""
    if (type(value) is not int or not numpy_struct_matches()
            or type(x) is not _ndarray):
        return False
    cdef int num = builtin_typenum(x)
    if num != CFP_NPY_INT and num != CFP_NPY_LONG and num != CFP_NPY_LONGLONG:
        return False
    if cfp_elsize(x) == 8:
        return -(1 << 63) <= value < (1 << 63)
    return cfp_elsize(x) == 4 and -(1 << 31) <= value < (1 << 31)


cdef inline object _constant(object node, tuple in_data, bint ints=False):
    # _preprocess_const(x, value): the value in the input's dtype;
    # NOT_HANDLED where that helper is not stock's, or where NumPy would act
    # on the conversion (stock's forward then converts, acting once, from
    # its line). Integer inputs only where ``ints``: for operations that
    # raise no flag on them.
    if not _stock_preprocess_const():
        return NOT_HANDLED
    x = in_data[0]
    value = get(node, &_get_value)
    if _converts_quietly(x, value) or ints and _int_holds(x, value):
        return x.dtype.type(value)
    if not _float_array(x):
        # Converting to an integer or bool dtype may warn (NumPy's
        # DeprecationWarning for a value out of its range) from the
        # helper's line: converted once, by stock's forward.
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        value = _preprocess_const(x, value)
    finally:
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return value


cdef inline object _with_constant(Binary loop, object node, tuple in_data,
                                  bint value_first):
    """``loop``'s operation of ``x`` and ``_constant(node, in_data)`` (the
    constant first where ``value_first``) by ``Binary.call_value``, for the
    float32 and float64 arrays whose conversion of the value is quiet;
    None where that does not take them."""
    if not _stock_preprocess_const():
        return None
    x = in_data[0]
    value = get(node, &_get_value)
    if not _converts_quietly(x, value):
        return None
    cdef int raised = 0
    y = loop.call_value(x, value, value_first, &raised)
    if y is None:
        return None
    return _forced(y, raised)


cdef object _add_constant(object node, tuple in_data, ConfigView config):
    y = _with_constant(add_loop, node, in_data, False)
    if y is not None:
        return y
    value = _constant(node, in_data)
    if value is NOT_HANDLED:
        return NOT_HANDLED
    cdef int raised = 0
    y = quiet2(_np_add, in_data[0], value, &raised)
    return _forced(y, raised)


cdef object _sub_from_constant(object node, tuple in_data,
                               ConfigView config):
    y = _with_constant(subtract_loop, node, in_data, True)
    if y is not None:
        return y
    value = _constant(node, in_data)
    if value is NOT_HANDLED:
        return NOT_HANDLED
    cdef int raised = 0
    y = quiet2(_np_subtract, value, in_data[0], &raised)
    return _forced(y, raised)


cdef object _mul_constant(object node, tuple in_data, ConfigView config):
    # Integer products wrap, as NumPy's multiply of integer arrays does,
    # raising no flag.
    y = _with_constant(multiply_loop, node, in_data, True)
    if y is not None:
        return y
    value = _constant(node, in_data, True)
    if value is NOT_HANDLED:
        return NOT_HANDLED
    cdef int raised = 0
    y = quiet2(_np_multiply, value, in_data[0], &raised)
    return _forced(y, raised)


cdef object _neg(object node, tuple x, ConfigView config):
    # Neg.forward: ``-x``, which raises no floating-point exception.
    if not _float_array(x[0]):
        return NOT_HANDLED
    retain_inputs(node, ())
    return forced(-x[0]),


cdef object _absolute(object node, tuple x, ConfigView config):
    # Absolute.forward: ``abs(x)`` (numpy.absolute), which raises no
    # floating-point exception on a float.
    if not _float_array(x[0]):
        return NOT_HANDLED
    retain_inputs(node, (0,))
    return forced(_np_absolute(x[0])),


cdef object _div(object node, tuple x, ConfigView config):
    # Div.forward: may broadcast.
    retain_inputs(node, (0, 1))
    cdef int raised = 0
    y = _divide_loop.quiet(x[0], x[1], &raised)
    return _forced(y, raised)


cdef object _div_from_constant(object node, tuple in_data,
                               ConfigView config):
    # DivFromConstant.forward: ``value / x``, the value in x's dtype.
    y = _with_constant(_divide_loop, node, in_data, True)
    if y is not None:
        retain_inputs(node, (0,))
        return y
    value = _constant(node, in_data)
    if value is NOT_HANDLED:
        return NOT_HANDLED
    retain_inputs(node, (0,))
    cdef int raised = 0
    y = quiet2(_np_divide, value, in_data[0], &raised)
    return _forced(y, raised)


cdef object _power(object node, tuple in_data, bint constant_base):
    """``x ** value``, or ``value ** x`` where ``constant_base``, the value
    in x's dtype (ndarray's power, with its fast paths for 2, 0.5, -1, ...
    where x is the base); NOT_HANDLED as ``_forced``."""
    x = in_data[0]
    if not _float_array(x):
        return NOT_HANDLED
    value = _constant(node, in_data)
    if value is NOT_HANDLED:
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        y = value ** x if constant_base else x ** value
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return y


cdef object _pow_var_const(object node, tuple in_data, ConfigView config):
    # PowVarConst.forward: x ** value, forced to x's dtype (its own: no
    # cast).
    y = _power(node, in_data, False)
    if y is NOT_HANDLED:
        return NOT_HANDLED
    retain_inputs(node, (0,))
    return _utils.force_array(y, in_data[0].dtype),


cdef object _pow_const_var(object node, tuple in_data, ConfigView config):
    # PowConstVar.forward: value ** x.
    y = _power(node, in_data, True)
    if y is NOT_HANDLED:
        return NOT_HANDLED
    retain_outputs(node, (0,))
    return forced(y),


# -- backwards --------------------------------------------------------------

cdef object _grads_tuple(object grads):
    # grads as a tuple, or NOT_HANDLED where one of them is.
    for g in grads:
        if g is NOT_HANDLED:
            return NOT_HANDLED
    return tuple(grads)


cdef object _add_grad(object func, tuple indexes, tuple grad_outputs):
    # Add.backward: F.sum_to(gy, x.shape) for each input asked for.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    inputs = func.inputs
    shape = gy.shape
    for i in indexes:
        if inputs[i].shape != shape:
            return _grads_tuple([sum_to_grad(gy_var, gy, inputs[j].shape)
                                 for j in indexes])
    return (gy_var,) * len(indexes)


cdef object _sub_grad(object func, tuple indexes, tuple grad_outputs):
    # Sub.backward: (F.sum_to(gy, x1.shape), -F.sum_to(gy, x2.shape)), the
    # negation a Neg node (its type check only names the input), None for
    # an input not asked for.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    x1, x2 = func.inputs
    g1 = g2 = None
    if 0 in indexes:
        g1 = sum_to_grad(gy_var, gy, x1.shape)
        if g1 is NOT_HANDLED:
            return NOT_HANDLED
    if 1 in indexes:
        g = sum_to_grad(gy_var, gy, x2.shape)
        if g is NOT_HANDLED:
            return NOT_HANDLED
        g2 = new_grad(_utils.force_array(-grad_raw(g)),
                      grad_requires_grad(gy_var))
    return g1, g2


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
    # that broadcast).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    xs = float_operands(func, gy, False)
    if xs is None:
        return NOT_HANDLED
    shape = gy.shape
    for i in indexes:
        if _broadcast_shape(shape, xs[1 - i].shape) is None:
            return NOT_HANDLED
    inputs = func.inputs
    cdef bint gy_rg = grad_requires_grad(gy_var)
    cdef int raised = 0
    cdef list products = []
    for i in indexes:
        products.append(multiply_loop.quiet(gy, xs[1 - i], &raised))
    if acts(raised):
        return NOT_HANDLED
    cdef list ret = []
    for i, gx in zip(indexes, products):
        gx = _utils.force_array(gx)
        ret.append(sum_to_grad(
            new_grad(gx, gy_rg or requires_grad_of(inputs[1 - i])), gx,
            xs[i].shape))
    return _grads_tuple(ret)


cdef object _mul_constant_grad(object func, tuple indexes,
                               tuple grad_outputs):
    # MulConstant.backward: ``value * gy``, a MulConstant node (its type
    # check only names the input) computing value (in gy's dtype) * gy.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    value = get(func, &_get_value)
    if gy is None or not _converts_quietly(gy, value):
        return NOT_HANDLED
    cdef int raised = 0
    gx = multiply_loop.call_value(gy, value, True, &raised)
    if gx is None:
        gx = quiet2(_np_multiply, gy.dtype.type(value), gy, &raised)
    if acts(raised):
        return NOT_HANDLED
    return (new_grad(_utils.force_array(gx), grad_requires_grad(gy_var)),)


cdef object _neg_grad(object func, tuple indexes, tuple grad_outputs):
    # Neg.backward and SubFromConstant.backward: ``-gy``, a Neg node (its
    # type check only names the input).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    return (new_grad(_utils.force_array(-gy), grad_requires_grad(gy_var)),)


cdef object _div_grad(object func, tuple indexes, tuple grad_outputs):
    # Div.backward: DivGrad(...).apply((x0, x1, gy)), a node without a type
    # check whose forward_cpu is gy / x1 and -(gy / x1) * x0 / x1, each
    # summed to its operand's shape; both returned.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    xs = float_operands(func, gy, False)
    if xs is None:
        return NOT_HANDLED
    x0, x1 = xs
    inputs = func.inputs
    cdef bint rg = (requires_grad_of(inputs[0]) or requires_grad_of(inputs[1])
                    or grad_requires_grad(gy_var))
    cdef int raised
    saved = quiet_begin()
    try:
        gx0 = _utils.force_array(gy / x1)
        gx1 = _utils.force_array(-gx0 * x0 / x1)
        gx0 = _utils.sum_to(gx0, x0.shape)
        gx1 = _utils.sum_to(gx1, x1.shape)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return (new_grad(gx0, rg),
            new_grad(gx1, rg))


cdef object _retained_base(object func, object gy):
    """The array of ``func``'s input 0 (``float_operand``), where
    ``_preprocess_const`` is stock's; else None."""
    if not _stock_preprocess_const():
        return None
    return float_operand(func, gy)


cdef object _pow_var_const_grad(object func, tuple indexes,
                                tuple grad_outputs):
    # PowVarConst.backward: PowVarConstGrad(value).apply((x, gy)), whose
    # type check asks for one floating dtype and one shape, and whose
    # forward_cpu is value * x ** (value - 1) * gy, the constants in x's
    # dtype.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    value = get(func, &_get_value)
    if gy is None or (type(value) is not float and type(value) is not int):
        return NOT_HANDLED
    x = _retained_base(func, gy)
    if x is None:
        return NOT_HANDLED
    dtype = x.dtype
    cdef int raised
    saved = quiet_begin()
    try:
        gx = (_utils.force_type(dtype, value) * (x ** dtype.type(value - 1))
              * gy)
        gx = _utils.force_array(gx)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return (new_grad(gx,
                     requires_grad_of(func.inputs[0])
                     or grad_requires_grad(gy_var)),)


cdef object _div_from_constant_grad(object func, tuple indexes,
                                    tuple grad_outputs):
    # DivFromConstant.backward: DivFromConstantGrad(value).apply((x, gy)),
    # a node without a type check whose forward_cpu is
    # -value * gy / (x ** 2), the value in x's dtype.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    x = _retained_base(func, gy)
    if x is None:
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        value = _preprocess_const(x, get(func, &_get_value))
        gx = _utils.force_array(-value * gy / (x ** 2))
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return (new_grad(gx,
                     requires_grad_of(func.inputs[0])
                     or grad_requires_grad(gy_var)),)


cdef object _absolute_grad(object func, tuple indexes,
                           tuple grad_outputs):
    # Absolute.backward: AbsoluteGrad(x).apply((gy,)), whose type check
    # wants a floating gy and whose forward_cpu is numpy.sign(x) * gy; its
    # output needs a gradient where gy does (x is an attribute, not an
    # input).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    x = None if gy is None else float_operand(func, gy)
    if x is None:
        return NOT_HANDLED
    cdef int raised = 0
    sign = quiet1(_np_sign, x, &raised)
    gx = quiet2(_np_multiply, sign, gy, &raised)
    if acts(raised):
        return NOT_HANDLED
    return (new_grad(forced(gx), grad_requires_grad(gy_var)),)


cdef tuple _SUM_TO = (
    (chainer.functions, 'sum_to'),
    (sum_mod.SumTo, '__init__'),
    (sum_mod.SumTo, 'check_type_forward'),
    (sum_mod.SumTo, 'forward'),
    (chainer.utils, 'sum_to'))
# What the backwards of the constant operations apply: MulConstant's
# ``self.value * g`` (Variable.__rmul__, a MulConstant node), Neg's and
# SubFromConstant's ``-g`` (Variable.__neg__, a Neg node).
cdef tuple _MUL_CONSTANT_NODE = (
    (chainer.Variable, '__rmul__'),
    (basic_math.MulConstant, '__init__'),
    (basic_math.MulConstant, 'check_type_forward'),
    (basic_math.MulConstant, 'forward'),
    (basic_math, '_preprocess_const'))
cdef tuple _NEG_NODE = (
    (chainer.Variable, '__neg__'),
    (basic_math.Neg, '__init__'),
    (basic_math.Neg, 'check_type_forward'),
    (basic_math.Neg, 'forward'),
    (basic_math.Neg, 'retain_inputs'))
# The forwards of the constant operations: the constant's cast.
cdef tuple _PREPROCESS_CONST = ((basic_math, '_preprocess_const'),)

ENTRIES = (
    nodeless(compiled(basic_math.Add, _add, ('forward',),
                      _add_grad, _SUM_TO, type_check=())),
    forward_callees(compiled(
        basic_math.AddConstant, _add_constant, ('forward',),
        _add_constant_grad, (), type_check=()), _PREPROCESS_CONST),
    nodeless(compiled(basic_math.Sub, _sub, ('forward',), _sub_grad,
                      _SUM_TO + _NEG_NODE, type_check=())),
    forward_callees(compiled(
        basic_math.SubFromConstant, _sub_from_constant, ('forward',),
        _neg_grad, _NEG_NODE, type_check=()), _PREPROCESS_CONST),
    nodeless(compiled(basic_math.Mul, _mul, ('forward', 'retain_inputs'),
                      _mul_grad, _SUM_TO + (
                          (basic_math.Mul, 'check_type_forward'),
                          (basic_math.Mul, 'forward'),
                          (basic_math.Mul, 'retain_inputs'),
                          (chainer.Variable, '__mul__')),
                      type_check=())),
    forward_callees(compiled(
        basic_math.MulConstant, _mul_constant, ('forward',),
        _mul_constant_grad, _MUL_CONSTANT_NODE, type_check=()),
        _PREPROCESS_CONST),
    compiled(basic_math.Neg, _neg, ('forward', 'retain_inputs'),
             _neg_grad, _NEG_NODE, type_check=()),
    compiled(basic_math.Absolute, _absolute, ('forward', 'retain_inputs'),
             _absolute_grad, (
                 (basic_math.AbsoluteGrad, '__init__'),
                 (basic_math.AbsoluteGrad, 'check_type_forward'),
                 (basic_math.AbsoluteGrad, 'forward'),
                 (basic_math.AbsoluteGrad, 'forward_cpu')), type_check=()),
    compiled(basic_math.Div, _div, ('forward', 'retain_inputs'),
             _div_grad, (
                 (basic_math.DivGrad, '__init__'),
                 (basic_math.DivGrad, 'check_type_forward'),
                 (basic_math.DivGrad, 'forward'),
                 (basic_math.DivGrad, 'forward_cpu'),
                 (basic_math.DivGrad, 'retain_inputs'),
                 (chainer.utils, 'sum_to')), type_check=()),
    forward_callees(compiled(
        basic_math.DivFromConstant, _div_from_constant,
        ('forward', 'retain_inputs'), _div_from_constant_grad, (
            (basic_math.DivFromConstantGrad, '__init__'),
            (basic_math.DivFromConstantGrad, 'check_type_forward'),
            (basic_math.DivFromConstantGrad, 'forward'),
            (basic_math.DivFromConstantGrad, 'forward_cpu'),
            (basic_math.DivFromConstantGrad, 'retain_inputs'),
            (basic_math, '_preprocess_const')), type_check=()),
        _PREPROCESS_CONST),
    forward_callees(compiled(
        basic_math.PowVarConst, _pow_var_const,
        ('forward', 'retain_inputs'), _pow_var_const_grad, (
            (basic_math.PowVarConstGrad, '__init__'),
            (basic_math.PowVarConstGrad, 'check_type_forward'),
            (basic_math.PowVarConstGrad, 'forward'),
            (basic_math.PowVarConstGrad, 'forward_cpu'),
            (basic_math.PowVarConstGrad, 'retain_inputs'),
            (basic_math, '_preprocess_const'),
            (chainer.utils, 'force_type')), type_check=()),
        _PREPROCESS_CONST),
    forward_callees(compiled(
        basic_math.PowConstVar, _pow_const_var,
        ('forward', 'retain_outputs'), NULL, (), type_check=()),
        _PREPROCESS_CONST),
)
