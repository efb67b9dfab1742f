"""A differential fuzzer: small Chainer programs drawn from a grammar, run
stock and patched from the same seeds, compared bit for bit.

- :mod:`.grammar`: the Hypothesis strategy ``programs(skip)``;
- :mod:`.runtime`: the names a program may use (array and model helpers,
  recording hooks);
- :mod:`.execute`: one run of a program under its configuration;
- :mod:`.compare`: what is compared, where runs differ, which known
  category explains it (:mod:`.known`);
- :mod:`.worker`: the child process cases run in, so a crash is a finding;
- :mod:`.campaign`: the loop that draws, checks, shrinks and records;
- ``python -m chainer_fastpath.testing.fuzz``: campaigns and replays.

docs/testing.md says how to run it.
"""
import sys


def replay(source, config=None, skip=frozenset(), file=None):
    """Runs the program stock and patched in this process and prints where
    they differ; returns 0 when they agree, else 1 (a reproducer's exit
    status)."""
    from chainer_fastpath.testing.fuzz import compare
    from chainer_fastpath.testing.fuzz import execute
    from chainer_fastpath.testing.fuzz.program import Program

    file = file or sys.stdout
    program = Program(source, config)
    source, config = program.message()
    stock, patched = execute.run_both(source, config)
    found = compare.verdict(stock, patched, source, config, frozenset(skip))
    if found is None:
        print('stock and patched agree', file=file)
        return 0
    category, signature, difference = found
    print('category: {}\nsignature: {}\n{}'.format(category, signature,
                                                   difference), file=file)
    return 1
