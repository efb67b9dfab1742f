# cython: boundscheck=True, wraparound=True
"""``config.type_check`` for the fast path: stock's check, stock's errors,
with a cache of checks that passed.

A check is cached only for the classes whose registry entry carries a
type-check key (``Compiled.check_attributes``): their
``check_type_forward`` reads nothing but the number, dtypes and shapes of
the inputs and the listed attributes of the node, so those make a complete
key. The cache is used only while the audited method is the one in force
(not replaced on the class or the instance). Everything else runs stock's
check. A class whose inputs' shapes vary from call to call (a batch of
sentences) may also have a checker (``Compiled.checker``), which makes the
comparisons of its ``check_type_forward`` in C, under the same audit, and
leaves what it cannot decide to the cache and to stock's check.
"""
from cpython.bytes cimport (
    PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE)
from libc.string cimport memcmp, memcpy

import numpy

from chainer import function_node

from cpython.object cimport PyObject

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, get_site)
from chainer_fastpath._core._audit cimport method_is
from chainer_fastpath._core._ndarray cimport (
    builtin_typenum, cfp_dims, cfp_nd, numpy_struct_matches)
from chainer_fastpath._core._registry cimport Compiled, lookup
from chainer_fastpath._core import _registry

cdef type _ndarray = numpy.ndarray
cdef type _FunctionNode = function_node.FunctionNode
cdef object _base_check = _FunctionNode.check_type_forward
cdef object _base_check_data = _FunctionNode._check_data_type_forward

cfp_attr_enable(_attrs.FAST)

# key -> True for checks that passed
cdef dict _passed = {}
cdef Py_ssize_t _MAX_ENTRIES = 4096
# A key's inputs part holds up to 4 KB: a concat of a batch's sentences,
# one 2-d input per time step, has up to 170 of them. The cache holds at
# most _MAX_HELD bytes of such parts (4,096 keys of 4 KB would be 16 MB).
DEF _KEY_BYTES = 4096
cdef Py_ssize_t _MAX_HELD = 1 << 22
cdef Py_ssize_t _held = 0


def audited_classes():
    """The classes whose passed checks are cached."""
    return frozenset([cls for cls, entry in _registry.registered().items()
                      if entry.check_methods is not None])


# The node attributes in the keys are a handful of names (``axis``,
# ``keepdims``...), read on every call: one attribute cache per name.
cdef enum:
    _N_SITES = 16
cdef cfp_attr _sites[_N_SITES]
cdef int _n_sites = 0


cdef object _attribute(object node, str name):
    """``getattr(node, name)`` for an interned ``name``, through its
    cache."""
    global _n_sites
    cdef int i
    for i in range(_n_sites):
        if _sites[i].name == <PyObject *>name:
            return get(node, &_sites[i])
    if _n_sites == _N_SITES:
        return getattr(node, name)
    _sites[_n_sites] = get_site(name)
    _n_sites += 1
    return get(node, &_sites[_n_sites - 1])


cdef inline Py_ssize_t _pack(type cls, tuple in_data, char *buf) except -2:
    """Writes the part of the cache key the inputs make into ``buf``: the
    class, then each input's dtype number and shape. Returns its size, or
    -1 when an input cannot be keyed."""
    cdef Py_ssize_t size = sizeof(void *), n_dims
    cdef int num, nd
    if not numpy_struct_matches():
        return -1
    (<void **>buf)[0] = <void *>cls
    for a in in_data:
        if type(a) is not _ndarray:
            return -1
        # A builtin dtype in native byte order is named by its number.
        num = builtin_typenum(a)
        nd = cfp_nd(a)
        n_dims = nd * sizeof(Py_ssize_t)
        if num < 0 or size + 2 * sizeof(int) + n_dims > _KEY_BYTES:
            return -1
        memcpy(buf + size, &num, sizeof(int))
        memcpy(buf + size + sizeof(int), &nd, sizeof(int))
        if n_dims:  # a 0-d array's dims may be NULL, even for no bytes
            memcpy(buf + size + 2 * sizeof(int), cfp_dims(a), n_dims)
        size += 2 * sizeof(int) + n_dims
    return size


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
    if entry.checker is not NULL and entry.checker(node, in_data):
        return 0
    cdef char buf[_KEY_BYTES]
    cdef Py_ssize_t size = _pack(cls, in_data, buf)
    cdef tuple attributes = entry.check_attributes
    key = None
    if size >= 0:
        if (_is_memo(entry.passed_memo, buf, size)
                and (not attributes
                     or _same_values(node, attributes, entry.passed_values))):
            return 0
        key = PyBytes_FromStringAndSize(buf, size)
        if attributes:
            key = (key,) + tuple([_attribute_key(_attribute(node, name))
                                  for name in attributes])
    if key is not None:
        try:
            if key in _passed:
                _remember(entry, key)
                return 0
        except TypeError:   # an attribute value that cannot be hashed
            key = None
    node._check_data_type_forward(in_data)
    if key is not None:
        _keep(key, size)
        _remember(entry, key)
    return 0


cdef inline void _keep(object key, Py_ssize_t size):
    global _held
    if len(_passed) >= _MAX_ENTRIES or _held + size > _MAX_HELD:
        _passed.clear()
        _held = 0
    _passed[key] = True
    _held += size


def held():
    """``(keys, bytes)`` the cache holds; for the tests."""
    return len(_passed), _held


cdef inline bint _is_memo(bytes memo, char *buf, Py_ssize_t size):
    # Whether the inputs' key part in ``buf`` is the class's last passed
    # one (``Compiled.passed_memo``).
    return (memo is not None and PyBytes_GET_SIZE(memo) == size
            and memcmp(PyBytes_AS_STRING(memo), buf, size) == 0)


cdef bint passed_before(Compiled entry, tuple in_data) except -1:
    """Whether the check of ``entry.cls``, a class whose key has no node
    attributes, passed before for inputs of ``in_data``'s dtypes and
    shapes: then stock's check would pass again, and no node is needed to
    run it."""
    cdef char buf[_KEY_BYTES]
    if entry.check_methods is None or entry.check_attributes:
        return False
    cdef Py_ssize_t size = _pack(entry.cls, in_data, buf)
    if size < 0:
        return False
    if _is_memo(entry.passed_memo, buf, size):
        return True
    key = PyBytes_FromStringAndSize(buf, size)
    if key in _passed:
        _remember(entry, key)
        return True
    return False


cdef object _attribute_key(object value):
    """``value`` as part of a key, with its type, and its items' where it
    is a list or tuple (SplitAxis keeps its indices in a list): values that
    compare equal may not pass a check alike (``1``, ``1.0`` and ``True``
    are one dict key, but ``1.0 ^ True`` raises)."""
    cdef type t = type(value)
    if t is list or t is tuple:
        return t, tuple([_attribute_key(v) for v in value])
    return t, value


cdef inline void _remember(Compiled entry, object key):
    # The class's last passed inputs, compared without hashing: a loop
    # calls a function with the same inputs' dtypes and shapes again and
    # again; with its attributes' values where they are ints or None.
    if type(key) is bytes:
        entry.passed_memo = key
        return
    cdef tuple values = tuple([v[1] for v in (<tuple>key)[1:]])
    for v in values:
        if v is not None and type(v) is not int:
            return
    entry.passed_memo = (<tuple>key)[0]
    entry.passed_values = values


cdef bint _same_values(object node, tuple names, tuple values) except -1:
    """Whether the attributes ``names`` of ``node`` are the ``values`` (ints
    or None) as a key compares them, read as the key's are."""
    cdef Py_ssize_t i
    if values is None:
        return False
    for i in range(len(names)):
        v = _attribute(node, <str>names[i])
        w = values[i]
        if v is not w and not (type(v) is int and type(w) is int and v == w):
            return False
    return True
