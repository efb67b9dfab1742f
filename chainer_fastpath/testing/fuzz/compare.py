"""What two runs are compared on, where they differ, and which category
explains a difference.

A run is observed as plain data: arrays as dtype, shape, strides, flags and
bytes (without NaN bits where stock does not reproduce them: see
``differential.NAN_BITS_REPRODUCIBLE``); Variables as their array,
gradient, ``requires_grad``, name and creator's class; links by their
parameters; optimizers by ``t``, epoch and every rule's state; exceptions by
statement, type and message; warnings by category, message, file and line;
the hooks' events in order.
"""
import re
import warnings

import numpy

import chainer

from chainer_fastpath.testing.differential import bits

_NAME = re.compile(r'\bv\d+\b')

# NumPy scalars compare NaNs as NaNs, arrays by their bits: a NaN scalar
# comes from Python float arithmetic (a Summary's statistics, a reported
# value) more often than from an array, and stock's own Python float
# arithmetic does not reproduce a NaN's sign in one process: CPython 3.11
# runs a line's float operations in generic code until the line warms up,
# in specialized code after, and the two may keep different operands' NaNs
# (stock ``Summary.add``, adding nan with weight 2 to a sum of -nan, leaves
# +nan the first time, -nan from then on).
_SCALAR_NAN = 'nan'

_NUMBER = re.compile(r'(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?')


def _array(a, canonical_nan):
    # canonical_nan: every NaN the same NaN, every zero +0.0.
    if canonical_nan and a.dtype.kind == 'f' and a.size:
        a = numpy.array(a)
        with numpy.errstate(invalid='ignore'):
            a[numpy.isnan(a)] = numpy.nan
            a[a == 0] = 0
    data = bits(a)
    with warnings.catch_warnings():
        # NumPy 1.x warns on reading ``writeable`` of a broadcast array's
        # view; the flag itself is what is compared.
        warnings.simplefilter('ignore', FutureWarning)
        writeable = a.flags.writeable
    return ('ndarray', a.dtype.str, a.shape, a.strides,
            a.flags.c_contiguous, a.flags.f_contiguous, writeable, data)


def describe(obj, canonical_nan=False, depth=0):
    """``obj`` as plain, comparable data (arrays as bytes)."""
    def d(x):
        return describe(x, canonical_nan, depth + 1)

    if depth > 6:
        return type(obj).__name__
    if isinstance(obj, numpy.ndarray):
        return _array(obj, canonical_nan)
    if isinstance(obj, chainer.Variable):
        creator = obj.creator_node
        try:
            grad_var = obj.grad_var
        except RuntimeError as e:   # an uninitialized Parameter's
            grad_var = e
        return ('Variable', type(obj).__name__, d(obj.array),
                d(getattr(grad_var, 'array', None)), obj.requires_grad,
                obj.name,
                None if creator is None else type(creator).__name__,
                getattr(grad_var, 'requires_grad', str(grad_var)))
    if isinstance(obj, numpy.generic):
        if obj.dtype.kind == 'f' and numpy.isnan(obj):
            return ('scalar', obj.dtype.str, _SCALAR_NAN)
        return ('scalar', obj.dtype.str, bits(numpy.asarray(obj)))
    if obj is None or isinstance(obj, (bool, int, str, bytes)):
        return obj
    if isinstance(obj, float):
        return ('float', repr(obj))
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__,) + tuple(d(x) for x in obj)
    if isinstance(obj, dict):
        return ('dict',) + tuple(sorted((repr(k), d(v))
                                        for k, v in obj.items()))
    if isinstance(obj, chainer.Link):
        return ('Link', type(obj).__name__,
                tuple((path, d(p)) for path, p in obj.namedparams()))
    if isinstance(obj, chainer.Optimizer):
        rules = []
        target = getattr(obj, 'target', None)
        if target is not None:
            for path, p in target.namedparams():
                rule = p.update_rule
                rules.append((path, None if rule is None else (
                    rule.t, rule.enabled, d(rule.state))))
        return ('Optimizer', type(obj).__name__, obj.t, obj.epoch,
                tuple(rules))
    return type(obj).__name__


# A mask hides what a known difference changes, so that the rest can be
# compared: category -> what observe() leaves out with it.
MASKS = ('warning-location', 'optimizer-fpe', 'debug-stack')

_RECURSION = re.compile(r'(?<=^maximum recursion depth exceeded).*',
                        re.DOTALL)
# The frames of a stack trace in a message (debug mode's node stacks).
_FRAMES = re.compile(r'(?m)^  File .*\n(?:    .*\n)?')


def observe(run, masks=frozenset()):
    """The run as plain data, its values in the order they were named,
    without what ``masks`` (names from :data:`MASKS`) hide."""
    canonical_nan = 'optimizer-fpe' in masks
    values = tuple((name, describe(value, canonical_nan))
                   for name, value in run.ns.items()
                   if name not in run.base and not name.startswith('_'))
    caught = tuple(run.warnings)
    if 'warning-location' in masks:
        # Without locations, the once-per-location registry may print a
        # warning a different number of times: compare which were printed.
        caught = tuple(sorted({w[:2] for w in caught}))
    # Whether RecursionError is raised is compared, not the call it was
    # raised in ('... while calling a Python object', '... in comparison').
    raised = tuple((lineno, name, _RECURSION.sub('', message)
                    if name == 'RecursionError' else message)
                   for lineno, name, message in run.raised)
    if 'debug-stack' in masks:
        raised = tuple((lineno, name, _FRAMES.sub('', message))
                       for lineno, name, message in raised)
    return {'raised': raised, 'warnings': caught,
            'events': tuple(run.events), 'values': values}


def first_difference(expected, actual, path=()):
    """``(path, line)``: where ``expected`` and ``actual`` first differ (a
    tuple of keys and indices) and a line saying how; None when equal."""
    if expected == actual:
        return None
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            found = first_difference(expected[key], actual.get(key),
                                     path + (key,))
            if found:
                return found
    if isinstance(expected, tuple) and isinstance(actual, tuple):
        if len(expected) == len(actual):
            for i, (e, a) in enumerate(zip(expected, actual)):
                label = e[0] if (path == ('values',) and
                                 isinstance(e, tuple)) else i
                found = first_difference(e, a, path + (label,))
                if found:
                    return found
    if isinstance(expected, str) and isinstance(actual, str):
        # Long messages: show where they part.
        start = next((i for i, (e, a) in enumerate(zip(expected, actual))
                      if e != a), min(len(expected), len(actual)))
        start = max(0, start - 200)
        expected, actual = expected[start:], actual[start:]
    where = 'run' + ''.join('.' + p if isinstance(p, str) and not
                            path.index(p) else '[{!r}]'.format(p)
                            for p in path)
    return path, '{}: stock {} | patched {}'.format(
        where, _short(expected), _short(actual))


def _short(x, limit=600):
    text = repr(x)
    return text if len(text) <= limit else text[:limit] + '...'


def _statement(source, lineno):
    lines = source.splitlines()
    return lines[lineno - 1] if 0 < lineno <= len(lines) else ''


def signature(path, expected, actual, source):
    """What two findings share when they are the same bug: what differs
    (values, exceptions, warnings, events) and the call that made it,
    names and numbers elided."""
    kind = path[0] if path else 'run'
    line = ''
    if kind == 'values' and len(path) > 1:
        for text in source.splitlines():
            if text.startswith(str(path[1]) + ' ='):
                line = text.split('=', 1)[1]
                break
    elif kind in ('raised', 'warnings'):
        # The first entry one run has and the other has not.
        entries = [e for e in expected[kind] if e not in actual[kind]] + \
            [e for e in actual[kind] if e not in expected[kind]]
        entries = entries or expected[kind] + actual[kind]
        if entries and kind == 'raised':
            return '{} @ {} {}'.format(
                kind, _head(_statement(source, entries[0][0])),
                entries[0][1])
        elif entries:
            return '{} @ {} {}'.format(kind, entries[0][0],
                                       entries[0][1][:40])
    return '{} @ {}'.format(kind, _head(line)).strip()


def _head(statement):
    # The statement up to its first call's arguments, names and numbers
    # elided: 'v = F.sum', 'v.backward'.
    return _NUMBER.sub('#', _NAME.sub('v', statement.split('(', 1)[0])).strip()


def verdict(stock, patched, source, config, skip=frozenset()):
    """None when the runs agree; else ``(category, signature, detail)``.

    The category is the first known one that explains the difference: its
    mask makes the runs agree, or the program has a feature only it
    reaches; 'new' when none does. A category in ``skip`` that explains it
    gives None.
    """
    expected, actual = observe(stock), observe(patched)
    found = first_difference(expected, actual)
    if found is None:
        return None
    path, difference = found
    category = 'new'
    for mask in MASKS:
        if mask == 'optimizer-fpe' and 'optimizer' not in config['features']:
            continue
        if observe(stock, {mask}) == observe(patched, {mask}):
            category = mask
            break
    else:
        for feature in sorted(config['features']):
            if feature != 'optimizer':
                category = feature
                break
    if category in skip:
        return None
    masks = set(skip).intersection(MASKS)
    if 'optimizer' not in config['features']:
        masks.discard('optimizer-fpe')
    if masks:
        # What is left once the skipped categories are masked is what to
        # report (and what tells findings apart).
        expected, actual = observe(stock, masks), observe(patched, masks)
        found = first_difference(expected, actual)
        if found is None:
            return None
        path, difference = found
    return (category, signature(path, expected, actual, source),
            difference)
