"""Reducing a finding's program by its statements and arguments, after
Hypothesis has shrunk the bytes it was drawn from.

Hypothesis shrinks choices; a statement another one no longer needs, a
configuration key or an argument that does not matter often survives that.
Each step here keeps a change only when the program still shows the same
finding (same :func:`.campaign.key_of`).
"""
import ast
import re

from chainer_fastpath.testing.fuzz.program import DEFAULT_CONFIG
from chainer_fastpath.testing.fuzz.program import Program

# Textual simplifications of an argument: each match is tried removed or
# replaced on its own.
_EDITS = (
    (re.compile(r", '(?:C|F|strided|readonly|misaligned|swapped)'"), ''),
    (re.compile(r", '(?:special|big)'"), ''),
    (re.compile(r', requires_grad=False'), ''),
    (re.compile(r',\s*\w+=[^,()\n]+(?=[,)])'), ''),
    (re.compile(r'\bMy(?=Variable|Parameter)'), ''),
    (re.compile(r"'(?:float16|float64|int\d+|uint8|bool)'"), "'float32'"),
)


def _statements(source):
    tree = ast.parse(source)
    lines = source.splitlines()
    return ['\n'.join(lines[node.lineno - 1:node.end_lineno])
            for node in tree.body]


def _join(statements):
    return '\n'.join(statements) + '\n'


def reduce(program, same, max_tries=300):
    """The smallest variant of ``program`` found for which ``same(variant)``
    holds, trying at most ``max_tries`` variants."""
    tries = [0]

    def keep(candidate):
        if tries[0] >= max_tries:
            return False
        tries[0] += 1
        try:
            ast.parse(candidate.source)
        except SyntaxError:
            return False
        return same(candidate)

    statements = _statements(program.source)
    config = dict(program.config)
    changed = True
    while changed and tries[0] < max_tries:
        changed = False
        for i in reversed(range(len(statements))):
            if i >= len(statements):
                continue
            candidate = statements[:i] + statements[i + 1:]
            if candidate and keep(Program(_join(candidate), config)):
                statements = candidate
                changed = True
        for key in sorted(config):
            if config[key] != DEFAULT_CONFIG[key]:
                candidate = dict(config, **{key: DEFAULT_CONFIG[key]})
                if keep(Program(_join(statements), candidate)):
                    config = candidate
                    changed = True
        for i in range(len(statements)):
            for pattern, replacement in _EDITS:
                for match in reversed(list(pattern.finditer(statements[i]))):
                    text = statements[i]
                    edited = (text[:match.start()] + replacement +
                              text[match.end():])
                    candidate = statements[:i] + [edited] + \
                        statements[i + 1:]
                    if keep(Program(_join(candidate), config)):
                        statements = candidate
                        changed = True
    return Program(_join(statements), config)
