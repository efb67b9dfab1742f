# cython: boundscheck=True, wraparound=True
"""Compiled ``LinearFunction``: forward and backward on NumPy arrays, and
``F.linear``.

The products are NumPy's ``dot``, or for two plain matrices the BLAS call
it makes (``_core/_blas``), which acts on no floating-point exception
either; the bias is added with
NumPy's error handling off (``_fpe``), and where NumPy would act on an
exception, or a cast or the bias gradient's sum might raise one, the node's
own code runs.
"""
cimport cython

import numpy

import chainer.functions
from chainer import variable
from chainer.functions.connection import linear
from chainer.functions.math import sum as sum_mod

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._blas cimport matrix_product, matrix_product_t
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, retain_inputs, set_site)
from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._config cimport ConfigView, debug_mode
from chainer_fastpath._core._fpe cimport (
    FE_UNDERFLOW, acts, quiet_into, watched)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_F_CONTIGUOUS, CFP_NPY_FLOAT,
    CFP_NPY_HALF, builtin_typenum, cfp_c_aligned, cfp_data, cfp_descr_of,
    cfp_dims, cfp_flags, cfp_nd, numpy_struct_matches, new_shaped)
from chainer_fastpath._core._objects cimport node_data
from chainer_fastpath._core._reductions cimport sum_middle
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath._core._ufunc_loop cimport add_loop
from chainer_fastpath._core._retained cimport array_of, requires_grad_of
from chainer_fastpath._runtime._public cimport Public

cdef type _ndarray = numpy.ndarray
cfp_attr_enable(_attrs.FAST)
cdef cfp_attr _set_config_use_ideep = set_site('_config_use_ideep')
cdef cfp_attr _get_inputs = get_site('inputs')
cdef cfp_attr _get_input_retained = get_site('_input_indexes_to_retain')
cdef cfp_attr _get_requires_grad = get_site('_requires_grad')
cdef cfp_attr _get_data = get_site('_data')
cdef object _empty = numpy.empty
cdef object _dot = numpy.dot
# numpy.dot's own C function: the public one first calls a Python function
# to find the arguments that could override it (__array_function__), which
# none of three exact ndarrays can.
cdef object _dot_c = getattr(numpy.dot, '_implementation', numpy.dot)
cdef object _ascontiguousarray = numpy.ascontiguousarray
cdef object _np_add = numpy.add
cdef object _np_abs = numpy.abs
cdef double _FLOAT_MAX = numpy.finfo(numpy.float32).max
cdef double _DOUBLE_MAX = numpy.finfo(numpy.float64).max
cdef double _HALF_MAX = numpy.finfo(numpy.float16).max
# What ndarray.sum calls, without numpy.core._methods._sum around it.
cdef object _add_reduce = numpy.add.reduce
# ``y += b``: add's loop per row where it takes the operands.


cdef object _forward(object node, tuple inputs, ConfigView config):
    # LinearFunction.forward, iDeep unavailable, no static schedule.
    if not 2 <= len(inputs) <= 3:
        return NOT_HANDLED   # stock's unpacking error, not Cython's
    if node is not None:    # None: a node nothing could see (nodeless)
        put(node, &_set_config_use_ideep, config.get('use_ideep'))
    cdef object x, W, b = None
    if len(inputs) == 3:
        x, W, b = inputs
    else:
        x, W = inputs
    y = _matrices_product(x, W)
    if y is NOT_HANDLED:
        return NOT_HANDLED
    cdef int raised = 0
    if len(inputs) == 3:
        if not add_loop.into_rows(y, b, &raised):
            quiet_into(_np_add, y, b, y, &raised)
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0, 1))
    return y,


cdef object _matrices_product(object x, object W):
    """``x.dot(W.T)`` as stock's forward makes it (a matrix with one row of
    neither layout first made contiguous); NOT_HANDLED where it would cast.
    Two plain matrices of one dtype are read from their structs."""
    cdef Py_ssize_t dims[2]
    if (type(x) is _ndarray and type(W) is _ndarray and numpy_struct_matches()
            and cfp_nd(x) == 2 and cfp_nd(W) == 2
            and cfp_descr_of(x) == cfp_descr_of(W)):
        if (not cfp_flags(x) & (CFP_NPY_C_CONTIGUOUS | CFP_NPY_F_CONTIGUOUS)
                and (cfp_dims(x)[0] == 1 or cfp_dims(x)[1] == 1)):
            x = _ascontiguousarray(x)
        y = matrix_product_t(x, False, W, True)
        if y is not None:
            return y
        dims[0] = cfp_dims(x)[0]
        dims[1] = cfp_dims(W)[0]
        y = new_shaped(x, 2, dims)
        if y is not None:
            _dot_c(x, W.T, y)
            return y
    if (isinstance(x, _ndarray)
            and not (x.flags.c_contiguous or x.flags.f_contiguous)
            and 1 in x.shape):
        x = _ascontiguousarray(x)
    if x.dtype != W.dtype:
        # x.dot(W.T).astype(x.dtype): a cast, which may warn.
        return NOT_HANDLED
    y = _empty((x.shape[0], W.shape[0]), dtype=x.dtype)
    _dot(x, W.T, out=y)
    return y


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # LinearFunction.backward with LinearGradData / LinearGradWeight / Sum
    # forwards inlined: no type check to run (the first two have none; Sum's
    # passes for a float matrix), casts that are identities.
    inputs = get(func, &_get_inputs)
    if get(func, &_get_input_retained) != (0, 1):
        return NOT_HANDLED
    x_node = inputs[0]
    W_node = inputs[1]
    if node_data(x_node) is None or node_data(W_node) is None:
        return NOT_HANDLED
    x = array_of(x_node)
    W = array_of(W_node)
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if (gy is None or type(x) is not _ndarray or type(W) is not _ndarray
            or not _float_matrices(gy, x, W)):
        # A cast of gW to W's dtype may warn.
        return NOT_HANDLED
    # The bias gradient first: where NumPy's sum would warn or choose a
    # NaN's payload (sum_middle declines those), or where sum_middle does
    # not apply and the sum may not be quiet, stock runs the whole backward
    # before anything is computed here.
    gb = None
    if 2 in indexes:
        gb = sum_middle(gy, 0, False)
        if gb is None and not _sums_quietly(gy):
            return NOT_HANDLED
    cdef bint gy_rg = grad_requires_grad(gy_var)
    gy_c = gy
    if not numpy_struct_matches():
        if (not (gy.flags.c_contiguous or gy.flags.f_contiguous)
                and 1 in gy.shape):
            gy_c = _ascontiguousarray(gy)
    elif (not cfp_flags(gy) & (CFP_NPY_C_CONTIGUOUS | CFP_NPY_F_CONTIGUOUS)
            and (cfp_dims(gy)[0] == 1 or cfp_dims(gy)[1] == 1)):
        gy_c = _ascontiguousarray(gy)
    dot = _dot_c if type(gy_c) is _ndarray else _dot
    ret = []
    if 0 in indexes:
        gx = matrix_product(gy_c, W)
        gx = _cast(dot(gy_c, W) if gx is None else gx, gy_c)
        ret.append(new_grad(gx, requires_grad_of(W_node) or gy_rg))
    if 1 in indexes:
        gW = matrix_product_t(gy_c, True, x, False)
        gW = _cast(dot(gy_c.T, x) if gW is None else gW, W)
        ret.append(new_grad(gW, requires_grad_of(x_node) or gy_rg))
    if 2 in indexes:
        # Sum's forward: the rows added in NumPy's order, in C where
        # sum_middle could (gy C-contiguous, float32 or float64).
        if gb is None:
            gb = numpy.asarray(_add_reduce(gy, (0,), None, None, False))
        ret.append(new_grad(gb, gy_rg))
    return ret


cdef bint _float_matrices(object gy, object x, object W) except -1:
    """``gy.ndim == 2 and gy.dtype.kind == 'f' and gy.dtype == x.dtype
    and W.dtype == x.dtype`` for three ndarrays; decided from their structs
    where the three share one descr."""
    cdef int num
    if (numpy_struct_matches() and cfp_descr_of(gy) == cfp_descr_of(x)
            and cfp_descr_of(W) == cfp_descr_of(x)):
        if cfp_nd(gy) != 2:
            return False
        num = builtin_typenum(gy)
        if (num == CFP_NPY_FLOAT or num == CFP_NPY_DOUBLE
                or num == CFP_NPY_HALF):
            return True
    return (gy.ndim == 2 and gy.dtype.kind == 'f' and gy.dtype == x.dtype
            and W.dtype == x.dtype)


cdef inline object _cast(object a, object like):
    """``a.astype(like.dtype, copy=False)``: ``a`` itself where it has that
    very descr (a new product, so no copy is asked for)."""
    if numpy_struct_matches() and cfp_descr_of(a) == cfp_descr_of(like):
        return a
    return a.astype(like.dtype, copy=False)


ctypedef fused real:
    float
    double


@cython.boundscheck(False)
@cython.wraparound(False)
cdef bint _bounded(const real *a, Py_ssize_t n, real limit) noexcept nogil:
    # All of a[:n] within [-limit, limit]; a NaN is not. No branch in the
    # loop, so that it vectorises.
    cdef Py_ssize_t k
    cdef bint ok = True
    for k in range(n):
        ok &= (a[k] <= limit) & (a[k] >= -limit)
    return ok


cdef bint _sums_quietly(object gy) except -1:
    """Whether summing the rows of ``gy`` raises no floating-point exception
    in any order of additions: no NaN, and every magnitude at most the
    dtype's maximum over twice the number of rows, so no partial sum
    overflows; a sum of floats of one type never underflows, and float16's
    may, when NumPy adds in float32, only if watched. A float32 or float64
    ``gy`` is read as C floats, so it must be C-contiguous and aligned."""
    cdef Py_ssize_t n = len(gy)
    if n == 0:
        return True
    if not numpy_struct_matches():
        return False
    cdef Py_ssize_t size = gy.size
    if size == 0:
        return True     # rows of nothing: nothing is added
    cdef int num = builtin_typenum(gy)
    if num == CFP_NPY_HALF:
        if n > 1024 or watched() & FE_UNDERFLOW:
            return False
        return bool(_np_abs(gy).max() <= _HALF_MAX / (2 * n))
    if not cfp_c_aligned(gy) or n > 2 ** 20:
        return False
    if num == CFP_NPY_FLOAT:
        return _bounded(<float *>cfp_data(gy), size,
                        <float>(_FLOAT_MAX / (2 * n)))
    if num == CFP_NPY_DOUBLE:
        return _bounded(<double *>cfp_data(gy), size, _DOUBLE_MAX / (2 * n))
    return False


# -- F.linear ----------------------------------------------------------------

TARGETS = ((linear, 'linear'), (chainer.functions, 'linear'))

cdef Public _linear = Public('linear.linear', linear,
                             ('x', 'W', 'b', 'n_batch_axes'), (None, 1))
cdef type _Variable = variable.Variable
cdef type _Parameter = variable.Parameter
# What stock's ``x.ndim`` runs for a Variable.
cdef StockMethods _variable_ndim = StockMethods(_Variable, ('ndim', 'array'))
cdef StockMethods _parameter_ndim = StockMethods(_Parameter,
                                                 ('ndim', 'array'))


def bind(owner, attribute, original):
    """Keeps stock's ``linear`` to fall back to; returns its
    replacement."""
    return _linear.bind(linear_, original)


cdef int _ndim(object x) except -2:
    """``x.ndim`` for an ndarray, or a Variable whose ``ndim`` is stock's
    (``self.array.ndim``) and whose array is an ndarray; -1 otherwise."""
    cdef type t = type(x)
    if t is _ndarray:
        return cfp_nd(x)
    if ((t is _Variable and _variable_ndim.on_class())
            or (t is _Parameter and _parameter_ndim.on_class())):
        data = (<list>get(x, &_get_data))[0]
        if type(data) is _ndarray:
            return cfp_nd(data)
    return -1


def linear_(*args, **kwargs):
    """Drop-in for ``F.linear``: ``y, = LinearFunction().apply((x, W[,
    b]))``, the class read from its module as stock reads it, for an input
    reshaped first and an output reshaped after as stock reshapes them
    (``x.reshape``, ``y.reshape``: a Variable's apply ``Reshape`` nodes)."""
    cdef tuple values = _linear.arguments(args, kwargs)
    if values is not None:
        y = _linear_of(values[0], values[1], values[2], values[3])
        if y is not None:
            return y
    return _linear.stock(args, kwargs)


cdef object linear_call(object x, object W, object b, object n_batch_axes):
    """``linear_(x, W, b, n_batch_axes=n_batch_axes)``, for the callers
    that found it installed."""
    y = _linear_of(x, W, b, n_batch_axes)
    if y is not None:
        return y
    return _linear.stock((x, W, b), {'n_batch_axes': n_batch_axes})


cdef object _linear_of(object x, object W, object b, object n_batch_axes):
    """``linear_``'s fast path for bound arguments; None, counted, where
    stock's function is to run."""
    cdef int ndim
    cls = _linear.read_global('LinearFunction')
    ndim = _ndim(x)
    if cls is None or type(n_batch_axes) is not int or ndim < 0:
        _linear.stats.fallback('not an int of batch axes, or an input '
                               'neither an ndarray nor a Variable')
    elif n_batch_axes <= 0:
        _linear.stats.fallback('no batch axis (stock raises)')
    elif ((n_batch_axes > 1 or ndim > 2) and debug_mode()):
        # Reshaped, the input would be reshaped again by stock.
        _linear.stats.fallback('debug mode')
    else:
        return _reshaped_linear(cls, x, W, b, n_batch_axes, ndim)
    return None


cdef object _reshaped_linear(object cls, object x, object W, object b,
                             object n_batch_axes, int ndim):
    """The body of stock's ``linear`` from its first reshape on, for a
    valid ``n_batch_axes``; None where nothing was applied (debug mode)."""
    if n_batch_axes > 1:
        batch_shape = x.shape[:n_batch_axes]
        batch_size = _linear.read_global('utils').size_of_shape(batch_shape)
        x = x.reshape(batch_size, -1)
    elif ndim > 2:
        x = x.reshape(x.shape[0], -1)
    y = _linear.apply_class(cls, (x, W) if b is None else (x, W, b))
    if y is not None and n_batch_axes > 1:
        y = y.reshape(batch_shape + (-1,))
    return y


ENTRIES = (
    nodeless(compiled(linear.LinearFunction,
             _forward, ('forward', 'static_linear_no_bias', 'static_add_bias',
                        'retain_inputs'),
             _backward, backward_callees=(
                 (chainer.functions, 'cast'),
                 (chainer.functions, 'sum'),
                 (linear.LinearGradData, '__init__'),
                 (linear.LinearGradData, 'check_type_forward'),
                 (linear.LinearGradData, 'forward'),
                 (linear.LinearGradData, 'retain_inputs'),
                 (linear.LinearGradWeight, '__init__'),
                 (linear.LinearGradWeight, 'check_type_forward'),
                 (linear.LinearGradWeight, 'forward'),
                 (linear.LinearGradWeight, 'retain_inputs'),
                 (sum_mod.Sum, '__init__'),
                 (sum_mod.Sum, 'check_type_forward'),
                 (sum_mod.Sum, 'forward')),
             type_check=())),
)
