# cython: boundscheck=True, wraparound=True
"""``config.type_check`` for the fast path: stock's check, stock's errors,
with a cache of checks that passed.

A check is cached only for the classes whose registry entry carries a
type-check key (``Compiled.check_attributes``): their ``check_type_forward``
reads nothing but the number, dtypes and shapes of the inputs and the listed
attributes of the node, so those make a complete key. The cache is used only
while the audited method is the one in force (not replaced on the class or
the instance). Everything else runs stock's check.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memcpy

import numpy

from chainer import function_node

from chainer_fastpath._core._audit cimport method_is
from chainer_fastpath._core._ndarray cimport (
    builtin_typenum, cfp_dims, cfp_nd, layout_ok)
from chainer_fastpath._core._registry cimport Compiled, lookup
from chainer_fastpath._core import _registry

cdef type _ndarray = numpy.ndarray
cdef type _FunctionNode = function_node.FunctionNode
cdef object _base_check = _FunctionNode.check_type_forward
cdef object _base_check_data = _FunctionNode._check_data_type_forward

# key -> True for checks that passed
cdef dict _passed = {}
cdef Py_ssize_t _MAX_ENTRIES = 4096
DEF _KEY_BYTES = 512


def audited_classes():
    """The classes whose passed checks are cached."""
    return frozenset([cls for cls, entry in _registry.registered().items()
                      if entry.check_methods is not None])


cdef object _key(type cls, tuple attributes, object node, tuple in_data):
    """The cache key, or None when an input cannot be keyed: the class, then
    each input's dtype number and shape packed in bytes, then the values of
    ``attributes``."""
    cdef char buf[_KEY_BYTES]
    cdef Py_ssize_t size = sizeof(void *), n_dims
    cdef int num, nd
    if not layout_ok():
        return None
    (<void **>buf)[0] = <void *>cls
    for a in in_data:
        if type(a) is not _ndarray:
            return None
        # A builtin dtype in native byte order is named by its number.
        num = builtin_typenum(a)
        nd = cfp_nd(a)
        n_dims = nd * sizeof(Py_ssize_t)
        if num < 0 or size + 2 * sizeof(int) + n_dims > _KEY_BYTES:
            return None
        memcpy(buf + size, &num, sizeof(int))
        memcpy(buf + size + sizeof(int), &nd, sizeof(int))
        memcpy(buf + size + 2 * sizeof(int), cfp_dims(a), n_dims)
        size += 2 * sizeof(int) + n_dims
    key = PyBytes_FromStringAndSize(buf, size)
    if not attributes:
        return key
    return (key,) + tuple([getattr(node, name) for name in attributes])


cdef int check_types(object node, tuple in_data) except -1:
    """Runs ``node``'s forward type check on NumPy ``in_data``.

    ``node._input_layouts`` must already be set, as stock ``apply`` does.
    """
    cdef type cls = type(node)
    cdef Compiled entry = lookup(cls)
    if entry is None or entry.check_methods is None:
        if (method_is(node, '_check_data_type_forward', _base_check_data)
                and method_is(node, 'check_type_forward', _base_check)):
            return 0    # stock runs the base class's empty check
        node._check_data_type_forward(in_data)
        return 0
    if not entry.check_methods.found_by(node):
        node._check_data_type_forward(in_data)
        return 0
    key = _key(cls, entry.check_attributes, node, in_data)
    if key is not None:
        try:
            if key in _passed:
                return 0
        except TypeError:   # an attribute value that cannot be hashed
            key = None
    node._check_data_type_forward(in_data)
    if key is not None:
        if len(_passed) >= _MAX_ENTRIES:
            _passed.clear()
        _passed[key] = True
    return 0
