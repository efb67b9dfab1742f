"""Text rendering of the counters."""


def format_report(stats, enabled):
    """Renders ``stats()`` as a table: one line per entry point, then one
    line per fallback reason with its count."""
    rows = [('entry point', 'fast', 'fallback', 'reasons')]
    for name, s in stats.items():
        reasons = sorted(s['fallback'].items(), key=lambda kv: (-kv[1], kv[0]))
        notes = ['{} ({})'.format(r, n) for r, n in reasons] or ['']
        rows.append((name, str(s['fast']),
                     str(sum(n for _, n in reasons)), notes[0]))
        rows.extend(('', '', '', note) for note in notes[1:])
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ['chainer_fastpath: ' + ('enabled' if enabled else 'disabled')]
    for name, fast, fallback, note in rows:
        lines.append('  {:<{w0}}  {:>{w1}}  {:>{w2}}  {}'.format(
            name, fast, fallback, note,
            w0=widths[0], w1=widths[1], w2=widths[2]).rstrip())
    return '\n'.join(lines)
