# cython: boundscheck=True, wraparound=True
"""Compiled ``SplitAxis``: forward and backward on NumPy arrays, and
``F.split_axis``."""
import numpy

import chainer.functions
from chainer.functions.array import concat
from chainer.functions.array import split_axis

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport grad_array, grad_requires_grad
from chainer_fastpath._core._ndarray cimport (
    cfp_dims, cfp_nd, numpy_struct_matches)
from chainer_fastpath._core._objects cimport bare
from chainer_fastpath._core._registry cimport NOT_HANDLED, checked, compiled
from chainer_fastpath._runtime._public cimport Public

cdef type _ndarray = numpy.ndarray

cdef object _split = numpy.split
cdef object _integer = numpy.integer


cdef object _forward(object node, tuple inputs, ConfigView config):
    # SplitAxis.forward, iDeep unavailable: numpy.split(x, indices or
    # sections, axis), whose array_split takes the views
    # swapaxes(swapaxes(x, axis, 0)[start:stop], axis, 0), the same views
    # as x[..., start:stop, ...]. Integer offsets and sections only; what
    # numpy.split would reject goes to stock, to raise there.
    if len(inputs) != 1 or numpy.split is not _split:
        return NOT_HANDLED
    x = inputs[0]
    axis = node.axis
    cdef Py_ssize_t ndim = x.ndim
    if type(axis) is not int or not -ndim <= axis < ndim:
        return NOT_HANDLED
    cdef Py_ssize_t ax = axis
    if ax < 0:
        ax += ndim
    if ax < 0 or ax >= ndim:
        return NOT_HANDLED
    n = x.shape[ax]
    cdef list points
    cdef Py_ssize_t i, each, sections
    indices = node.indices
    if indices is not None:
        # array_split: [0] + list(indices) + [n].
        points = [0]
        for p in indices:
            if type(p) is not int and not isinstance(p, _integer):
                return NOT_HANDLED
            points.append(p)
        points.append(n)
    else:
        if type(node.sections) is not int or not 0 < node.sections < n + 1:
            return NOT_HANDLED   # stock's error, or a count C cannot hold
        sections = node.sections
        if sections <= 0 or n % sections:
            return NOT_HANDLED
        each = n // sections
        points = [i * each for i in range(sections + 1)]
    node._xp = numpy
    cdef tuple lead = (slice(None),) * ax
    cdef list ret = []
    for i in range(len(points) - 1):
        ret.append(x[lead + (slice(points[i], points[i + 1]),)])
    node._shapes = [r.shape for r in ret]
    return tuple(ret)


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # SplitAxis.backward: F.concat of the gradients, zeros for missing ones.
    dtype = func.inputs[0].dtype
    arrays = []
    cdef bint rg = False
    for gy_var, shape in zip(grad_outputs, func._shapes):
        if gy_var is None:
            arrays.append(func._xp.zeros(shape, dtype=dtype))
            continue
        gy = grad_array(gy_var)
        if gy is None:
            return NOT_HANDLED
        arrays.append(gy)
        if grad_requires_grad(gy_var):
            rg = True
    return (apply_detached(concat.Concat(func.axis), tuple(arrays), rg)[0],)


# -- F.split_axis ------------------------------------------------------------

TARGETS = ((split_axis, 'split_axis'), (chainer.functions, 'split_axis'))

cdef Public _split_axis = Public(
    'split_axis.split_axis', split_axis,
    ('x', 'indices_or_sections', 'axis', 'force_tuple'), (True,))
cdef type _SplitAxis = split_axis.SplitAxis
cdef StockMethods _split_axis_init = StockMethods(_SplitAxis, ('__init__',))
cdef object _get_indices_or_sections = split_axis._get_indices_or_sections


def bind(owner, attribute, original):
    """Keeps stock's ``split_axis`` to fall back to; returns its
    replacement."""
    return _split_axis.bind(split_axis_, original)


cdef object _node(object cls, object indices_or_sections, object axis):
    """``cls(indices_or_sections, axis)``; for stock's SplitAxis and an int
    or a list or tuple, the instance its ``__init__`` leaves, built here
    (outside debug mode, where it also checks that indices are sorted and
    where the caller does not apply this node)."""
    cdef type t = type(indices_or_sections)
    if (cls is not _SplitAxis or not (t is int or t is list or t is tuple)
            or not _split_axis_init.on_class()
            or _split_axis.read_global('_get_indices_or_sections')
            is not _get_indices_or_sections):
        return cls(indices_or_sections, axis)
    node = bare(_SplitAxis)
    if t is int:
        node.indices = None
        node.sections = indices_or_sections
    else:
        node.indices = list(indices_or_sections)
        node.sections = None
    node.axis = axis
    return node


def split_axis_(*args, **kwargs):
    """Drop-in for ``F.split_axis``: ``SplitAxis(indices_or_sections,
    axis).apply((x,))``, its only output where not ``force_tuple``, the
    class read from its module as stock reads it."""
    cdef tuple values = _split_axis.arguments(args, kwargs)
    if values is not None:
        x, indices_or_sections, axis, force_tuple = values
        cls = _split_axis.read_global('SplitAxis')
        if cls is not None:
            res = _split_axis.apply_all(
                _node(cls, indices_or_sections, axis), (x,))
            if res is not None:
                if force_tuple or len(res) != 1:
                    return res
                return res[0]
    return _split_axis.stock(args, kwargs)


cdef bint _check(object node, tuple inputs) except -1:
    # SplitAxis.check_type_forward: one input, ndim > axis, and its length
    # along axis (Python's index of its shape) at least the last index, or
    # a multiple of the sections. Indices of an ndarray, and what stock's
    # check would raise on, are left to it.
    if len(inputs) != 1 or not numpy_struct_matches():
        return False
    x = inputs[0]
    axis = node.axis
    if type(x) is not _ndarray or type(axis) is not int:
        return False
    cdef int nd = cfp_nd(x)
    if not -nd <= axis < nd:
        return False
    cdef Py_ssize_t size = cfp_dims(x)[axis + nd if axis < 0 else axis]
    indices = node.indices
    if indices is not None:
        if type(indices) is not list:
            return False
        if not indices:
            return True
        last = indices[-1]
        return type(last) is int and size >= last
    sections = node.sections
    if type(sections) is not int or sections <= 0:
        return False
    return size % sections == 0


ENTRIES = (
    checked(compiled(
        split_axis.SplitAxis, _forward, ('forward', 'indices_or_sections'),
        _backward, backward_callees=(
            (chainer.functions, 'concat'),
            (concat.Concat, '__init__'),
            (concat.Concat, 'check_type_forward'),
            (concat.Concat, 'forward')),
        type_check=('axis', 'indices', 'sections')), _check),
)
