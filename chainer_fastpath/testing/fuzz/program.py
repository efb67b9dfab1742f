"""A generated program: its source, the configuration it runs under, and
the reproducer file that holds both."""
import ast
import pprint
import re
import textwrap

FILENAME = '<fuzz>'

# What a configuration holds, and the value it has when not drawn.
DEFAULT_CONFIG = {
    'type_check': True,
    'debug': False,
    'enable_backprop': True,
    'train': True,
    'errstate': 'default',          # or ignore, warn, raise, call
    'warnings': 'always',           # see execute.WARNING_FILTERS
    'function_hook': None,          # or 'recorder', 'adding'
    'link_hook': False,
}


def features_of(source, config):
    """The categories of :mod:`.known` (and 'optimizer') that a program
    can reach, read from its text and configuration."""
    found = set()
    if 'optimizers.' in source:
        found.add('optimizer')
        # An update outside ``with quiet():`` (which indents it), or a
        # hyperparameter that divides by zero inside an update.
        if any(line.startswith('opt.update(')
               for line in source.splitlines()) or re.search(
                   r'beta[12]=1\.0\b|alpha=0\.0\b', source):
            found.add('optimizer-fpe')
    if '.apply([' in source:
        found.add('node-arity')
    if re.search(r"__import__\('pickle'\)|getattr\(|unwrap\(",
                 source):
        found.add('callable-metadata')
    if config.get('function_hook') == 'adding':
        found.add('hook-added-during-forward')
    if 'chainer' in config.get('warnings', ''):
        found.add('warning-location')
    return frozenset(found)


class Program:
    """``source`` (Python statements over :mod:`.runtime`'s names) and
    ``config`` (:data:`DEFAULT_CONFIG`'s keys)."""

    __slots__ = ('source', 'config')

    def __init__(self, source, config=None):
        self.source = source
        merged = dict(DEFAULT_CONFIG)
        merged.update(config or {})
        self.config = merged

    @property
    def features(self):
        return features_of(self.source, self.config)

    def message(self):
        """What a worker is sent: the source, the configuration with the
        program's features under 'features'."""
        return self.source, dict(self.config,
                                 features=tuple(sorted(self.features)))

    def reproducer(self, comment=''):
        """A runnable Python file: running it replays the program stock and
        patched and prints any difference."""
        config = {k: v for k, v in self.config.items()
                  if v != DEFAULT_CONFIG[k]}
        lines = ['"""A chainer_fastpath fuzz case.']
        if comment:
            lines.append('')
            for line in comment.rstrip().splitlines():
                if line.startswith(('category:', 'signature:')):
                    lines.append(_in_docstring(line))   # read by corpus_key
                else:
                    lines += [_in_docstring(part) for part in
                              textwrap.wrap(line, 72)] or ['']
        lines += ['"""',
                  'from chainer_fastpath.testing.fuzz import replay', '',
                  'CONFIG = ' + pprint.pformat(config, width=68,
                                               sort_dicts=True),
                  "PROGRAM = '''\\",
                  self.source.rstrip('\n').replace('\\', '\\\\'),
                  "'''", '',
                  "if __name__ == '__main__':",
                  '    raise SystemExit(replay(PROGRAM, CONFIG))', '']
        return '\n'.join(lines)

    def __repr__(self):
        return 'Program({!r}, {!r})'.format(self.source, self.config)


def _in_docstring(line):
    # A line of the reproducer's docstring that reads back as ``line``:
    # the differences quote bytes, with backslashes and quotes.
    return line.replace('\\', '\\\\').replace('"""', '\\"""')


def load(text):
    """The Program a :meth:`Program.reproducer` file holds (read without
    running it)."""
    values = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and \
                node.targets[0].id in ('CONFIG', 'PROGRAM'):
            values[node.targets[0].id] = ast.literal_eval(node.value)
    return Program(values['PROGRAM'], values.get('CONFIG'))


def docstring(text):
    """The reproducer file's docstring (its category and difference)."""
    return ast.get_docstring(ast.parse(text)) or ''
