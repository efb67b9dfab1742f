"""Whether an object or class still has the methods a compiled path was
audited against, checked per call as cheaply as the interpreter can.

A function is looked up as ``obj.name(...)`` would look it up
(``_PyObject_GetMethod``): that sees an instance attribute and a method
replaced on the class or a base, without building a bound method or the
instance's ``__dict__``. Anything else (a property, say) is compared on the
class, and only after CPython's version tag of the class changed: the tag is
cleared whenever the type or one of its bases is modified
(``cls.forward = ...``, ``mock.patch.object``); the instance's ``__dict__``
is read only for a name an instance attribute could shadow (neither a
function nor a data descriptor).
"""
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_XDECREF
from cpython.exc cimport PyErr_Clear
from cpython.mem cimport PyMem_Free, PyMem_Malloc

import types

import numpy
import numpy.random

import chainer
from chainer import backend
from chainer import variable

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_class_has, cfp_memo_holds, cfp_memo_take,
    lookup_site)
from chainer_fastpath._core._dicts cimport cfp_dict_version

cfp_attr_enable(_attrs.FAST)

cdef extern from *:
    """
    static inline unsigned int cfp_type_version(PyTypeObject *tp) {
        return (tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
            ? tp->tp_version_tag : 0;
    }
    """
    unsigned int cfp_type_version(PyTypeObject *tp)

cdef extern from *:
    # What the interpreter uses for ``obj.name(...)``: 1 with the plain
    # function when the class has it and the instance does not shadow it,
    # without building a bound method or the instance's __dict__. CPython
    # exports it from 3.7 and declares it in its headers from 3.9.
    """
    #if PY_VERSION_HEX < 0x03090000
    PyAPI_FUNC(int) _PyObject_GetMethod(PyObject *, PyObject *, PyObject **);
    #endif
    """
    int _PyObject_GetMethod(PyObject *obj, PyObject *name, PyObject **method)


cdef extern from "Python.h":
    PyObject *_PyType_Lookup(PyTypeObject *tp, object name)


cdef bint class_finds(object cls, str name, object value):
    """Whether ``cls.name``, looked up on the class and its bases as the
    interpreter looks up a method (its method cache), is ``value``."""
    return _PyType_Lookup(<PyTypeObject *>cls, name) == <PyObject *>value


cdef object _in_class(object cls, str name):
    # What cls's MRO holds under name (None where nothing), no descriptor
    # run.
    cdef PyObject *found = _PyType_Lookup(<PyTypeObject *>cls, name)
    return None if found == NULL else <object>found


cdef unsigned int type_version(object cls):
    """CPython's version tag of the class ``cls``, 0 when it has none."""
    return cfp_type_version(<PyTypeObject *>cls)


cdef bint method_is(object obj, str name, object original):
    """Whether ``obj.name`` is the function ``original`` found on the
    class, not shadowed by an instance attribute."""
    cdef PyObject *found = NULL
    cdef int unbound = _PyObject_GetMethod(<PyObject *>obj, <PyObject *>name,
                                           &found)
    if found is NULL:
        PyErr_Clear()   # stock's own lookup will raise it again
        return False
    cdef bint same = unbound == 1 and found == <PyObject *>original
    Py_XDECREF(found)
    return same


cdef bint method_is_at(object obj, cfp_attr *site, object original):
    """``method_is`` for the name of ``site`` (a ``lookup_site``), which
    answers it in a few instructions while the class keeps its version."""
    return (cfp_class_has(obj, site, original)
            or method_is(obj, <str>site.name, original))


# Not ``type(lambda: None)``: in a compiled module that is Cython's own
# function type.
cdef type _python_function = types.FunctionType
# Slots of built-in types (``object.__init__``): nothing a user sets.
cdef tuple _slot_types = (types.WrapperDescriptorType,
                          types.MethodDescriptorType)


def is_chainers(obj):
    """Whether ``obj`` is Chainer's own code: a function whose globals are
    a module of the ``chainer`` package, a property or bound class method
    made of such functions, or a slot of a built-in type; or None, True or
    False, a class constant that is the same whoever set it. A replacement
    made before chainer_fastpath first looked (a mock, a user's function)
    is not, and is never taken for the original."""
    if obj is None or obj is True or obj is False:
        return True
    t = type(obj)
    if t is _python_function:
        name = obj.__globals__.get('__name__')
        return type(name) is str and (name == 'chainer'
                                      or name.startswith('chainer.'))
    if t is property:
        return all(f is None or is_chainers(f)
                   for f in (obj.fget, obj.fset, obj.fdel))
    if t is types.MethodType:
        return is_chainers(obj.__func__)
    return t in _slot_types


cdef class StockMethods:
    """The methods ``names`` of ``cls`` as they are now (the originals)."""

    def __cinit__(self, cls, names):
        cdef Py_ssize_t i
        names = tuple(names)
        self._sites = <cfp_attr *>PyMem_Malloc(
            max(len(names), 1) * sizeof(cfp_attr))
        if self._sites == NULL:
            raise MemoryError()
        for i in range(len(names)):
            self._sites[i] = lookup_site(names[i])
        self._n_sites = len(names)

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self._sites != NULL:
            for i in range(self._n_sites):
                Py_XDECREF(self._sites[i].name)
            PyMem_Free(self._sites)

    def __init__(self, cls, names):
        self.cls = cls
        self.names = tuple(names)
        self.originals = tuple([getattr(cls, name) for name in self.names])
        self._in_class = tuple([_in_class(cls, name) for name in self.names])
        if not all(is_chainers(f) for f in self.originals):
            # Replaced before they were read: originals that nothing is,
            # so that the class's own methods always run.
            self.originals = tuple([object() for _ in self.names])
            self._in_class = self.originals
        self._version = 0
        # Read as the class holds them: a staticmethod's function is not
        # looked up as a method.
        self._functions = all(type(f) is _python_function
                              for f in self._in_class)
        # What an instance attribute could shadow: not a function (looked
        # up as a method) nor a data descriptor (which wins over it).
        self._shadowable = tuple([
            n for n, f in zip(self.names, self._in_class)
            if type(f) is not _python_function
            and not hasattr(type(f), '__set__')])

    def found(self, obj):
        """``found_by`` for Python callers (the tests)."""
        return self.found_by(obj)

    cdef bint on_class(self) except -1:
        """Whether ``cls`` still finds every original."""
        cdef Py_ssize_t i
        cdef unsigned int version = cfp_type_version(<PyTypeObject *>self.cls)
        if version != 0 and version == self._version:
            return True
        # Compared as found in the class's MRO, not through getattr: a
        # descriptor put there (a PropertyMock) must not run, or count a
        # call stock does not make.
        for i in range(len(self.names)):
            if (_in_class(self.cls, <str>self.names[i])
                    is not self._in_class[i]):
                return False
        # A metaclass of its own could run code on lookup: never trust
        # the tag of such a class.
        if type(self.cls) is type:
            self._version = cfp_type_version(<PyTypeObject *>self.cls)
        return True

    cdef bint found_by(self, object obj) except -1:
        """Whether ``obj``, an instance of exactly ``cls``, finds every
        original: none set on the instance, none replaced on the class."""
        cdef Py_ssize_t i
        if cfp_memo_holds(&self._memo, obj):
            return True
        # Each original in the class's own dict (cached while the class
        # keeps its version) and no instance attribute of its name.
        for i in range(self._n_sites):
            if not cfp_class_has(obj, &self._sites[i], self.originals[i]):
                break
        else:
            cfp_memo_take(&self._memo, obj, self._sites, self._n_sites)
            return True
        # Functions without building the instance's __dict__.
        for i in range(len(self.names)):
            if (type(self._in_class[i]) is _python_function
                    and not method_is(obj, <str>self.names[i],
                                      self.originals[i])):
                return False
        if self._functions:
            return True
        cdef dict own
        if self._shadowable:
            own = obj.__dict__
            for name in self._shadowable:
                if name in own:
                    return False
        return self.on_class()


cdef object _MISSING = object()


cdef class StockModule:
    """The names of a module (``numpy``) as they were first read: stock
    looks its functions up there per call (``numpy.exp(x)``), so a name
    rebound there (``mock.patch('numpy.exp')``) reaches stock's code; the
    compiled paths hold the originals, and must then let stock's code
    run."""

    def __init__(self, module):
        self.name = module.__name__
        self._dict = module.__dict__
        # Two tuples, not one of pairs: fewer objects for every full
        # collection to traverse.
        self._names = tuple([k for k in self._dict if not k.startswith('__')])
        self._values = tuple([self._dict[k] for k in self._names])
        self._version = cfp_dict_version(self._dict)

    cdef str rebound(self):
        """The first name rebound or deleted since, or None."""
        cdef unsigned long long version = cfp_dict_version(self._dict)
        if version != 0 and version == self._version:
            return None
        cdef Py_ssize_t i
        for i in range(len(self._names)):
            name = self._names[i]
            if self._dict.get(name, _MISSING) is not self._values[i]:
                return name
        self._version = version
        return None


def _properties(cls):
    return StockMethods(cls, [k for k, v in vars(cls).items()
                              if type(v) is property and is_chainers(v)])


cdef StockModule _numpy = StockModule(numpy)
cdef StockModule _numpy_random = StockModule(numpy.random)
cdef type _Variable = variable.Variable
cdef type _VariableNode = variable.VariableNode
cdef type _Parameter = variable.Parameter
cdef StockMethods _variable_properties = _properties(_Variable)
cdef StockMethods _node_properties = _properties(_VariableNode)
cdef StockMethods _parameter_properties = _properties(_Parameter)
# The versions all of them had when last found stock's: while none
# changed, nothing needs looking at.
cdef unsigned int _variable_version = 0, _node_version = 0
cdef unsigned int _parameter_version = 0
cdef unsigned long long _numpy_version = 0, _numpy_random_version = 0
# What stock's apply and backward call by their modules' names, per node
# (get_array_types: per Variable made of an input array): a replacement (a
# mock) must see every call stock makes.
cdef StockFunctions _graph_functions = StockFunctions((
    (chainer, 'using_config'), (chainer, 'using_device'),
    (chainer, 'get_function_hooks'), (chainer, 'get_array_types'),
    (backend, 'get_device_from_array')))


cdef str stock_replaced():
    """Why the compiled paths cannot stand for stock's code now, or None:
    a NumPy function or one of ``_graph_functions`` that stock calls by
    name, or a property of the graph's classes the compiled paths read
    past, was replaced. Seven version compares while nothing changed."""
    global _variable_version, _node_version, _parameter_version
    global _numpy_version, _numpy_random_version
    if (_variable_version != 0 and _numpy_version != 0
            and _variable_version == type_version(_Variable)
            and _node_version == type_version(_VariableNode)
            and _parameter_version == type_version(_Parameter)
            and _numpy_version == cfp_dict_version(_numpy._dict)
            and _numpy_random_version == cfp_dict_version(
                _numpy_random._dict)
            and _graph_functions.unchanged()):
        return None
    if not _graph_functions.unchanged():
        for m, name in _graph_functions.pairs:
            if not is_chainers(getattr(m, name, None)):
                return '{}.{} replaced'.format(m.__name__, name)
        return 'a function of chainer replaced'
    cdef StockMethods props
    for props in (_variable_properties, _node_properties,
                  _parameter_properties):
        if not props.on_class():
            return props.cls.__name__ + ' property replaced'
    for module in (_numpy, _numpy_random):
        name = (<StockModule>module).rebound()
        if name is not None:
            return '{}.{} replaced'.format((<StockModule>module).name, name)
    _variable_version = type_version(_Variable)
    _node_version = type_version(_VariableNode)
    _parameter_version = type_version(_Parameter)
    _numpy_version = cfp_dict_version(_numpy._dict)
    _numpy_random_version = cfp_dict_version(_numpy_random._dict)
    return None


cdef class StockFunctions:
    """Functions of modules, ``(module, name)``, as they were first read:
    stock calls them by their module's name (``_preprocess_const(...)``),
    so that one rebound there (``mock.patch.object(module, name)``) is
    called; a compiled path that stands for them must then let stock's
    code run. One version compare per module while none of its names was
    rebound."""

    def __cinit__(self, pairs):
        self._versions = NULL
        self._n = 0

    def __dealloc__(self):
        PyMem_Free(self._versions)

    def __init__(self, pairs):
        self.pairs = tuple([(m, n) for m, n in pairs])
        if not all(type(m) is types.ModuleType for m, _ in self.pairs):
            raise TypeError('StockFunctions audits functions of modules')
        self.originals = tuple([getattr(m, n) for m, n in self.pairs])
        if not all(is_chainers(f) for f in self.originals):
            # Replaced before they were read: never taken for stock's.
            self.originals = tuple([object() for _ in self.pairs])
        dicts = []
        for m, _ in self.pairs:
            if not any(d is m.__dict__ for d in dicts):
                dicts.append(m.__dict__)
        self._dicts = tuple(dicts)
        self._versions = <unsigned long long *>PyMem_Malloc(
            max(len(dicts), 1) * sizeof(unsigned long long))
        if self._versions == NULL:
            raise MemoryError()
        self._n = len(dicts)
        cdef Py_ssize_t i
        for i in range(self._n):
            self._versions[i] = 0

    def stock(self):
        """``unchanged`` for Python callers (the tests)."""
        return self.unchanged()

    cdef bint unchanged(self) except -1:
        """Whether every module still holds its original."""
        cdef Py_ssize_t i
        for i in range(self._n):
            if (self._versions[i] == 0 or self._versions[i]
                    != cfp_dict_version(self._dicts[i])):
                break
        else:
            return True
        for i in range(len(self.pairs)):
            m, name = self.pairs[i]
            if m.__dict__.get(name, _MISSING) is not self.originals[i]:
                return False
        for i in range(self._n):
            self._versions[i] = cfp_dict_version(self._dicts[i])
        return True
