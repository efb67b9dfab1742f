"""The contract of every compiled function, checked over the registry.

Each registry entry names the stock methods its compiled code stands for:
``forward_methods`` and ``backward_methods`` (of its class; of the Function,
for an old-style one), ``backward_callees`` (``(owner, name)`` of what
the stock backward calls: gradient nodes' methods, module functions,
``Variable``'s operators) and ``forward_callees`` (``(module, name)`` of
the module functions the stock forward calls by name). Where one of them
is replaced or mocked, the node's own code must run, so that the
replacement is called. Two checks, on
the cases of the function's own test file (its ``APPLY_CASES``,
``FORWARD_CASES``, ``BACKWARD_CASES``) that apply a node of the class (a
function hook sees it) and take its compiled code patched:

- ``test_replaced_method_is_called``: each declared method in turn,
  replaced on its owner by a wrapper that records the call and delegates
  (as ``mock.patch.object(..., wraps=...)`` does), is called patched as
  often as stock calls it (and stock calls it: else the declaration names
  nothing stock does);
- ``test_stock_calls_are_declared``: every method stock's forward and
  backward of the class call (a profile of the stock run: methods of the
  nodes, ``Variable``'s operators, functions of Chainer's function
  modules and of ``chainer.utils``) that the patched run does not call is
  declared. What the patched run still calls, compiled code calls itself:
  a replacement of it is called there too.

What ``apply`` and the backward engine call around a node's ``forward``
and ``backward`` is the entry points' to audit, not the lists'
(``MACHINERY``). What is found undeclared now is listed in ``UNDECLARED``
(its class's test is an expected failure until the gap is gone).
"""
import functools
import importlib
import importlib.util
import itertools
import os
import sys
import types

import numpy
import pytest

import chainer
from chainer.function import Function, FunctionAdapter
from chainer.function_node import FunctionNode

import chainer_fastpath
from chainer_fastpath import functions
from chainer_fastpath._core import _registry
from chainer_fastpath.testing import gradients, outputs

functions.register_all()

#: class -> its registry entry
ENTRIES = _registry.registered()

#: class -> the module under chainer_fastpath.functions that compiles it
#: ('activation.relu'); its tests are tests/functions/activation/test_relu.py
MODULE_OF = {entry.cls: name for name in functions.MODULES
             for entry in importlib.import_module(
                 'chainer_fastpath.functions.' + name).ENTRIES}

#: What stock's ``apply`` and ``Function.__call__`` (the patched entry
#: points, with audits of their own) run around a node's ``forward``: not
#: methods the compiled code of a class stands for, also where a gradient
#: node is applied. ``label`` is evaluated by ``apply`` (calls made within
#: it are not counted either).
MACHINERY = frozenset([
    'apply', '__call__', 'node', '_check_data_type_forward',
    'check_layout_forward', 'output_layouts', 'input_layouts', 'label',
    'local_function_hooks', '_n_local_function_hooks', '_get_error_message'])
#: The same, functions: the check ``apply`` runs on the inputs' arrays,
#: and the type-check library a node's ``check_type_forward`` uses (the
#: type-check audit's, ``_core/_type_check``).
MACHINERY_FUNCTIONS = frozenset([
    ('chainer.utils', '_check_arrays_forward_compatible')])
#: Functions only a node's ``check_type_forward`` calls: the type check a
#: compiled backward stands for is stock's apply's, whose passes are cached
#: patched (a documented difference: type-check helpers are not called
#: after a cached pass), so a replacement is called as often as the check
#: runs, not as often as stock runs it.
TYPE_CHECK_HELPERS = frozenset([
    ('chainer.functions.math.matmul', '_get_check_index')])
MACHINERY_MODULES = frozenset(['chainer.utils.type_check'])

#: Functions the compiled code looks up and calls per call where they are
#: not the patch's own: ``chainer.utils.force_array`` (``forced()``), so a
#: replacement is called (the patched run calls nothing there only while it
#: is the patch's).
LOOKED_UP = frozenset([('chainer.utils', 'force_array')])

#: What the registry audits of every backward, called or not (every
#: entry's ``backward_methods`` by default).
ALWAYS_AUDITED = frozenset(['get_retained_inputs', 'get_retained_outputs'])

#: What the registry itself audits on a FunctionAdapter node, for an
#: old-style Function's entry (``_registry``'s ``_adapter_forward`` and
#: ``_adapter_backward``).
ADAPTER_METHODS = {
    'forward': ('forward', 'retain_inputs'),
    'backward': ('backward', 'get_retained_inputs', 'get_retained_outputs'),
}

#: What the profile finds undeclared (a2a6f7d and after): class name ->
#: 'phase Owner.name'. Each is a gap in the lists (to declare, or to
#: stop skipping); the test of the class fails (xfail, strict) until
#: it is gone, and then this entry must go.
UNDECLARED = {}

#: Declared methods that stock does not call where the lists say (or
#: that a replacement of does not reach patched), with why.
NOT_CALLED_AS_DECLARED = {
    ('BatchNormalization',
     'chainer.functions.normalization.batch_normalization._impl_selector'):
    'stock calls the node\'s impl_selector, the module\'s function bound'
    ' as a default argument: one rebound in the module is never called',
}

_CHAINER = os.path.dirname(chainer.__file__) + os.sep
_TESTS = os.path.dirname(os.path.abspath(__file__))


# -- the cases: each class's own test file's ------------------------------

def _seeded(fn):
    def run():
        numpy.random.seed(0)
        return fn()
    return run


@functools.lru_cache(maxsize=None)
def _runs_of(module):
    """``[(case id, run)]`` of the test file of ``module`` ('array.concat'):
    an apply case's outputs with and without backprop, a forward case's
    outputs (no backward), a backward case's float32 gradients."""
    family, name = module.split('.')
    path = os.path.join(_TESTS, family, 'test_{}.py'.format(name))
    spec = importlib.util.spec_from_file_location(
        '_contract_cases_{}_{}'.format(family, name), path)
    tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tests)
    runs = []
    for case, build in sorted(getattr(tests, 'APPLY_CASES', {}).items()):
        runs.append(('APPLY_CASES[{!r}]'.format(case), _seeded(
            lambda build=build: (outputs(build, False),
                                 outputs(build, True)))))
    for case, build in sorted(getattr(tests, 'FORWARD_CASES', {}).items()):
        runs.append(('FORWARD_CASES[{!r}]'.format(case), _seeded(
            lambda build=build: (outputs(build, False), _applied(build)))))
    for case, build in sorted(getattr(tests, 'BACKWARD_CASES', {}).items()):
        runs.append(('BACKWARD_CASES[{!r}]'.format(case), _seeded(
            lambda build=build: gradients(build, numpy.float32))))
    return runs


def _applied(build):
    fn, args = build()[:2]
    return fn(*args)


class _Applied(chainer.FunctionHook):
    """The classes of the nodes applied and of those whose backward ran
    (an old-style Function's class for its adapter)."""

    name = 'contract'

    def __init__(self):
        self.forward = set()
        self.backward = set()

    @staticmethod
    def _class(node):
        if type(node) is FunctionAdapter:
            return type(node._function)
        return type(node)

    def forward_preprocess(self, function, in_data):
        self.forward.add(self._class(function))

    def backward_preprocess(self, function, in_data, out_grad):
        self.backward.add(self._class(function))


def _self_type(frame):
    """The class of a method call's ``self``, or None."""
    code = frame.f_code
    if code.co_argcount and code.co_varnames[0] == 'self':
        return type(frame.f_locals.get('self'))
    return None


def _is_label(call):
    cls, code = call
    return (cls is not None and _is_node(cls)
            and 'label' in _method_names(cls).get(code, ()))


def _profile(fn, roots=None):
    """Runs ``fn()`` and returns the Python calls it made, as
    ``(class of self or None, code)``: all of them (under None), and, as
    ``(class of self or None, code, caller's code)``, those made within
    each frame for which ``roots(frame)`` gives a key (under that key; the
    root's own call included; not within a node's ``label``)."""
    calls = {None: set()}
    open_roots = []     # [(frame, phase)]
    muted = []          # frames of labels

    def profile(frame, event, arg):
        if event == 'call':
            call = _self_type(frame), frame.f_code
            calls[None].add(call)
            if not roots or muted:
                return
            if _is_label(call):
                muted.append(frame)
                return
            phase = roots(frame)
            if phase:
                open_roots.append((frame, phase))
            caller = frame.f_back.f_code if frame.f_back else None
            for _, p in open_roots:
                calls.setdefault(p, set()).add(call + (caller,))
        elif event == 'return':
            if muted and muted[-1] is frame:
                muted.pop()
            elif open_roots and open_roots[-1][0] is frame:
                open_roots.pop()

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def _node_class(node):
    """The class whose entry a node's call is looked up by."""
    if type(node) is FunctionAdapter:
        return type(getattr(node, '_function', None))
    return type(node)


@functools.lru_cache(maxsize=None)
def _root_codes():
    """code -> phase, of stock's ``forward`` and ``backward`` of the
    registered classes' nodes (an adapter's, for an old-style Function)."""
    codes = {FunctionAdapter.forward.__code__: 'forward',
             FunctionAdapter.backward.__code__: 'backward'}
    for cls, entry in ENTRIES.items():
        if not entry.adapted:
            codes[cls.forward.__code__] = 'forward'
            codes[cls.backward.__code__] = 'backward'
    return codes


def _roots(frame):
    """``(class, phase)`` where ``frame`` runs stock's forward or backward
    of a node of a registered class (for that class), else None."""
    phase = _root_codes().get(frame.f_code)
    if phase is None:
        return None
    cls = _node_class(frame.f_locals.get('self'))
    entry = ENTRIES.get(cls)
    if entry is None:
        return None
    if not entry.adapted and getattr(cls, phase).__code__ is not frame.f_code:
        return None     # the code of another class's method, inherited
    return cls, phase


class _Case:
    """A case run three ways: stock under a hook (the classes applied and
    backpropagated), stock profiled (the calls within each registered
    class's forward and backward, under ``(class, phase)``), patched
    profiled (every call)."""

    def __init__(self, module, case, run):
        self.name = '{}: {}'.format(module, case)
        self.run = run
        hook = _Applied()
        with hook:
            run()
        self.forward, self.backward = hook.forward, hook.backward
        self.stock = _profile(run, _roots)
        with chainer_fastpath.enabled():
            self.patched = _profile(run)[None]

    def covers(self, cls):
        """Whether the case applies a ``cls`` node (and runs its backward,
        where the entry has a compiled one) stock, and takes its compiled
        code patched (stock's forward and backward did not run)."""
        entry = ENTRIES[cls]
        if cls not in self.forward or (
                'backward' in entry.parts and cls not in self.backward):
            return False
        node = FunctionAdapter if entry.adapted else cls
        return not any(
            (node, getattr(node, part).__code__) in self.patched
            for part in ('forward', 'backward') if part in entry.parts)


@functools.lru_cache(maxsize=None)
def _cases_of_module(module):
    return [_Case(module, case, run) for case, run in _runs_of(module)]


@functools.lru_cache(maxsize=None)
def cases_of(cls):
    """The cases of the class's own test file that cover it (or, where
    none does, the first of another file's)."""
    own = MODULE_OF[cls]
    cases = [c for c in _cases_of_module(own) if c.covers(cls)]
    if cases:
        return cases
    for module in functions.MODULES:
        for c in _cases_of_module(module):
            if c.covers(cls):
                return [c]
    raise AssertionError('no case of the test files applies a {} node and'
                         ' takes its compiled code'.format(cls.__name__))


# -- the declared methods -------------------------------------------------

def _declared(entry):
    """``[(kind, owner, name)]``: what ``entry`` says it stands for."""
    out = []
    if entry.forward_methods is not None:
        out += [('forward', entry.cls, n) for n in entry.forward_methods.names]
    if entry.backward_methods is not None:
        out += [('backward', entry.cls, n)
                for n in entry.backward_methods.names]
    out += [('callee', owner, name) for owner, name in entry.backward_callees]
    if entry.forward_functions is not None:
        out += [('forward callee', owner, name)
                for owner, name in entry.forward_functions.pairs]
    return out


def _owner_name(owner):
    return getattr(owner, '__qualname__', None) or owner.__name__


def _method_params():
    params = []
    for cls, entry in sorted(ENTRIES.items(), key=lambda i: i[0].__name__):
        for kind, owner, name in _declared(entry):
            why = NOT_CALLED_AS_DECLARED.get(
                (cls.__name__, '{}.{}'.format(_owner_name(owner), name)))
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            params.append(pytest.param(
                cls, kind, owner, name, marks=marks, id='{}-{}-{}.{}'.format(
                    cls.__name__, kind, _owner_name(owner), name)))
    return params


def _wrapping(owner, name, calls):
    """A replacement of ``owner.name`` that records each call in ``calls``
    and delegates to what is there now (a method, property, static method
    or function, as found on the owner)."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in vars(klass):
                raw = vars(klass)[name]
                break
    else:
        raw = getattr(owner, name)
    if isinstance(raw, property):
        def fget(self):
            calls.append(name)
            return raw.fget(self)
        return property(fget, raw.fset, raw.fdel, raw.__doc__)
    if isinstance(raw, (staticmethod, classmethod)):
        function = raw.__func__

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            calls.append(name)
            return function(*args, **kwargs)
        return type(raw)(wrapper)

    @functools.wraps(raw)
    def wrapper(*args, **kwargs):
        calls.append(name)
        return raw(*args, **kwargs)
    return wrapper


def _calls_replaced(owner, name, run, patched):
    calls = []
    with pytest.MonkeyPatch.context() as mp:
        if patched:
            chainer_fastpath.enable()
        try:
            mp.setattr(owner, name, _wrapping(owner, name, calls))
            run()
        finally:
            chainer_fastpath.disable()
    return len(calls)


@pytest.fixture(scope='module', autouse=True)
def _patch_table_built():
    # The patch table reads its originals once, the first time it is
    # built: never while a test has one of them replaced.
    chainer_fastpath.enable()
    chainer_fastpath.disable()


@pytest.mark.parametrize('cls, kind, owner, name', _method_params())
def test_replaced_method_is_called(cls, kind, owner, name):
    cases = cases_of(cls)
    for chosen in cases:    # the first where stock calls it
        stock = _calls_replaced(owner, name, chosen.run, patched=False)
        if stock:
            break
    if stock == 0 and kind == 'backward' and name in ALWAYS_AUDITED:
        pytest.skip('stock\'s backward of {} does not call {}'.format(
            cls.__name__, name))
    assert stock >= 1, (
        'stock never calls {}.{} on {}: the declaration names nothing stock'
        ' does'.format(_owner_name(owner), name, chosen.name))
    patched = _calls_replaced(owner, name, chosen.run, patched=True)
    assert patched == stock, (
        '{}.{} replaced: stock calls it {} times, patched {} ({})'.format(
            _owner_name(owner), name, stock, patched, chosen.name))


# -- what stock calls -----------------------------------------------------

@functools.lru_cache(maxsize=None)
def _method_names(cls):
    """code -> the names under which ``cls`` finds a function of that
    code (a method, a property's getter, a static or class method)."""
    names = {}
    seen = set()
    for klass in cls.__mro__:
        for name, raw in vars(klass).items():
            if name in seen:
                continue
            seen.add(name)
            for f in (getattr(raw, 'fget', None), getattr(raw, '__func__',
                                                           None), raw):
                code = getattr(f, '__code__', None)
                if code is not None:
                    names.setdefault(code, []).append(name)
                    break
    return names


def _function_modules():
    """Chainer's modules whose functions a compiled path may stand for:
    its function modules (``chainer.functions`` and below, the links'
    modules, where old-style Functions are) and ``chainer.utils``."""
    return [m for n, m in sorted(sys.modules.items())
            if isinstance(m, types.ModuleType) and n.startswith((
                'chainer.functions', 'chainer.links', 'chainer.utils'))]


@functools.lru_cache(maxsize=None)
def _function_names():
    """code -> ``[(module, name)]`` of the functions of
    ``_function_modules()`` defined in Chainer, the defining module's
    first."""
    names = {}
    for module in _function_modules():
        for name, f in vars(module).items():
            code = getattr(f, '__code__', None)
            if (isinstance(f, types.FunctionType)
                    and code.co_filename.startswith(_CHAINER)):
                where = names.setdefault(code, [])
                if f.__module__ == module.__name__:
                    where.insert(0, (module, name))
                else:
                    where.append((module, name))
    return names


def _is_node(cls):
    return isinstance(cls, type) and issubclass(cls, (FunctionNode, Function))


def _is_operator(code):
    """Whether ``code`` is stock's code of a Variable operator (a Chainer
    function, ``basic_math.add``, ...)."""
    return (code in _method_names(chainer.Variable)
            and code.co_filename.startswith(os.path.join(
                _CHAINER, 'functions')))


def _what(entry, call):
    """``(owner, name)`` of a call in scope, or None: a node's method
    (not ``MACHINERY``; of a FunctionAdapter, only the entry's own), a
    Variable operator, a function of Chainer's function modules (not one
    an operator calls itself: the patch replaces operators whole)."""
    cls, code, caller = call
    if cls is not None and (_is_node(cls) or cls is chainer.Variable):
        names = _method_names(cls).get(code)
        if not names:
            return None
        name = names[0]
        if cls is chainer.Variable:
            return (cls, name) if _is_operator(code) else None
        if name in MACHINERY or (cls is FunctionAdapter
                                 and not entry.adapted):
            return None
        return cls, name
    if cls is None and code in _function_names() and not _is_operator(
            caller):
        module, name = _function_names()[code][0]
        if not ((module.__name__, name)
                in MACHINERY_FUNCTIONS | LOOKED_UP | TYPE_CHECK_HELPERS
                or module.__name__ in MACHINERY_MODULES):
            return module, name
    return None


def _is_declared(entry, phase, owner, name, code):
    cls = entry.cls
    if phase == 'forward':
        own = entry.forward_methods.names if entry.forward_methods else ()
    else:
        own = entry.backward_methods.names if entry.backward_methods else ()
    if owner is cls and name in own:
        return True
    if entry.adapted and owner is FunctionAdapter:
        return name in ADAPTER_METHODS[phase]
    if phase == 'forward':
        callees = (entry.forward_functions.pairs
                   if entry.forward_functions is not None else ())
    else:
        callees = entry.backward_callees
    for o, n in callees:
        if isinstance(owner, type):
            # Any name the code is found under: ``Variable.__rmul__`` is
            # ``__mul__``'s code, and stock calls it by that name.
            if (n in _method_names(owner).get(code, (name,))
                    and isinstance(o, type) and issubclass(owner, o)):
                return True
        elif getattr(getattr(o, n, None), '__code__', None) is code:
            return True
    return False


def undeclared(cls):
    """``[(phase, owner name, name)]``: what stock's forward or backward of a
    ``cls`` node calls, the patched run does not, and the entry does not
    declare. (A ``check_type_forward`` the patched run calls proves
    nothing: whether it runs there depends on the checks passed before.)"""
    entry = ENTRIES[cls]
    out = set()
    for case, phase in itertools.product(
            cases_of(cls), ('forward', 'backward')):
        if phase not in entry.parts:
            continue
        for call in case.stock.get((cls, phase), ()):
            what = _what(entry, call)
            if what is None:
                continue
            owner, name = what
            if call[:2] in case.patched and name != 'check_type_forward':
                continue
            if not _is_declared(entry, phase, owner, name, call[1]):
                out.add((phase, _owner_name(owner), name))
    return sorted(out)


def _compiled_classes():
    return sorted([cls for cls, entry in ENTRIES.items()
                   if {'forward', 'backward'} & set(entry.parts)],
                  key=lambda c: c.__name__)


def _class_params():
    params = []
    for cls in _compiled_classes():
        gaps = UNDECLARED.get(cls.__name__)
        marks = [pytest.mark.xfail(
            strict=True, reason='undeclared: ' + ', '.join(gaps))
        ] if gaps else []
        params.append(pytest.param(cls, marks=marks, id=cls.__name__))
    return params


@pytest.mark.parametrize('cls', _class_params())
def test_stock_calls_are_declared(cls):
    assert ['{} {}.{}'.format(*gap) for gap in undeclared(cls)] == []

