"""Variables and VariableNodes built without their Python ``__init__``.

Each function leaves exactly the instance state the stock constructor would
(the same ``__dict__`` keys, in the same order, with the same values).
"""
from cpython.object cimport PyObject, PyTypeObject
from cpython.weakref cimport PyWeakref_NewRef

import sys

import numpy

from chainer import variable

from chainer_fastpath._core import _attrs
from chainer_fastpath._core import _stores

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, set_site)

from chainer_fastpath._core._ndarray cimport (
    cfp_descr_of, cfp_dims, cfp_nd, numpy_struct_matches)

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)
    PyObject *_PyType_Lookup(PyTypeObject *tp, object name)

cdef type _Variable = variable.Variable
cdef type _VariableNode = variable.VariableNode
cdef tuple _NO_ARGS = ()
cdef type _ndarray = numpy.ndarray

cfp_attr_enable(_attrs.FAST)

# Whether the attributes of new Variables go in through ``_stores``'
# bytecode, which the interpreter specializes from 3.11 (measured: faster
# there than generic stores from C, slower on 3.8); stores from here where
# the cached stores of ``_attrs.h`` serve, or before 3.11.
cdef bint _bytecode_stores = (sys.version_info >= (3, 11)
                              and not _attrs.FAST)
cdef object _store_variable = _stores.variable


def _use_bytecode_stores(flag):
    """Chooses how new Variables get their attributes (for the tests,
    which check both ways); returns the previous choice."""
    global _bytecode_stores
    previous = _bytecode_stores
    _bytecode_stores = flag
    return previous


cdef object dtype_of(object data):
    """``data.dtype``: for an ndarray, its descr, which is what the
    attribute returns."""
    if type(data) is _ndarray and numpy_struct_matches():
        return <object>cfp_descr_of(data)
    return data.dtype


cdef object bare(type cls):
    """``object.__new__(cls)`` through the type's own slot."""
    return (<PyTypeObject*>cls).tp_new(cls, <PyObject*>_NO_ARGS, NULL)


cdef extern from *:
    """
    /* Whether ``cls()`` runs nothing but object's own __new__ and __init__:
     * a class of the plain metaclass whose slots are object's (a __new__
     * or __init__ defined, or assigned later, anywhere in the MRO replaces
     * them). */
    static inline int cfp_constructs_plainly(PyObject *cls) {
        PyTypeObject *tp = (PyTypeObject *)cls;
        return (Py_TYPE(cls) == &PyType_Type
                && tp->tp_new == PyBaseObject_Type.tp_new
                && tp->tp_init == PyBaseObject_Type.tp_init);
    }
    """
    bint cfp_constructs_plainly(object cls)


cdef extern from *:
    """
    /* Whether an instance of ``cls`` dies without running code of its own:
     * no __del__ (a finalizer slot) anywhere in the MRO. */
    static inline int cfp_dies_quietly(PyObject *cls) {
        PyTypeObject *tp = (PyTypeObject *)cls;
        return tp->tp_finalize == NULL && tp->tp_del == NULL;
    }
    """
    bint cfp_dies_quietly(object cls)


cdef bint constructs_plainly(object cls):
    """Whether ``cls()`` runs nothing but object's own ``__new__`` and
    ``__init__``, and its instances have no ``__del__``: making one and
    dropping it runs no code of the class."""
    return cfp_constructs_plainly(cls) and cfp_dies_quietly(cls)


cdef object construct(object cls):
    """``cls()``: for a class constructed by object's own slots, the
    instance made by its __new__ directly."""
    if cfp_constructs_plainly(cls):
        return _bare(<type>cls)
    return cls()


cdef inline object _bare(type cls):
    return (<PyTypeObject*>cls).tp_new(cls, <PyObject*>_NO_ARGS, NULL)


cdef object construct_valued(object cls, object value, object init):
    """``cls(value)`` for a class whose ``__init__`` is ``init``, which
    only does ``self.value = value`` (``AddConstant``'s and its kind):
    where the class's ``__init__`` is that very function, and its
    ``__new__`` and metaclass plain, the instance made by its __new__ and
    given ``value`` directly, without running ``init``'s frame."""
    cdef PyTypeObject *tp = <PyTypeObject *>cls
    if (init is not None and type(cls) is type
            and tp.tp_new == (<PyTypeObject *>object).tp_new
            and cfp_dies_quietly(cls)
            and _PyType_Lookup(tp, '__init__') == <PyObject *>init):
        node = _bare(<type>cls)
        put(node, &_set_value, value)
        return node
    return cls(value)


# The stores of new Variables and VariableNodes (``_attrs.h``), one cache
# per name: where a name is both a Variable's and a node's, its cache holds
# both classes.
cdef cfp_attr _set_variable = set_site('_variable')
cdef cfp_attr _set_name = set_site('name')
cdef cfp_attr _set_requires_grad = set_site('_requires_grad')
cdef cfp_attr _set_layout = set_site('_layout')
cdef cfp_attr _set_dtype = set_site('dtype')
cdef cfp_attr _set_shape = set_site('shape')
cdef cfp_attr _set_creator_node = set_site('_creator_node')
cdef cfp_attr _set_rank = set_site('_rank')
cdef cfp_attr _set_loss_scale = set_site('_loss_scale')
cdef cfp_attr _set_grad_var = set_site('_grad_var')
cdef cfp_attr _set_device = set_site('_device')
cdef cfp_attr _set_grad_valid = set_site('_grad_valid')
cdef cfp_attr _set_data = set_site('_data')
cdef cfp_attr _set_node = set_site('_node')
cdef cfp_attr _set_grad = set_site('_grad')
cdef cfp_attr _set_value = set_site('value')
cdef cfp_attr _get_data = get_site('_data')


# Every name stock gives the instances of a class, in the order it gives
# them. A VariableNode: its constructor's, ``set_creator_node``'s,
# ``retain_data``'s, and an old-style Function's mark on the gradients it
# makes. A Variable: its constructor's (``_chainerx_name`` for a ChainerX
# array), then what setting an array leaves. A Parameter: a Variable's, its
# constructor's, and ``update_rule``, which an optimizer's ``setup`` gives
# the Parameters of a model made before.
NODE_NAMES = ('_variable', 'name', '_requires_grad', '_layout', 'dtype',
              'shape', '_creator_node', '_rank', '_data',
              '_old_style_grad_generator')
VARIABLE_NAMES = ('_requires_grad', '_loss_scale', '_grad_var', '_device',
                  '_grad_valid', '_layout', '_chainerx_name', '_data',
                  '_node', '_grad', '_has_chainerx_array',
                  '_chainerx_nobp_array_cache', '_chainerx_grad_cache',
                  '_chainerx_fallback_array')
PARAMETER_NAMES = VARIABLE_NAMES + (
    '_grad_initializer', '_initial_device', 'update_rule', 'initializer')
LATE_NAMES = ((_VariableNode, NODE_NAMES), (_Variable, VARIABLE_NAMES),
              (variable.Parameter, PARAMETER_NAMES))


def reserve_keys():
    """Gives every name of :data:`LATE_NAMES` a slot in its class's shared
    key table (``_attrs.reserve``) where the table has room; returns the
    classes whose table does not hold all their names.

    A model's Parameters and their nodes are made before any node gets a
    creator, or any Parameter an update rule; by then the tables' room is
    spent, and every node of a graph moves its attributes into a dict of
    its own when it gets ``_rank`` (one more object per node for the cyclic
    collector to count and traverse), and every Parameter when it gets
    ``update_rule`` (a dict lookup per read of its array). With the names
    reserved first, they keep them in their values array. Best done before
    the program makes its Variables, as ``enable()`` does."""
    short = []
    for cls, names in LATE_NAMES:
        keys = _attrs.shared_keys(cls)
        if keys is None:
            continue
        if not set(names) <= set(keys[0]):
            keys = _attrs.reserve(cls, names)
        if not set(names) <= set(keys[0]):
            short.append(cls)
    return short


cdef object node_data(object node):
    """``node.data``: for a VariableNode the property only returns
    ``_data``, which is read directly."""
    if type(node) is _VariableNode:
        return get(node, &_get_data)
    return node.data


cdef object weak_ref(object obj):
    """``weakref.ref(obj)``, left out of the cyclic collector's lists.

    A weak reference without a callback refers to nothing the collector
    follows, so it can never be part of a cycle; CPython tracks it anyway.
    The graph keeps two per operation alive until backward, and each one
    tracked lengthens every collection and hastens the full ones.
    """
    ref = PyWeakref_NewRef(obj, None)
    PyObject_GC_UnTrack(<void *>ref)
    return ref


cdef tuple untracked_refs(tuple refs):
    """``refs``, a tuple of weak references made by :func:`weak_ref`, left
    out of the cyclic collector's lists as well: it refers to nothing the
    collector follows. (CPython untracks a tuple at a collection once its
    items cannot be tracked; a weak reference always could be, to it.)"""
    PyObject_GC_UnTrack(<void *>refs)
    return refs


# The shapes of recent arrays, handed out again by shape_of (the empty
# tuple is a 0-d array's shape, so it can stand for "none yet").
cdef list _shapes = [()] * 8
cdef Py_ssize_t _next_shape = 0


cdef object shape_of(object data):
    """``data.shape``; for an ndarray whose shape equals a recent one, that
    recent tuple. A VariableNode keeps its array's shape, and a new tuple
    per node is one more object that brings the cyclic collector's next
    collection closer, and with it the next full one; a tuple of ints is
    immutable, so handing one out twice is unobservable."""
    global _next_shape
    if type(data) is not _ndarray or not numpy_struct_matches():
        return data.shape
    cdef int nd = cfp_nd(data)
    cdef Py_ssize_t *dims = cfp_dims(data)
    cdef Py_ssize_t i, k
    cdef tuple t
    for i in range(8):
        t = <tuple>_shapes[i]
        if len(t) != nd:
            continue
        for k in range(nd):
            if <Py_ssize_t>t[k] != dims[k]:
                break
        else:
            return t
    shape = data.shape
    _shapes[_next_shape] = shape
    _next_shape = (_next_shape + 1) % 8
    return shape


cdef object new_variable(object data, bint requires_grad, object creator,
                         object rank):
    """``Variable(data, requires_grad=requires_grad)`` for a NumPy array,
    then, when ``creator`` is not None, ``y.creator_node = creator`` (whose
    rank is ``rank``) as stock ``apply`` does for its outputs.

    Attributes are set one by one, in the constructors' order, so that the
    instances share their class's key table as constructed ones do (less
    memory than a dict of their own): from 3.11 by ``_stores``' bytecode."""
    cdef object var = _bare(_Variable)
    cdef object node = _bare(_VariableNode)
    if _bytecode_stores:
        _store_variable(var, node, weak_ref(var), requires_grad,
                        dtype_of(data), shape_of(data), data, creator, rank)
        return var
    put(node, &_set_variable, weak_ref(var))
    put(node, &_set_name, None)
    put(node, &_set_requires_grad, requires_grad)
    put(node, &_set_layout, None)
    put(node, &_set_dtype, dtype_of(data))
    put(node, &_set_shape, shape_of(data))
    if creator is not None:
        put(node, &_set_creator_node, creator)
        put(node, &_set_rank, rank + 1)
    put(var, &_set_requires_grad, requires_grad)
    put(var, &_set_loss_scale, None)
    put(var, &_set_grad_var, None)
    put(var, &_set_device, None)
    put(var, &_set_grad_valid, True)
    put(var, &_set_layout, None)
    put(var, &_set_data, [data])
    put(var, &_set_node, node)
    put(var, &_set_grad, None)
    return var
