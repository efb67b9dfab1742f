# cython: boundscheck=True, wraparound=True
"""``TupleDataset`` and ``DictDataset`` indexing and length, compiled.

The replacements read the same attributes and index the same underlying
datasets with the same index objects, in stock's order, so a dataset of
user objects sees the very calls it sees under stock. ``rows_of`` is the
iterator's lane: a whole batch of a ``TupleDataset`` of NumPy arrays read
by a NumPy array of indices, each row an array's ``sq_item`` (what NumPy
runs for ``x[i]``), without a Python frame per example.
"""
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

import numpy

from chainer.datasets import dict_dataset
from chainer.datasets import tuple_dataset

from chainer_fastpath._core._audit cimport class_finds
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, canonical, cfp_data, cfp_dims, cfp_flags, cfp_nd,
    cfp_strides, cfp_typenum, numpy_struct_matches)
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef extern from *:
    """
    /* What ``x[i]`` runs for a NumPy array and an in-range integer: its
       sequence slot (a view, or a scalar of a 1-d array). */
    static PyObject *cfp_sq_item(PyObject *x, Py_ssize_t i) {
        return Py_TYPE(x)->tp_as_sequence->sq_item(x, i);
    }
    """
    object cfp_sq_item(object x, Py_ssize_t i)

cdef type _ndarray = numpy.ndarray
cdef type _TupleDataset = tuple_dataset.TupleDataset
cdef type _DictDataset = dict_dataset.DictDataset
cdef int _INTP = numpy.dtype(numpy.intp).num

cdef class _Row:
    """One row's counters, parameters and original."""
    cdef EntryStats stats
    cdef Signature signature
    cdef object original

    def __init__(self, str name, tuple names):
        self.stats = _stats.entry(name)
        self.signature = Signature(names)

    cdef tuple bound(self, tuple args, dict kwargs):
        """The call's arguments, counted fast; None (counted) where Python
        would reject them, and the original must run."""
        cdef tuple values = self.signature.bind(args, kwargs)
        if values is None:
            self.stats.fallback(self.signature.mismatch)
        else:
            self.stats.fast += 1
        return values


cdef _Row _tuple_getitem = _Row('TupleDataset.__getitem__', ('self', 'index'))
cdef _Row _tuple_len = _Row('TupleDataset.__len__', ('self',))
cdef _Row _dict_getitem = _Row('DictDataset.__getitem__', ('self', 'index'))
cdef _Row _dict_len = _Row('DictDataset.__len__', ('self',))
# The getitems ``rows_of`` stands for: stock's and this module's.
cdef object _stock_tuple_item = _TupleDataset.__dict__['__getitem__']


TARGETS = ((_TupleDataset, '__getitem__'), (_TupleDataset, '__len__'),
           (_DictDataset, '__getitem__'), (_DictDataset, '__len__'))


def bind(owner, attribute, original):
    """Keeps the stock method to fall back to; returns its replacement."""
    row, replacement = {
        (_TupleDataset, '__getitem__'): (_tuple_getitem, tuple_getitem),
        (_TupleDataset, '__len__'): (_tuple_len, tuple_len),
        (_DictDataset, '__getitem__'): (_dict_getitem, dict_getitem),
        (_DictDataset, '__len__'): (_dict_len, dict_len),
    }[owner, attribute]
    (<_Row>row).original = original
    return replacement


def tuple_getitem(*args, **kwargs):
    """Drop-in for ``TupleDataset.__getitem__``."""
    cdef tuple values = _tuple_getitem.bound(args, kwargs)
    if values is None:
        return _tuple_getitem.original(*args, **kwargs)
    return tuple_item(values[0], values[1])


def dict_getitem(*args, **kwargs):
    """Drop-in for ``DictDataset.__getitem__``."""
    cdef tuple values = _dict_getitem.bound(args, kwargs)
    if values is None:
        return _dict_getitem.original(*args, **kwargs)
    return _dict_item(values[0], values[1])


def tuple_len(*args, **kwargs):
    """Drop-in for ``TupleDataset.__len__``: its ``_length``."""
    cdef tuple values = _tuple_len.bound(args, kwargs)
    if values is None:
        return _tuple_len.original(*args, **kwargs)
    return values[0]._length


def dict_len(*args, **kwargs):
    """Drop-in for ``DictDataset.__len__``: its ``_length``."""
    cdef tuple values = _dict_len.bound(args, kwargs)
    if values is None:
        return _dict_len.original(*args, **kwargs)
    return values[0]._length


cdef object tuple_item(object self, object index):
    """``TupleDataset.__getitem__(self, index)``: each dataset indexed in
    turn, then one tuple, or one tuple per example of a slice."""
    cdef list batches = [dataset[index] for dataset in self._datasets]
    if isinstance(index, slice):
        length = len(batches[0])
        return [tuple([batch[i] for batch in batches])
                for i in range(length)]
    return tuple(batches)


cdef object _dict_item(object self, object index):
    """``DictDataset.__getitem__(self, index)``."""
    cdef dict batches = {key: dataset[index]
                         for key, dataset in iter(self._datasets.items())}
    if isinstance(index, slice):
        length = len(next(iter(batches.values())))
        return [{key: batch[i] for key, batch in iter(batches.items())}
                for i in range(length)]
    return batches


cdef bint item_is_compiled(object cls):
    """Whether ``cls[...]`` runs ``TupleDataset.__getitem__`` as stock
    has it or as this module replaces it (on ``cls`` exactly)."""
    return cls is _TupleDataset and (
        class_finds(cls, '__getitem__', tuple_getitem)
        or class_finds(cls, '__getitem__', _stock_tuple_item))


cdef list rows_of(object dataset, object indices):
    """``[dataset[i] for i in indices]`` where ``dataset`` is a
    ``TupleDataset`` of NumPy arrays (no user code runs to index them) and
    ``indices`` a 1-d intp array whose every index is within every array;
    None otherwise, before anything was read that a user could see."""
    if (type(indices) is not _ndarray or not numpy_struct_matches()
            or type(dataset) is not _TupleDataset
            or not item_is_compiled(_TupleDataset)):
        return None
    datasets = dataset._datasets
    if type(datasets) is not tuple or not datasets:
        return None
    if (cfp_nd(indices) != 1 or cfp_typenum(indices) != _INTP
            or not canonical(indices)
            or not cfp_flags(indices) & CFP_NPY_ALIGNED):
        return None
    cdef Py_ssize_t n_index = cfp_dims(indices)[0]
    cdef Py_ssize_t step = cfp_strides(indices)[0]
    cdef char *at = cfp_data(indices)
    cdef Py_ssize_t n_data = len(<tuple>datasets), j, k
    cdef Py_ssize_t low = PY_SSIZE_T_MAX
    for x in <tuple>datasets:
        if type(x) is not _ndarray or cfp_nd(x) < 1:
            return None
        low = min(low, cfp_dims(x)[0])
    cdef Py_ssize_t i
    for k in range(n_index):
        i = (<Py_ssize_t *>(at + k * step))[0]
        if i < 0 or i >= low:
            return None
    cdef list batch = PyList_New(n_index)
    cdef tuple row
    for k in range(n_index):
        i = (<Py_ssize_t *>(at + k * step))[0]
        row = PyTuple_New(n_data)
        for j in range(n_data):
            item = cfp_sq_item((<tuple>datasets)[j], i)
            Py_INCREF(item)
            PyTuple_SET_ITEM(row, j, item)
        Py_INCREF(row)
        PyList_SET_ITEM(batch, k, row)
    return batch
