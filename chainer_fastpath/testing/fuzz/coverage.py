"""What the grammar reaches: the FunctionNode classes its programs create
(compiled or not), the optimizers and optimizer hooks they use and the
configurations they run under."""
import collections
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
