"""Running a program stock and patched, and what a run leaves to compare."""
import ast
import contextlib
import re
import warnings

import numpy

import chainer
from chainer_fastpath.testing import differential
from chainer_fastpath.testing.fuzz import runtime
from chainer_fastpath.testing.fuzz.program import FILENAME

# The warning filters a configuration may name: (action, keyword arguments)
# applied in order after ``simplefilter('always')``.
WARNING_FILTERS = {
    'always': (),
    'default': (('default', {}),),
    'once': (('once', {}),),
    'ignore': (('ignore', {}),),
    'error': (('error', {}),),
    'error-runtime': (('error', {'category': RuntimeWarning}),),
    'ignore-chainer': (('ignore', {'module': 'chainer'}),),
    'error-chainer-variable': (('error', {'category': DeprecationWarning,
                                          'module': 'chainer.variable'}),),
}

ERRSTATES = ('default', 'ignore', 'warn', 'raise', 'call')

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+|(?<=id=')\d+")


def compile_program(source):
    """The program as one code object in which each top-level statement
    runs in its own ``try``, so one that raises does not stop the ones
    after it: the exception goes to ``_raised(lineno, exception)``."""
    tree = ast.parse(source, FILENAME)
    body = []
    for node in tree.body:
        handler = ast.parse('try:\n pass\nexcept Exception as _e:\n'
                            ' _raised({}, _e)'.format(node.lineno)).body[0]
        handler.body = [node]
        body.append(handler)
    module = ast.Module(body, [])
    ast.fix_missing_locations(module)
    return compile(module, FILENAME, 'exec')


class Run:
    """What one run left: the namespace, the exceptions per statement, the
    warnings and the hooks' events."""

    __slots__ = ('ns', 'base', 'raised', 'warnings', 'events')

    def __init__(self, ns, base, raised, caught):
        self.ns = ns
        self.base = base
        self.raised = raised
        self.warnings = [(w.category.__name__, str(w.message), w.filename,
                          w.lineno) for w in caught]
        self.events = ns['EVENTS']


def _hooks(stack, config, events):
    hook = config['function_hook']
    if hook == 'recorder':
        stack.enter_context(runtime.FunctionRecorder(events))
    elif hook == 'adding':
        stack.enter_context(runtime.AddingHook(events))
    if config['link_hook']:
        stack.enter_context(runtime.LinkRecorder(events))


def run_once(code, config):
    """Runs ``code`` (from :func:`compile_program`) once under ``config``,
    in whatever mode is installed."""
    ns = runtime.namespace()
    base = frozenset(ns) | {'_raised', '_e'}
    events = ns['EVENTS']
    raised = []
    with contextlib.ExitStack() as stack:
        # What the program replaced and left so, and the recursion limit,
        # are put back last.
        stack.enter_context(runtime.restoring())
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        # 'once' is remembered across runs in this registry, not per module.
        warnings.onceregistry.clear()
        warnings.simplefilter('always')
        for action, kwargs in WARNING_FILTERS[config['warnings']]:
            warnings.filterwarnings(action, **kwargs)
        errstate = config['errstate']
        if errstate == 'call':
            stack.enter_context(numpy.errstate(
                all='call', call=lambda kind, flag: events.append(
                    ('fpe', kind))))
        elif errstate != 'default':
            stack.enter_context(numpy.errstate(all=errstate))
        stack.enter_context(chainer.using_config(
            'type_check', config['type_check']))
        stack.enter_context(chainer.using_config('debug', config['debug']))
        stack.enter_context(chainer.using_config(
            'enable_backprop', config['enable_backprop']))
        stack.enter_context(chainer.using_config('train', config['train']))
        _hooks(stack, config, events)
        ns['_raised'] = lambda lineno, e: raised.append(
            (lineno, type(e).__name__, _ADDRESS.sub('0x?', str(e))))
        exec(code, ns)
    return Run(ns, base, raised, caught)


def run_both(source, config, seed=0):
    """``(stock Run, patched Run)`` of the program from the same seeds."""
    code = compile_program(source)
    return differential.run_both(lambda: run_once(code, config), seed=seed)
