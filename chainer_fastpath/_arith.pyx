"""Fast path for ``F.add`` and the Variable operators ``+``, ``-``, ``*``
with a Variable or a Python number on the right (``*`` also with a NumPy
array), and ``number - Variable``.

Stock's ``add``/``sub``/``mul`` (chainer/functions/math/basic_math.py) first
ask ``numpy.isscalar(rhs)``, whose ``numbers.Number`` check costs more than
the rest of a small op, then ``_preprocess_rhs``, which returns a Variable
unchanged. For an exact ``Variable`` or ``Parameter`` on the right the
answers are known (not a scalar; returned as is), and for an exact ``int``
or ``float`` too (a scalar), so this path applies the same FunctionNode
directly; a NumPy scalar (``numpy.generic``) is a scalar too. An exact
``numpy.ndarray``, 0-d included, is not a scalar: it is converted as stock's
``_preprocess_rhs`` converts it (``_rhs_array``; the helper itself where it
or what it calls was replaced), for ``+``, ``-``, ``*`` and for an array
on the left of ``-`` (which NumPy hands to ``Variable.__rsub__``, deferring
to its ``__array_priority__``). Any other operand, and debug mode (whose
node stacks show the operator's frame), takes the original.
"""
import numbers

import numpy

import chainer
import chainer.functions
from chainer import variable
from chainer.functions.math import basic_math

from cpython.object cimport PyObject

from chainer_fastpath._core._audit cimport stock_replaced
from chainer_fastpath._core._config cimport debug_mode
from chainer_fastpath._core._ndarray cimport cfp_descr_of
from chainer_fastpath._core._objects cimport construct_valued
from chainer_fastpath._core._dicts cimport cfp_dict_item_keyed, cfp_keyed_memo
from chainer_fastpath._runtime._apply_node cimport apply_new, apply_or_debug
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _registry
from chainer_fastpath._core import _stats

cdef type _Variable = variable.Variable
cdef type _Parameter = variable.Parameter
cdef type _ndarray = numpy.ndarray
cdef type _generic = numpy.generic
cdef object _preprocess_rhs = basic_math._preprocess_rhs
cdef dict _chainer_dict = chainer.__dict__
cdef object _Number = numbers.Number
# Stock's functions read the node classes and helpers as globals, from the
# module's dict: so do these (cheaper than the module's attribute lookup).
cdef dict _globals = basic_math.__dict__
cdef cfp_keyed_memo _global_reads

# Counted under the name of the stock function each one replaces.
cdef EntryStats _stats_add = _stats.entry('basic_math.add')
cdef EntryStats _stats_sub = _stats.entry('basic_math.sub')
cdef EntryStats _stats_rsub = _stats.entry('basic_math.rsub')
cdef EntryStats _stats_mul = _stats.entry('basic_math.mul')
cdef dict _originals = {}   # 'add' | 'sub' | 'rsub' | 'mul' -> stock
cdef str _NOT_PLAIN = ('right-hand side neither a plain Variable nor a '
                       'Python number')

# Stock installs each of its four functions under several names (F.add and
# the Variable operators are basic_math's very functions); so does this.
TARGETS = (
    (basic_math, 'add'), (basic_math, 'sub'), (basic_math, 'rsub'),
    (basic_math, 'mul'),
    (chainer.functions, 'add'),
    (_Variable, '__add__'), (_Variable, '__radd__'),
    (_Variable, '__sub__'), (_Variable, '__rsub__'),
    (_Variable, '__mul__'), (_Variable, '__rmul__'),
)


def bind(owner, attribute, original):
    """Keeps ``original`` (one of stock's ``add``, ``sub``, ``rsub``,
    ``mul``) to fall back to; returns its replacement, which applies the
    same nodes."""
    name = original.__name__
    _originals.setdefault(name, original)
    replacement = {'add': add, 'sub': sub, 'rsub': rsub, 'mul': mul}[name]
    _registry.accept_equivalent(original, replacement)
    return replacement


cdef object _applied(EntryStats stats, object node, tuple inputs):
    """The output of ``node.apply(inputs)``, counted; None in debug mode,
    where nothing was applied and the original must run (stock's node
    stacks show the operator's frame)."""
    return _counted(stats, apply_or_debug(node, inputs))


cdef inline object _applied_new(EntryStats stats, object cls,
                                tuple inputs):
    """``_applied(stats, cls(), inputs)``, for a node class that
    ``construct`` makes (``apply_new``)."""
    return _counted(stats, apply_new(cls, inputs))


cdef inline object _counted(EntryStats stats, object outputs):
    if outputs is None:
        stats.fallback('debug mode')
        return None
    stats.fast += 1
    return outputs[0]


cdef inline bint _array_in_debug(EntryStats stats) except -1:
    # An ndarray operand is converted by stock's helper before the node is
    # applied: debug mode is asked first, so the helper runs once, in the
    # original.
    if debug_mode():
        stats.fallback('debug mode')
        return True
    return False


cdef inline bint _plain_variable(object x):
    # The stock helper is looked up per call: a test may replace it.
    return ((type(x) is _Variable or type(x) is _Parameter)
            and cfp_dict_item_keyed(&_global_reads, _globals,
                                    '_preprocess_rhs')
            == <PyObject *>_preprocess_rhs)


cdef inline object _stock(str name):
    """basic_math's global ``name``, as stock's functions read it."""
    cdef PyObject *found = cfp_dict_item_keyed(&_global_reads, _globals, name)
    if found is not NULL and <object>found is not None:
        return <object>found
    return getattr(basic_math, name)


def _stock_init(name):
    """Stock's ``__init__`` of node class ``name``, which sets
    ``self.value`` only: found along the MRO of the class in its place (a
    subclass put there before this import), or None."""
    for cls in getattr(basic_math, name).__mro__:
        init = vars(cls).get('__init__')
        if (init is not None
                and getattr(init, '__module__', None) == basic_math.__name__
                and getattr(init, '__qualname__', None) == name + '.__init__'):
            return init
    return None


cdef object _add_constant_init = _stock_init('AddConstant')
cdef object _sub_from_constant_init = _stock_init('SubFromConstant')
cdef object _mul_constant_init = _stock_init('MulConstant')


# basic_math's global node classes called with a constant, as stock's
# functions make their constant nodes.
cdef inline object _add_constant(object value):
    return construct_valued(_stock('AddConstant'), value, _add_constant_init)


cdef inline object _sub_from_constant(object value):
    return construct_valued(_stock('SubFromConstant'), value,
                            _sub_from_constant_init)


cdef inline object _mul_constant(object value):
    return construct_valued(_stock('MulConstant'), value, _mul_constant_init)


cdef inline object _rhs_array(object x, object value):
    """``_preprocess_rhs(x, value)`` for an exact ndarray ``value``: not a
    Variable; not a scalar (``numpy.isscalar``: not a NumPy scalar nor of
    a scalar type; only a ``numbers.Number`` registration could say
    otherwise, asked here too); one of ``chainer.get_array_types()``
    once they are loaded; so ``value.astype(x.dtype, copy=False)``, which
    returns ``value`` itself for the same dtype. Stock's helper where it
    or a function it calls by name was replaced."""
    helper = _stock('_preprocess_rhs')
    if (helper is not _preprocess_rhs or stock_replaced() is not None
            or _chainer_dict.get('_array_types') is None
            or isinstance(value, _Number)):
        return helper(x, value)
    if type(x) is _Variable or type(x) is _Parameter:
        dtype = x._data[0].dtype
    else:
        dtype = x.dtype
    if cfp_descr_of(value) == <void *>dtype:
        return value
    return value.astype(dtype, copy=False)


cdef inline bint _number(object x):
    # What numpy.isscalar says of these without asking numbers.Number.
    return type(x) is int or type(x) is float or isinstance(x, _generic)


def add(*xs):
    """Drop-in for ``chainer.functions.add``."""
    y = None
    if len(xs) == 2:
        if _plain_variable(xs[1]):
            y = _applied_new(_stats_add, _stock('Add'), xs)
        elif _number(xs[1]):
            y = _applied(_stats_add, _add_constant(xs[1]), (xs[0],))
        elif type(xs[1]) is _ndarray and not _array_in_debug(_stats_add):
            rhs = _rhs_array(xs[0], xs[1])
            y = _applied_new(_stats_add, _stock('Add'), (xs[0], rhs))
        else:
            _stats_add.fallback(_NOT_PLAIN)
    else:
        _stats_add.fallback(_NOT_PLAIN)
    return y if y is not None else _originals['add'](*xs)


def sub(self, rhs):
    """Drop-in for ``Variable.__sub__``."""
    y = None
    if _plain_variable(rhs):
        y = _applied_new(_stats_sub, _stock('Sub'), (self, rhs))
    elif _number(rhs):
        y = _applied(_stats_sub, _add_constant(-rhs), (self,))
    elif type(rhs) is _ndarray and not _array_in_debug(_stats_sub):
        rhs = _rhs_array(self, rhs)
        y = _applied_new(_stats_sub, _stock('Sub'), (self, rhs))
    else:
        _stats_sub.fallback(_NOT_PLAIN)
    return y if y is not None else _originals['sub'](self, rhs)


def rsub(self, rhs):
    """Drop-in for ``Variable.__rsub__``."""
    y = None
    if _number(rhs):
        y = _applied(_stats_rsub, _sub_from_constant(rhs), (self,))
    elif type(rhs) is _ndarray and not _array_in_debug(_stats_rsub):
        rhs = _rhs_array(self, rhs)
        y = _applied_new(_stats_rsub, _stock('Sub'), (rhs, self))
    else:
        _stats_rsub.fallback('left-hand side of rsub not a Python number')
    return y if y is not None else _originals['rsub'](self, rhs)


def mul(self, rhs):
    """Drop-in for ``Variable.__mul__``."""
    y = None
    if _plain_variable(rhs):
        y = _applied_new(_stats_mul, _stock('Mul'), (self, rhs))
    elif _number(rhs):
        y = _applied(_stats_mul, _mul_constant(rhs), (self,))
    elif type(rhs) is _ndarray and not _array_in_debug(_stats_mul):
        # Not a scalar: stock's next step, looked up as stock does.
        rhs = _rhs_array(self, rhs)
        y = _applied_new(_stats_mul, _stock('Mul'), (self, rhs))
    else:
        _stats_mul.fallback(_NOT_PLAIN)
    return y if y is not None else _originals['mul'](self, rhs)
