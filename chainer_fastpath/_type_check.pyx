# cython: boundscheck=True, wraparound=True
"""``config.type_check`` for the fast path: stock's check, stock's errors,
with a cache of checks that passed.

A check is cached only for the FunctionNode classes audited below: their
``check_type_forward`` reads nothing but the number, dtypes and shapes of the
inputs and the listed attributes of the node, so those make a complete key.
The cache is used only while the audited method is the one in force (not
replaced on the class or the instance). Everything else runs stock's check.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memcpy

import importlib

import numpy

from chainer import function_node

from chainer_fastpath._audit cimport StockMethods, method_is
from chainer_fastpath._ndarray cimport (
    builtin_typenum, cfp_dims, cfp_nd, layout_ok)

cdef type _ndarray = numpy.ndarray
cdef type _FunctionNode = function_node.FunctionNode
cdef object _base_check = _FunctionNode.check_type_forward
cdef object _base_check_data = _FunctionNode._check_data_type_forward
# The methods through which stock's ``apply`` runs a check.
cdef tuple _CHECK_METHODS = ('_check_data_type_forward', 'check_type_forward')

# (module, class, attributes its check_type_forward reads), from reading
# each check in Chainer 7.8.1.
AUDITED = (
    ('chainer.functions.math.basic_math', 'Add', ()),
    ('chainer.functions.math.basic_math', 'AddConstant', ()),
    ('chainer.functions.math.basic_math', 'Sub', ()),
    ('chainer.functions.math.basic_math', 'SubFromConstant', ()),
    ('chainer.functions.math.basic_math', 'Mul', ()),
    ('chainer.functions.math.basic_math', 'MulConstant', ()),
    ('chainer.functions.math.basic_math', 'Div', ()),
    ('chainer.functions.math.basic_math', 'Neg', ()),
    ('chainer.functions.math.basic_math', 'PowVarConst', ()),
    ('chainer.functions.math.exponential', 'Exp', ()),
    ('chainer.functions.math.matmul', 'MatMul', ('transa', 'transb')),
    ('chainer.functions.math.sum', 'Sum', ('axis',)),
    ('chainer.functions.connection.linear', 'LinearFunction', ()),
    ('chainer.functions.connection.embed_id', 'EmbedIDFunction', ()),
    ('chainer.functions.activation.relu', 'ReLU', ()),
    ('chainer.functions.activation.sigmoid', 'Sigmoid', ()),
    ('chainer.functions.activation.tanh', 'Tanh', ()),
    ('chainer.functions.array.concat', 'Concat', ('axis',)),
    ('chainer.functions.array.split_axis', 'SplitAxis',
     ('axis', 'indices', 'sections')),
    ('chainer.functions.array.reshape', 'Reshape', ('shape', '_cnt')),
    ('chainer.functions.array.transpose', 'Transpose', ()),
    ('chainer.functions.array.get_item', 'GetItem', ()),
    ('chainer.functions.array.broadcast', 'BroadcastTo', ('_shape',)),
    ('chainer.functions.noise.dropout', 'Dropout', ()),
    ('chainer.functions.loss.softmax_cross_entropy', 'SoftmaxCrossEntropy',
     ()),
    ('chainer.functions.loss.squared_error', 'SquaredError', ()),
    ('chainer.functions.rnn.lstm', 'LSTM', ()),
)

# class -> (its check methods, attribute names)
cdef dict _audited = {}
# key -> True for checks that passed
cdef dict _passed = {}
cdef Py_ssize_t _MAX_ENTRIES = 4096
DEF _KEY_BYTES = 512


def _load_audited():
    for module, name, attributes in AUDITED:
        cls = getattr(importlib.import_module(module), name)
        methods = StockMethods(cls, _CHECK_METHODS)
        # Audited as read: the base's data check calling the class's own.
        if methods.originals == (_base_check_data,
                                 cls.__dict__['check_type_forward']):
            _audited[cls] = (methods, attributes)


_load_audited()


def audited_classes():
    """The classes whose passed checks are cached: the rows of ``AUDITED``
    whose check is still the one read."""
    return frozenset(_audited)


def clear_cache():
    """Forgets every cached check."""
    _passed.clear()


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
    entry = _audited.get(cls)
    if entry is None:
        if (method_is(node, '_check_data_type_forward', _base_check_data)
                and method_is(node, 'check_type_forward', _base_check)):
            return 0    # stock runs the base class's empty check
        node._check_data_type_forward(in_data)
        return 0
    if not (<StockMethods>(<tuple>entry)[0]).found_by(node):
        node._check_data_type_forward(in_data)
        return 0
    key = _key(cls, (<tuple>entry)[1], node, in_data)
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
