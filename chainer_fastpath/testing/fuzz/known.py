"""Categories of difference the fuzzer knows, and which of them a bounded
run leaves out.

A category names a behaviour that differs from stock for a reason already
tracked. The grammar marks a program with the categories its features can
reach (``Program.features``); a run told to skip a category neither
generates those features nor counts differences that only its mask
explains (see :mod:`.compare`).
"""
import os

CATEGORIES = {
    'warning-location':
        'warnings raised from compiled code carry the caller\'s file and '
        'line, not Chainer\'s (so module filters and the once-per-location '
        'registry differ)',
    'optimizer-fpe':
        'the optimizer kernels and NumPy\'s error state: warnings and '
        'raises under seterr, NaN payloads and signed zeros, state left '
        'after an exception inside an update (beta 1.0, Adam\'s alpha 0 '
        'with adabound)',
    'debug-stack':
        'in debug mode a node\'s stack trace (shown in error messages) '
        'lacks the frames of compiled callers: Link.__call__ and the '
        'Variable operators',
    'hook-added-during-forward':
        'a function hook added by another hook during a forward gets its '
        'forward_postprocess call in stock only',
    'node-arity':
        'a FunctionNode applied to a wrong number of inputs: an elementwise '
        'one on none raises IndexError in stock only; compiled ones may '
        'raise other errors than stock\'s',
    'callable-metadata':
        'the patched callables\' __module__, __qualname__, __doc__ and '
        'pickling differ from the originals\', or unwrapping them does not '
        'lead to stock\'s code',
}

# Categories whose fixes are not merged yet: the bounded run in `make test`
# leaves them out. Remove a name here when its fix lands (the corpus
# replay's strict xfail then says so by failing).
UNFIXED = frozenset()

ENV_SKIP = 'CHAINER_FASTPATH_FUZZ_SKIP'


def parse_skip(text):
    """The categories named by ``text``: 'unfixed' for :data:`UNFIXED`,
    'none' or '' for none, else names separated by commas."""
    text = (text or '').strip()
    if text in ('', 'none'):
        return frozenset()
    names = set()
    for name in text.split(','):
        name = name.strip()
        if name == 'unfixed':
            names |= UNFIXED
        elif name in CATEGORIES:
            names.add(name)
        elif name:
            raise ValueError('unknown fuzz category {!r}; known: unfixed, '
                             '{}'.format(name, ', '.join(CATEGORIES)))
    return frozenset(names)


def default_skip():
    """What ``CHAINER_FASTPATH_FUZZ_SKIP`` names, 'unfixed' when unset."""
    return parse_skip(os.environ.get(ENV_SKIP, 'unfixed'))
