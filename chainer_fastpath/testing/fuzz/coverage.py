"""What the grammar reaches: the FunctionNode classes its programs create
(compiled or not), the optimizers and optimizer hooks they use and the
configurations they run under; and, per category of the grammar
(argument edges, replaced methods, recursive links), what of the compiled
code its programs run when patched."""
import collections
import multiprocessing
import random
import re

import chainer

from chainer_fastpath.testing.fuzz import execute
from chainer_fastpath.testing.fuzz import grammar


class _Classes(chainer.FunctionHook):
    name = 'FuzzCoverage'

    def __init__(self):
        self.seen = collections.Counter()

    def forward_preprocess(self, function, in_data):
        # An old-style Function is counted by its own class, the one the
        # registry keys it by, not by its FunctionAdapter's.
        if isinstance(function, chainer.function.FunctionAdapter):
            function = function.function
        self.seen[type(function)] += 1


def measure(programs=300, seed=0, skip=frozenset()):
    """Runs ``programs`` programs drawn from random bytes (stock, in this
    process); returns ``{'nodes': Counter of FunctionNode classes,
    'optimizers': Counter, 'hooks': Counter, 'config': {key: Counter}}``.
    """
    rng = random.Random(seed)
    hook = _Classes()
    optimizers, hooks = collections.Counter(), collections.Counter()
    config = collections.defaultdict(collections.Counter)
    for _ in range(programs):
        data = bytes(rng.getrandbits(8) for _ in range(grammar.SIZE))
        program = grammar.build(data, skip)
        optimizers.update(re.findall(r'optimizers\.(\w+)', program.source))
        hooks.update(re.findall(r'optimizer_hooks\.(\w+)', program.source))
        for key, value in program.config.items():
            config[key][value] += 1
        source, full = program.message()
        with hook:
            execute.run_once(execute.compile_program(source), full)
    return {'nodes': hook.seen, 'optimizers': optimizers, 'hooks': hooks,
            'config': dict(config)}


def report(result, registered):
    """Lines describing ``result`` (from :func:`measure`); ``registered``
    are the compiled classes, each marked reached or not."""
    nodes = result['nodes']
    lines = ['compiled FunctionNodes reached: {}/{}'.format(
        sum(1 for c in registered if nodes[c]), len(registered))]
    for c in sorted(registered, key=lambda c: c.__name__):
        lines.append('  {:28s} {}'.format(c.__name__, nodes[c] or
                                          'NOT REACHED'))
    others = sorted((c.__name__, n) for c, n in nodes.items()
                    if c not in registered)
    lines.append('uncompiled FunctionNodes reached: {}'.format(len(others)))
    lines.append('  ' + ', '.join('{} {}'.format(*o) for o in others))
    lines.append('optimizers: ' + ', '.join(
        '{} {}'.format(k, v) for k, v in sorted(
            result['optimizers'].items())))
    lines.append('optimizer hooks: ' + ', '.join(
        '{} {}'.format(k, v) for k, v in sorted(result['hooks'].items())))
    for key, counts in sorted(result['config'].items()):
        lines.append('config {}: {}'.format(key, ', '.join(
            '{} {}'.format(k, v) for k, v in counts.most_common())))
    return lines


def _reach(category, programs, seed, skip):
    import chainer_fastpath
    from chainer_fastpath.testing import differential

    rng = random.Random(seed)
    operations = (None if category is None
                  else grammar.CATEGORY_OPERATIONS[category])
    events, raised = collections.Counter(), collections.Counter()
    sources = []
    with differential._mode(True, {}):
        chainer_fastpath.reset_stats()
        for _ in range(programs):
            data = bytes(rng.getrandbits(8) for _ in range(grammar.SIZE))
            program = grammar.build(data, skip, operations)
            source, full = program.message()
            run = execute.run_once(execute.compile_program(source), full)
            events.update(e[:2] for e in run.events if e[0] in (
                'call', 'raised', 'link_pre'))
            raised.update(name for _, name, _ in run.raised)
            sources.append(source)
        functions = {v['name']: (v['forward']['compiled'],
                                 v['forward']['python'])
                     for v in chainer_fastpath.function_stats().values()}
        backwards = {v['name']: (v['backward']['compiled'],
                                 v['backward']['python'])
                     for v in chainer_fastpath.function_stats().values()}
        stats = chainer_fastpath.stats()
        entries = {k: v['fast'] for k, v in stats.items()}
        fallbacks = {k: v['fallback'] for k, v in stats.items()}
    return {'functions': functions, 'backwards': backwards,
            'entries': entries, 'fallbacks': fallbacks, 'events': events,
            'raised': raised, 'sources': sources}


def reach(category, programs=200, seed=0, skip=frozenset()):
    """Runs ``programs`` programs whose operations are drawn from
    ``category``'s alone (``grammar.CATEGORY_OPERATIONS``; all of them for
    None), patched, in a
    child process (a crash there does not take the caller down); returns
    ``{'functions': {class name: (forwards compiled, forwards as stock's
    Python)}, 'backwards': the same of backwards, 'entries': {entry
    point: fast calls}, 'fallbacks': {entry point: {reason: calls handed
    to stock}}, 'events': Counter of the hooks' and replacements'
    (kind, what), 'raised': Counter of exception names, 'sources': the
    programs}``."""
    context = multiprocessing.get_context('spawn')
    with context.Pool(1) as pool:
        return pool.apply(_reach, (category, programs, seed, skip))


def entries_report(result, names):
    """Lines describing what ``result`` (from :func:`reach`) ran of the
    entry points ``names``: the calls that took the compiled path, and
    those handed to stock, by reason."""
    lines = ['compiled entry points reached: {}/{}'.format(
        sum(1 for n in names if result['entries'].get(n)), len(names))]
    for name in names:
        fallbacks = result['fallbacks'].get(name) or {}
        lines.append('  {:38s} {:6d} compiled{}'.format(
            name, result['entries'].get(name, 0), ''.join(
                '; {} {}'.format(n, reason) for reason, n in sorted(
                    fallbacks.items(), key=lambda item: -item[1]))))
    return lines
