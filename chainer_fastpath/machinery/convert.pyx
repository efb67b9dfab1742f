# cython: boundscheck=True, wraparound=True
"""``chainer.dataset.concat_examples``, compiled.

The name is a ``Converter`` instance (``_ArbitraryCallableConverter``
wrapping ``concat_examples_func``), imported by value as the default
converter of the updaters and the evaluator; it stays that very object.
What is replaced is its class's ``__call__``, which takes the fast path
only where the instance wraps stock's ``concat_examples_func``. The module's
``concat_examples_func`` stays stock's: the converter pickles its
``base_callable`` by that name, which must find the very function.

A batch of examples of exact tuples, dicts or arrays, to no device or the
CPU, is gathered column by column in C. A column of NumPy arrays of one
dtype and shape, C-contiguous, is one new array filled by ``memcpy``
(what ``numpy.concatenate`` of the examples makes); with padding, NumPy's
``full`` then the examples copied into it; of Python or NumPy scalars,
``numpy.asarray`` of them (which ``concatenate`` would only copy). Any
other column runs stock's ``_concat_arrays``; any other batch, device or
a rebound callee, stock's converter.
"""
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.string cimport memcpy

import numpy

import chainer
from chainer import _backend
from chainer import backend
from chainer.backends import _cpu
from chainer.backends import cuda
from chainer.backends import intel64
from chainer.dataset import convert

from chainer_fastpath._core._audit cimport (
    StockFunctions, StockMethods, stock_replaced)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_C_CONTIGUOUS, canonical, cfp_data, cfp_descr_of, cfp_dims,
    cfp_elsize, cfp_flags, cfp_nd, cfp_strides, new_shaped,
    numpy_struct_matches)
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef type _ndarray = numpy.ndarray
cdef object _asarray = numpy.asarray
cdef object _full = numpy.full
cdef type _Converter = convert._ArbitraryCallableConverter
cdef type _CpuDevice = _cpu.CpuDevice
cdef object _stock_func = convert.concat_examples_func
cdef object _stock_concat_arrays = convert._concat_arrays
cdef object _stock_to_device = convert.to_device
cdef object _stock_get_device = convert._get_device

# Everything stock's converter calls by a module's name on the way.
cdef StockFunctions _functions = StockFunctions((
    (convert, 'to_device'), (convert, '_concat_arrays'),
    (convert, '_concat_arrays_with_padding'), (convert, '_get_device'),
    (backend, 'get_device'), (backend, '_get_device_cupy_or_numpy'),
    (backend, 'get_device_from_array'), (backend, 'using_device'),
    (chainer, 'get_array_types'), (chainer, 'using_device'),
    (_backend, '_convert_arrays'), (_cpu, '_array_to_cpu')))
cdef tuple _modules = (('chainer', chainer), ('backend', backend),
                       ('numpy', numpy))
cdef dict _convert_dict = convert.__dict__
cdef StockMethods _cpu_methods = StockMethods(
    _CpuDevice, ('send', 'send_array', 'create_context', 'from_array',
                 '__init__'))
cdef StockMethods _gpu_methods = StockMethods(cuda.GpuDevice, ('from_array',))
cdef StockMethods _intel64_methods = StockMethods(
    intel64.Intel64Device, ('from_array',))

# The Python scalars and NumPy scalar types numpy.asarray turns into an
# array of a builtin numeric dtype without calling anything of theirs.
cdef frozenset _scalar_types = frozenset(
    [float, bool] + [numpy.dtype(c).type for c in '?bBhHiIlLqQefdFD'])
cdef object _INT64_MIN = -(1 << 63)
cdef object _INT64_MAX = (1 << 63) - 1

cdef EntryStats _stats_call = _stats.entry(
    '_ArbitraryCallableConverter.__call__')
cdef Signature _call_signature = Signature(
    ('self', 'batch', 'device', 'padding'), (None, None))
cdef object _original_call = None
# What _concat returns where the batch is left to stock.
cdef object _STOCK = object()


TARGETS = ((_Converter, '__call__'),)


def bind(owner, attribute, original):
    """Keeps the stock ``__call__`` to fall back to; returns its
    replacement."""
    global _original_call
    _original_call = original
    return converter_call


def converter_call(*args, **kwargs):
    """Drop-in for ``_ArbitraryCallableConverter.__call__``: the compiled
    ``concat_examples`` where the converter wraps stock's function."""
    if args:
        base = getattr(args[0], 'base_callable', None)
        if base is _stock_func:
            result = _call(_call_signature.bind(args, kwargs))
            if result is not _STOCK:
                return result
        else:
            _stats_call.fallback('not concat_examples')
    return _original_call(*args, **kwargs)


cdef object _call(tuple values):
    """The converted batch of the bound arguments ``(self, batch, device,
    padding)``, or _STOCK (counted) before anything a user could see."""
    if values is None:
        _stats_call.fallback('arguments not (batch, device, padding)')
        return _STOCK
    batch = values[1]
    device = values[2]
    reason = _left_to_stock(device)
    if reason is not None:
        _stats_call.fallback(reason)
        return _STOCK
    result = _concat(batch, device, values[3])
    if result is _STOCK:
        _stats_call.fallback('batch neither tuples, dicts nor arrays')
    else:
        _stats_call.fast += 1
    return result


cdef str _left_to_stock(object device):
    """Why stock's converter must run, or None: a device other than none,
    ``-1`` or the CPU, or a callee rebound."""
    if device is not None:
        if type(device) is _CpuDevice:
            if not _cpu_methods.found_by(device):
                return 'device methods replaced'
        elif not (type(device) is int and device < 0):
            return 'device not None, -1 or the CPU'
    if not numpy_struct_matches():
        return 'numpy layout not recognised'
    if (not _functions.unchanged() or not _cpu_methods.on_class()
            or not _gpu_methods.on_class()
            or not _intel64_methods.on_class()):
        return 'convert callees replaced'
    for name, module in _modules:
        if _convert_dict.get(name) is not module:
            return 'convert callees replaced'
    return stock_replaced()


cdef object _concat(object batch, object device, object padding):
    """``concat_examples_func(batch, device, padding)``, or _STOCK."""
    if (type(batch) is not list and type(batch) is not tuple) or not batch:
        return _STOCK
    first = batch[0]
    cdef Py_ssize_t m, c
    if type(first) is tuple:
        m = len(<tuple>first)
        for example in batch:
            if type(example) is not tuple or len(<tuple>example) < m:
                return _STOCK
        if type(padding) is tuple:
            if len(<tuple>padding) < m:
                return _STOCK
        elif isinstance(padding, tuple):
            return _STOCK
        result = []
        for c in range(m):
            result.append(_sent(device, _column(
                _gathered(batch, c, None),
                padding[c] if type(padding) is tuple else padding)))
        return tuple(result)
    if type(first) is dict:
        keys = list(<dict>first)
        for key in keys:
            if type(key) is not str:
                return _STOCK
        for example in batch:
            if type(example) is not dict:
                return _STOCK
            for key in keys:
                if key not in <dict>example:
                    return _STOCK
        if type(padding) is dict:
            for key in keys:
                if key not in <dict>padding:
                    return _STOCK
        elif isinstance(padding, dict):
            return _STOCK
        out = {}
        for key in keys:
            out[key] = _sent(device, _column(
                _gathered(batch, -1, key),
                padding[key] if type(padding) is dict else padding))
        return out
    if isinstance(first, (tuple, dict)):
        return _STOCK
    return _sent(device, _column(batch, padding))


cdef list _gathered(object batch, Py_ssize_t c, object key):
    """``[example[c] for example in batch]`` of exact tuples, or
    ``[example[key] ...]`` of exact dicts where ``c`` is -1."""
    cdef Py_ssize_t n = len(batch), k
    cdef list out = PyList_New(n)
    for k in range(n):
        example = batch[k]
        item = (<tuple>example)[c] if c >= 0 else (<dict>example)[key]
        Py_INCREF(item)
        PyList_SET_ITEM(out, k, item)
    return out


cdef object _sent(object device, object x):
    """``to_device(device, x)``: ``x`` itself for a NumPy array, to none or
    the CPU."""
    if device is None or type(x) is _ndarray:
        return x
    return _stock_to_device(_stock_get_device(device), x)


cdef object _column(object arrays, object padding):
    """``_concat_arrays(arrays, padding)`` (``arrays`` a list or tuple)."""
    first = arrays[0]
    if type(first) is _ndarray:
        if _uniform(arrays, padding is None):
            if padding is None:
                out = _stacked(arrays)
                if out is not None:
                    return out
            else:
                return _padded(arrays, padding)
    elif padding is None and _scalars(arrays):
        out = _asarray(arrays)
        if (type(out) is _ndarray and canonical(out) and cfp_nd(out) == 1
                and cfp_flags(out) & CFP_NPY_C_CONTIGUOUS):
            return out
        # Stock goes on from its asarray.
        return _stock_concat_arrays(out, padding)
    return _stock_concat_arrays(arrays, padding)


cdef bint _scalars(object arrays) except -1:
    """Whether every element is a scalar asarray reads without calling
    anything of it, ints within int64."""
    for a in arrays:
        if type(a) is int:
            if not _INT64_MIN <= a <= _INT64_MAX:
                return False
        elif type(a) not in _scalar_types:
            return False
    return True


cdef bint _uniform(object arrays, bint same_shape) except -1:
    """Whether every element is a C-contiguous NumPy array of the first's
    builtin dtype and number of axes (and shape, where ``same_shape``),
    none empty where it must be."""
    first = arrays[0]
    if not canonical(first) or cfp_nd(first) > 31:
        return False
    cdef void *descr = cfp_descr_of(first)
    cdef int nd = cfp_nd(first), d
    cdef Py_ssize_t *dims = cfp_dims(first)
    cdef Py_ssize_t size = 1
    for d in range(nd):
        size *= dims[d]
    if same_shape and size == 0:
        return False
    for a in arrays:
        if (type(a) is not _ndarray or cfp_descr_of(a) != descr
                or cfp_nd(a) != nd
                or not cfp_flags(a) & CFP_NPY_C_CONTIGUOUS):
            return False
        if same_shape:
            for d in range(nd):
                if cfp_dims(a)[d] != dims[d]:
                    return False
    return True


cdef object _stacked(object arrays):
    """A new C-ordered array of the examples one after the other along a
    new first axis (what NumPy's concatenate of ``a[None]`` makes); None
    where NumPy's allocator is unavailable."""
    first = arrays[0]
    cdef int nd = cfp_nd(first), d
    cdef Py_ssize_t dims[33]
    cdef Py_ssize_t n = len(arrays), k
    cdef size_t nbytes = cfp_elsize(first)
    dims[0] = n
    for d in range(nd):
        dims[d + 1] = cfp_dims(first)[d]
        nbytes *= <size_t>cfp_dims(first)[d]
    out = new_shaped(first, nd + 1, dims)
    if out is None:
        return None
    cdef char *to = cfp_data(out)
    for k in range(n):
        memcpy(to + k * nbytes, cfp_data(arrays[k]), nbytes)
    return out


cdef object _padded(object arrays, object padding):
    """``_concat_arrays_with_padding``: NumPy's ``full`` of the smallest
    shape that holds every example, each example copied into its
    corner."""
    first = arrays[0]
    cdef int nd = cfp_nd(first), d
    cdef Py_ssize_t n = len(arrays), k
    cdef Py_ssize_t shape[32]
    for d in range(nd):
        shape[d] = 0
    for a in arrays:
        for d in range(nd):
            shape[d] = max(shape[d], cfp_dims(a)[d])
    out = _full((n,) + tuple([shape[d] for d in range(nd)]), padding,
                dtype=first.dtype)
    for k in range(n):
        _copy_corner(arrays[k], out, k)
    return out


cdef void _copy_corner(object src, object out, Py_ssize_t k):
    """``out[k][:s0, :s1, ...] = src`` for a C-contiguous ``src`` of
    ``out``'s dtype and ``out`` C-ordered: one ``memcpy`` per run of the
    last axis."""
    cdef int nd = cfp_nd(src), d
    cdef Py_ssize_t *dims = cfp_dims(src)
    cdef Py_ssize_t *strides = cfp_strides(out)
    cdef size_t run = cfp_elsize(src)
    cdef Py_ssize_t rows = 1
    cdef Py_ssize_t index[32]
    if nd > 0:
        run *= <size_t>dims[nd - 1]
    for d in range(nd - 1):
        rows *= dims[d]
        index[d] = 0
    if run == 0 or rows == 0:
        return
    cdef char *base = cfp_data(out) + k * strides[0]
    cdef char *read = cfp_data(src)
    cdef char *write
    cdef Py_ssize_t _r
    for _r in range(rows):
        write = base
        for d in range(nd - 1):
            write += index[d] * strides[d + 1]
        memcpy(write, read, run)
        read += run
        # The next row of src: its leading indexes counted up, last first.
        d = nd - 2
        while d >= 0:
            index[d] += 1
            if index[d] < dims[d]:
                break
            index[d] = 0
            d -= 1
