"""What ran where: the entry points' counters and, per FunctionNode class,
the forwards and backwards that ran compiled or as stock's Python."""

PARTS = ('forward', 'backward')


def _name(cls):
    return '{}.{}'.format(cls.__module__, cls.__qualname__)


def function_stats(registered, python_runs):
    """``{class path: {'name': class name, 'forward': {'compiled': n,
    'python': n, 'reasons': {reason: n}}, 'backward': {...}}}`` for every
    FunctionNode class that ran since the counters were reset, the most
    run first; ``registered`` is the registry's table, ``python_runs``
    ``_stats.python_runs()``."""
    classes = {}

    def part(cls, name):
        entry = classes.setdefault(_name(cls), {'name': cls.__name__})
        return entry.setdefault(name, {'compiled': 0, 'python': 0,
                                       'reasons': {}})

    for cls, entry in registered.items():
        for name, n in (('forward', entry.forward_calls),
                        ('backward', entry.backward_calls)):
            if n:
                part(cls, name)['compiled'] += n
    for (cls, name), reasons in python_runs.items():
        counts = part(cls, name)
        counts['python'] += sum(reasons.values())
        for reason, n in reasons.items():
            counts['reasons'][reason] = counts['reasons'].get(reason, 0) + n
    for entry in classes.values():
        for name in PARTS:
            entry.setdefault(name, {'compiled': 0, 'python': 0,
                                    'reasons': {}})

    def runs(item):
        entry = item[1]
        return -sum(entry[p]['compiled'] + entry[p]['python']
                    for p in PARTS), entry['name']
    return dict(sorted(classes.items(), key=runs))


def headline(functions):
    """One line: the nodes applied and the backward steps, the share that
    ran compiled, and the classes whose stock Python ran."""
    totals = {p: [sum(f[p][k] for f in functions.values())
                  for k in ('compiled', 'python')] for p in PARTS}

    def share(part):
        compiled, python = totals[part]
        if not compiled + python:
            return 'none'
        return '{:,}, {:.0%} compiled'.format(
            compiled + python, compiled / (compiled + python))

    python = ['{} ({})'.format(f['name'], ', '.join(
        p for p in PARTS if f[p]['python'])) for f in functions.values()
        if any(f[p]['python'] for p in PARTS)]
    return ('nodes applied: {}; backward steps: {}; stock Python ran: {}'
            .format(share('forward'), share('backward'),
                    ', '.join(python) or 'nothing'))


def _table(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ['  ' + '  '.join(
        [row[0].ljust(widths[0])]
        + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:])]
        + [row[-1]]).rstrip() for row in rows]


def _ran(part):
    compiled, python = part['compiled'], part['python']
    if not compiled + python:
        return '-'
    if not python:
        return 'compiled'
    if not compiled:
        return 'Python'
    return '{:.0%} compiled'.format(compiled / (compiled + python))


def format_report(stats, enabled, functions):
    """The report: a headline, then the entry points that ran (calls on
    the fast path, fallbacks and their reasons), then one row per
    FunctionNode class that ran (``function_stats``)."""
    lines = ['chainer_fastpath: ' + ('enabled' if enabled else 'disabled')]
    if functions:
        lines.append(headline(functions))
    rows = [('entry point', 'fast', 'fallback', 'reasons')]
    for name, s in stats.items():
        reasons = sorted(s['fallback'].items(), key=lambda kv: (-kv[1], kv[0]))
        if not s['fast'] and not reasons:
            continue
        notes = ['{} ({:,})'.format(r, n) for r, n in reasons] or ['']
        rows.append((name, '{:,}'.format(s['fast']),
                     '{:,}'.format(sum(n for _, n in reasons)), notes[0]))
        rows.extend(('', '', '', note) for note in notes[1:])
    if len(rows) > 1:
        lines += [''] + _table(rows)
    if functions:
        rows = [('function node', 'forwards', 'forward', 'backward',
                 'stock Python ran because')]
        for f in functions.values():
            notes = ['{}: {} ({:,})'.format(p, r, n) for p in PARTS
                     for r, n in sorted(f[p]['reasons'].items(),
                                        key=lambda kv: (-kv[1], kv[0]))]
            rows.append((f['name'], '{:,}'.format(
                f['forward']['compiled'] + f['forward']['python']),
                _ran(f['forward']), _ran(f['backward']),
                notes[0] if notes else ''))
            rows.extend(('', '', '', '', note) for note in notes[1:])
        lines += [''] + _table(rows)
    if len(lines) == 1:
        lines.append('nothing ran through the patched entry points since '
                     'the counters were reset')
    return '\n'.join(lines)


def report_json(stats, enabled, functions):
    """What ``format_report`` shows, as a JSON-ready dict."""
    return {'enabled': enabled,
            'headline': headline(functions) if functions else None,
            'entry_points': {name: s for name, s in stats.items()
                             if s['fast'] or s['fallback']},
            'functions': functions}
