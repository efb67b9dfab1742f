"""The one table of compiled functions: FunctionNode class -> ``Compiled``.

Forward dispatch (``run_forward``), backward dispatch (``run_backward``) and
the type-check cache (``_type_check``) all read it. Each module under
``chainer_fastpath.functions`` builds the ``Compiled`` entries of the Chainer
functions it stands for, and ``chainer_fastpath.functions`` registers them.

An old-style ``chainer.Function`` runs as a ``FunctionAdapter`` node; its
entry is keyed by the Function's class (``node._function``), and is used
only while the adapter's own methods are stock's as well.

An entry is used only while the node's class is exactly ``cls`` and every
method its compiled code stands for is still stock's, on the class and on
the instance; anything else runs the node's own methods. A compiled function
returns ``NOT_HANDLED``, before changing anything, for a case it leaves to
stock.
"""
import sys
import types

from chainer.backends import intel64
from chainer.function import Function, FunctionAdapter
from chainer.function_node import FunctionNode
from chainer.functions.math import basic_math

from cpython.mem cimport PyMem_Realloc
from cpython.object cimport PyObject

from chainer_fastpath._core._audit cimport (
    StockFunctions, StockMethods, type_version)
from chainer_fastpath._core._dicts cimport (
    cfp_dict_item_keyed, cfp_dict_version, cfp_keyed_memo)
from chainer_fastpath._core._stats cimport EntryStats, python_ran
from chainer_fastpath._core import _stats

NOT_HANDLED = object()

# With iDeep installed the stock forwards and the gradient nodes may take
# its branch: compiled forwards and backwards are then left out.
cdef bint _IDEEP = intel64.is_ideep_available()

# The methods every stock backward is reached through.
cdef tuple _BACKWARD_METHODS = (
    'backward', 'get_retained_inputs', 'get_retained_outputs')
# The methods through which stock's ``apply`` runs a type check.
cdef tuple _CHECK_METHODS = ('_check_data_type_forward', 'check_type_forward')
cdef object _base_check_data = FunctionNode._check_data_type_forward

# What an adapter node's stock ``forward`` and ``backward`` call on itself;
# the Function's own methods are the entry's.
cdef type _adapter = FunctionAdapter
cdef StockMethods _adapter_forward = StockMethods(
    FunctionAdapter, ('forward', 'retain_inputs'))
cdef StockMethods _adapter_backward = StockMethods(
    FunctionAdapter, _BACKWARD_METHODS)

cdef EntryStats _stats_backward = _stats.entry('FunctionNode.backward')


def _constant_labels():
    # Label properties that only return a constant string: evaluating them
    # can neither fail nor change anything, so a fast path may skip it.
    m = basic_math
    return frozenset(cls.__dict__['label']
                     for cls in (m.Neg, m.Absolute, m.Add, m.Sub, m.Mul,
                                 m.Div))


CONSTANT_LABELS = _constant_labels()

# What stock's ``apply`` reads from a node besides its forward and its type
# check, and the values a new node of a ``nodeless`` entry's class must find
# there for ``apply`` to need no node: no local hooks, no layouts. (With
# every input's layout None, an elementwise node's outputs get None too.)
cdef object _base = FunctionNode.__dict__
cdef dict _NODELESS_STATE = {
    '_local_function_hooks': None,
    '_output_layouts': None,
    'check_layout_forward': _base['check_layout_forward'],
    'output_layouts': _base['output_layouts'],
    '_n_local_function_hooks': _base['_n_local_function_hooks'],
}


cdef StockMethods _nodeless_methods(object cls, tuple forward_methods):
    """The audit of a ``nodeless`` entry of ``cls``, or None where a new
    node of ``cls`` holds state other than ``_NODELESS_STATE``'s or a label
    whose evaluation could be seen."""
    for name, value in _NODELESS_STATE.items():
        if getattr(cls, name) is not value:
            return None
    label = getattr(cls, 'label')
    if label is not _base['label'] and label not in CONSTANT_LABELS:
        return None
    return StockMethods(cls, forward_methods + _CHECK_METHODS + (
        'label', 'is_elementwise') + tuple(_NODELESS_STATE))


cdef class Compiled:
    """What is compiled for the FunctionNode class ``cls``: a forward, a
    backward (and the callees it reproduces), a cached type check."""

    def __init__(self, cls, type_check=None, check_owner=None):
        """An entry with a type-check key and nothing compiled.

        ``type_check``: the node attributes ``cls.check_type_forward``
        reads besides the inputs' dtypes and shapes (from reading the
        check), or None where passed checks are not cached;
        ``check_owner``: the class whose ``check_type_forward`` was read,
        ``cls`` itself by default.
        """
        self.cls = cls
        self.adapted = issubclass(cls, Function)
        self.backward_callees = ()
        if type_check is None or self.adapted:
            return
        methods = StockMethods(cls, _CHECK_METHODS)
        owner = cls if check_owner is None else check_owner
        # Cached only as read: the base's data check calling the check of
        # the class that was read, found by cls.
        if methods.originals == (_base_check_data,
                                 owner.__dict__.get('check_type_forward')):
            self.check_methods = methods
            self.check_attributes = tuple([sys.intern(n) for n in type_check])

    @property
    def parts(self):
        """What is compiled: some of ``forward``, ``backward``,
        ``backward_into``, ``type_check``, and ``nodeless`` where a forward
        without backprop may run with no node."""
        return tuple([name for name, present in (
            ('forward', self.forward is not NULL),
            ('nodeless', self.nodeless is not None),
            ('backward', self.backward is not NULL),
            ('backward_into', self.backward_into is not NULL),
            ('type_check', self.check_methods is not None)) if present])

    def __repr__(self):
        return '<Compiled {}: {}>'.format(self.cls.__name__,
                                          ', '.join(self.parts))


cdef Compiled compiled(object cls, forward_t forward, tuple forward_methods,
                       backward_t backward, tuple backward_callees,
                       tuple type_check,
                       backward_into_t backward_into=NULL,
                       Py_ssize_t into_index=-1,
                       tuple backward_methods=_BACKWARD_METHODS,
                       object check_owner=None):
    """The entry of ``cls``. ``forward_methods``: the methods the stock
    forward calls that ``forward`` stands for; ``backward_callees``:
    ``(owner, name)`` of what the stock backward calls at run time that
    ``backward`` stands for (gradient nodes' methods, module functions);
    ``type_check`` and ``check_owner``: as for ``Compiled``;
    ``backward_into``: where given, it stands for ``backward`` when only
    input ``into_index`` needs a gradient; ``backward_methods``: the
    methods of ``cls`` the stock backward calls that ``backward`` stands
    for. Any function may be NULL.

    For an old-style Function class, the methods are the Function's
    (``forward_cpu``, ``backward_cpu``, ...), and its passed type checks are
    not cached."""
    cdef Compiled entry = Compiled(cls, type_check, check_owner)
    if _IDEEP:
        return entry
    if forward is not NULL:
        entry.forward = forward
        entry.forward_methods = StockMethods(cls, forward_methods)
    if backward is not NULL:
        entry.backward = backward
        entry.backward_methods = StockMethods(cls, backward_methods)
        entry.backward_callees = backward_callees
        entry.backward_into = backward_into
        entry.into_index = into_index
    return entry


cdef Compiled forward_callees(Compiled entry, tuple pairs):
    """Declares ``pairs``, ``(module, name)`` of the module functions the
    stock forward of ``entry`` calls by their module's name and its
    compiled forward stands for (``basic_math._preprocess_const``); returns
    ``entry``. While any is rebound (a mock, a user's own), the node's own
    forward runs. Audited per call, one dict-version compare per module,
    only for the entries that declare any."""
    if entry.forward is not NULL and pairs:
        entry.forward_functions = StockFunctions(pairs)
    return entry


cdef Compiled nodeless(Compiled entry):
    """Marks ``entry``'s forward as one that takes a node of None
    (``forward_t``), so that where nothing could see a new node, none is
    made (``_runtime._apply_node.apply_new``); returns ``entry``. Left
    unmarked where the class's type check is not cached without node
    attributes, or where a new node of it holds state other than stock's
    defaults."""
    if (entry.forward is not NULL and entry.check_methods is not None
            and not entry.check_attributes):
        entry.nodeless = _nodeless_methods(
            entry.cls, entry.forward_methods.names)
    return entry


cdef Compiled checked(Compiled entry, checker_t checker):
    """Gives ``entry``'s cached type check a ``checker`` (``checker_t``);
    returns ``entry``. For the classes whose inputs' shapes vary from call
    to call (a batch of sentences), whose keys the cache would rarely find
    again. Used only where the check is audited as for the cache."""
    if entry.check_methods is not None:
        entry.checker = checker
    return entry


cdef dict _entries = {}
# Every node's class is looked up there, once or twice per call.
cdef cfp_keyed_memo _entry_reads


cdef inline object _entry_of(object cls):
    cdef PyObject *entry = cfp_dict_item_keyed(&_entry_reads, _entries, cls)
    return <object>entry if entry is not NULL else None


def register(entries):
    """Adds ``entries`` (``Compiled``) to the table, one per class."""
    for entry in entries:
        _entries[(<Compiled>entry).cls] = entry
    _collect_callees()


def registered():
    """The table: ``{class: Compiled}``."""
    return dict(_entries)


def reset_counts():
    """Sets the entries' counts of compiled runs back to zero."""
    for entry in _entries.values():
        (<Compiled>entry).forward_calls = 0
        (<Compiled>entry).backward_calls = 0


cdef Compiled lookup(object cls):
    """The entry of ``cls``, or None."""
    return <Compiled>_entry_of(cls)


cdef Compiled lookup_node(object node):
    """The entry of ``node``: of its class, or for a FunctionAdapter of its
    Function's; or None."""
    entry = _entry_of(type(node))
    if entry is None and type(node) is _adapter:
        function = node._function
        entry = _entry_of(type(function))
        if entry is not None and not (<Compiled>entry).adapted:
            return None
    return <Compiled>entry


cdef object node_class(object node):
    """The class a node is counted under: its own, or for a
    FunctionAdapter its old-style Function's."""
    if type(node) is _adapter:
        return type(node._function)
    return type(node)


cdef object run_forward(object node, tuple in_data, ConfigView config):
    """``node.forward(in_data)`` compiled, or NOT_HANDLED (counted per
    class with why: the caller runs stock's forward)."""
    entry = _entry_of(type(node))
    if entry is None:
        if type(node) is _adapter:
            return _run_adapted_forward(node, in_data, config)
        python_ran(type(node), 'forward', 'not compiled')
        return NOT_HANDLED
    cdef Compiled c = <Compiled>entry
    if c.forward is NULL:
        python_ran(c.cls, 'forward', 'not compiled')
        return NOT_HANDLED
    if not c.forward_methods.found_by(node):
        python_ran(c.cls, 'forward', 'patched or mocked method')
        return NOT_HANDLED
    if (c.forward_functions is not None
            and not c.forward_functions.unchanged()):
        python_ran(c.cls, 'forward', 'patched or mocked function')
        return NOT_HANDLED
    return _counted_forward(c, node, in_data, config)


cdef bint forward_functions_stock(Compiled entry) except -1:
    """Whether the module functions ``entry``'s forward stands for are
    still stock's (True where it declares none)."""
    return (entry.forward_functions is None
            or entry.forward_functions.unchanged())


cdef inline object _counted_forward(Compiled c, object node, tuple in_data,
                                    ConfigView config):
    outputs = c.forward(node, in_data, config)
    if outputs is NOT_HANDLED:
        python_ran(c.cls, 'forward', 'case left to stock')
    else:
        c.forward_calls += 1
    return outputs


cdef object _run_adapted_forward(object node, tuple in_data,
                                 ConfigView config):
    # FunctionAdapter.forward: retain every input, then the Function's
    # forward; the compiled forward is given the adapter.
    function = node._function
    entry = _entry_of(type(function))
    if entry is None or (<Compiled>entry).forward is NULL:
        python_ran(type(function), 'forward', 'not compiled')
        return NOT_HANDLED
    cdef Compiled c = <Compiled>entry
    if (not c.adapted or not _adapter_forward.found_by(node)
            or not c.forward_methods.found_by(function)):
        python_ran(type(function), 'forward', 'patched or mocked method')
        return NOT_HANDLED
    if not forward_functions_stock(c):
        python_ran(type(function), 'forward', 'patched or mocked function')
        return NOT_HANDLED
    return _counted_forward(c, node, in_data, config)


cdef bint _backward_methods_stock(Compiled entry, object func) except -1:
    if not entry.adapted:
        return entry.backward_methods.found_by(func)
    return (_adapter_backward.found_by(func)
            and entry.backward_methods.found_by(func._function))


# -- what the compiled backwards reproduce, checked once per backward pass --

# The callees' classes, with the methods of each; then the attributes
# compared one by one: module functions, and Variable's operators, which
# while the patch is on may be replacements applying the same nodes.
cdef tuple _callee_classes = ()
cdef tuple _callee_attributes = ()
cdef dict _equivalents = {}     # original -> a replacement as good

# The attributes' owners, each once: a module's dict or a class, whose
# version (the dict's, PEP 509; the class's tag) changes with any rebinding
# in it. While every owner keeps the version it had when all the attributes
# were last found stock's, they still are: one compare per owner instead of
# a lookup per attribute. Empty where some owner has no such version (a
# module of its own type, a class of another metaclass): then every
# attribute is looked up on every pass.
cdef tuple _owners = ()
cdef unsigned long long *_owner_versions = NULL  # as last found stock's
cdef bint _owners_found = False     # whether _owner_versions holds them


def accept_equivalent(original, replacement):
    """Lets ``replacement``, installed where a callee ``original`` was,
    count as stock: it runs the very same nodes."""
    global _owners_found
    _equivalents[original] = replacement
    _owners_found = False


def _collect_callees():
    global _callee_classes, _callee_attributes
    from chainer import Variable

    names = {}
    attributes = []
    for entry in _entries.values():
        for owner, name in (<Compiled>entry).backward_callees:
            if isinstance(owner, type) and owner is not Variable:
                names.setdefault(owner, [])
                if name not in names[owner]:
                    names[owner].append(name)
            else:
                item = (owner, name, getattr(owner, name))
                if item not in attributes:
                    attributes.append(item)
    # The compiled backwards stand for the applies of the gradient nodes
    # stock's backwards make: an apply replaced (after enable(), where the
    # patch's own counts as stock's) must be called instead.
    attributes.append((FunctionNode, 'apply', FunctionNode.__dict__['apply']))
    _callee_classes = tuple([StockMethods(cls, n) for cls, n in names.items()])
    _callee_attributes = tuple(attributes)
    _collect_owners()


def _collect_owners():
    global _owners, _owner_versions, _owners_found
    owners = []
    for owner, _, _ in _callee_attributes:
        if type(owner) is types.ModuleType:
            owner = owner.__dict__
        elif type(owner) is not type:
            owners = []
            break
        if not any(o is owner for o in owners):
            owners.append(owner)
    _owners_found = False
    versions = <unsigned long long *>PyMem_Realloc(
        _owner_versions, max(len(owners), 1) * sizeof(unsigned long long))
    if versions == NULL:
        raise MemoryError()
    _owner_versions = versions
    _owners = tuple(owners)


cdef inline unsigned long long _owner_version(object owner):
    if type(owner) is dict:
        return cfp_dict_version(owner)
    return type_version(owner)


cdef bint _attributes_stock() except -1:
    """Whether every attribute of ``_callee_attributes`` is its original or
    an equivalent."""
    global _owners_found
    cdef Py_ssize_t i, n = len(_owners)
    if _owners_found:
        for i in range(n):
            if _owner_version(_owners[i]) != _owner_versions[i]:
                break
        else:
            return True
    _owners_found = False
    for owner, name, original in _callee_attributes:
        current = getattr(owner, name)
        if current is not original and current is not _equivalents.get(
                original):
            return False
    # Read after the lookups, which give a class its tag; a version 0 (none,
    # as on Python 3.14) is never taken as a match.
    for i in range(n):
        _owner_versions[i] = _owner_version(_owners[i])
        if _owner_versions[i] == 0:
            return True
    _owners_found = n > 0
    return True


cdef object _stock_apply = FunctionNode.__dict__['apply']


cdef bint applies_as_stock(object cls) except -1:
    """Whether ``cls.apply`` is stock's, or the patch's that stands for
    it: a node of ``cls`` that a compiled path does not make would have
    called nothing else."""
    current = getattr(cls, 'apply')
    return current is _stock_apply or current is _equivalents.get(
        _stock_apply)


cdef bint stock_callees() except -1:
    """Whether everything the compiled backwards reproduce is still
    stock's."""
    cdef Py_ssize_t i
    for i in range(len(_callee_classes)):
        if not (<StockMethods>_callee_classes[i]).on_class():
            return False
    return _attributes_stock()


cdef object run_backward(Compiled entry, object func, tuple indexes,
                         tuple grad_outputs, bint callees_stock):
    """``func.backward(indexes, grad_outputs)`` compiled, ``entry`` being
    ``lookup(type(func))``; or NOT_HANDLED, counted with a reason.
    ``callees_stock``: what ``stock_callees()`` said at the start of the
    backward pass."""
    if entry is None or entry.backward is NULL:
        _stats_backward.fallback('no compiled backward: '
                                 + type(func).__name__)
        python_ran(node_class(func), 'backward', 'not compiled')
        return NOT_HANDLED
    if not callees_stock or not _backward_methods_stock(entry, func):
        _stats_backward.fallback('patched or mocked method')
        python_ran(entry.cls, 'backward', 'patched or mocked method')
        return NOT_HANDLED
    gxs = entry.backward(func, indexes, grad_outputs)
    if gxs is NOT_HANDLED:
        _stats_backward.fallback('case left to stock: ' + entry.cls.__name__)
        python_ran(entry.cls, 'backward', 'case left to stock')
    else:
        _stats_backward.fast += 1
        entry.backward_calls += 1
    return gxs


cdef bint run_backward_into(Compiled entry, object func, tuple grad_outputs,
                            object acc_var, bint callees_stock) except -1:
    """``entry.backward_into(func, grad_outputs, acc_var)`` where it may
    stand in for the stock backward; False, with nothing done, where
    ``run_backward`` must be taken."""
    if (entry.backward_into is NULL or not callees_stock
            or not _backward_methods_stock(entry, func)
            or not entry.backward_into(func, grad_outputs, acc_var)):
        return False
    _stats_backward.fast += 1
    entry.backward_calls += 1
    return True
