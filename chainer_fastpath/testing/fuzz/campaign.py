"""A campaign: programs drawn by Hypothesis, checked in a worker, each new
difference shrunk to a minimal program and written as a reproducer.

Hypothesis draws and shrinks; the property fails only on a finding not seen
before in this campaign (or in the corpus), each kind of finding raising
its own exception class so that Hypothesis shrinks each separately. A
campaign runs in chunks with fresh seeds, so after a finding it goes on.
"""
import collections
import hashlib
import os
import sys
import time

from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import Verbosity
from hypothesis import given
from hypothesis import seed as hypothesis_seed
from hypothesis import settings

from chainer_fastpath.testing.fuzz import grammar
from chainer_fastpath.testing.fuzz import program as program_module
from chainer_fastpath.testing.fuzz import reduce
from chainer_fastpath.testing.fuzz.known import CATEGORIES
from chainer_fastpath.testing.fuzz.worker import Worker

# Programs a shrink may run before it stops at the smallest found so far
# (a crash costs a fresh worker per try).
SHRINK_BUDGET = 400
CRASH_SHRINK_BUDGET = 40


class Found(Exception):
    """A program on which stock and patched differ."""

    def __init__(self, program, finding):
        super().__init__(finding[2])
        self.program = program
        self.finding = finding


_classes = {}


def _found_class(key):
    # One class per kind of finding: Hypothesis tells bugs apart by the
    # type of the exception, and shrinks each to its own minimal program.
    if key not in _classes:
        _classes[key] = type('Found', (Found,), {'key': key})
    return _classes[key]


def key_of(finding):
    """What makes two findings the same: the category alone for a known
    one, the category and signature for a new one or a crash."""
    category, signature, _ = finding
    return (category,) if category in CATEGORIES else (category, signature)


def _flatten(error):
    if isinstance(error, Found):
        return [error]
    found = []
    for inner in getattr(error, 'exceptions', ()) or ():
        found += _flatten(inner)
    cause = error.__cause__ or error.__context__
    if not found and cause is not None and cause is not error:
        found = _flatten(cause)
    return found


class Campaign:
    """Draws programs (``skip`` categories left out), checks each, shrinks
    and records each new finding; ``corpus`` is a folder to write
    reproducers to (and whose findings count as known)."""

    def __init__(self, skip=frozenset(), corpus=None, out=sys.stdout,
                 worker=None):
        self.skip = frozenset(skip)
        self.corpus = corpus
        self.out = out
        self.worker = worker or Worker()
        self.known = set()
        self.findings = []          # (key, program, finding), shrunk
        self.counts = collections.Counter()
        self.programs = 0
        self._shrinking = None
        self._shrink_runs = 0
        if corpus and os.path.isdir(corpus):
            for name in sorted(os.listdir(corpus)):
                if name.endswith('.py'):
                    self.known.add(corpus_key(os.path.join(corpus, name)))

    def check(self, program):
        """The property: passes unless ``program`` shows a new finding."""
        self.programs += 1
        if self._shrinking is not None:
            self._shrink_runs += 1
            budget = (CRASH_SHRINK_BUDGET if self._shrinking[0] == 'crash'
                      else SHRINK_BUDGET)
            if self._shrink_runs > budget:
                return
        finding = self.worker.check(program, self.skip)
        if finding is None:
            return
        key = key_of(finding)
        if key in self.known:
            self.counts[key] += 1
            return
        if self._shrinking is None:
            self._shrinking = key
            self.counts[key] += 1
        raise _found_class(key)(program, finding)

    def _chunk(self, examples, chunk_seed):
        test = given(grammar.programs(self.skip))(self.check)
        test = settings(
            max_examples=examples, deadline=None, database=None,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.generate, Phase.shrink],
            report_multiple_bugs=True, verbosity=Verbosity.quiet)(test)
        test = hypothesis_seed(chunk_seed)(test)
        self._shrinking, self._shrink_runs = None, 0
        try:
            test()
        except Exception as error:
            found = _flatten(error)
            if not found:
                raise
            for f in found:
                self._record(f)

    def _record(self, found):
        key = key_of(found.finding)
        if key in self.known:
            return
        self.known.add(key)
        program, finding = found.program, found.finding
        if key[0] != 'crash':
            program, finding = self._reduce(program, key, finding)
            key = key_of(finding)
            self.known.add(key)
        category, signature, difference = finding
        comment = 'category: {}\nsignature: {}\n{}'.format(
            category, signature, difference)
        text = program.reproducer(comment)
        self.findings.append((key, program, finding))
        path = None
        if self.corpus:
            os.makedirs(self.corpus, exist_ok=True)
            digest = hashlib.sha1(repr(key).encode()).hexdigest()[:10]
            path = os.path.join(self.corpus, '{}-{}.py'.format(
                category, digest))
            with open(path, 'w') as f:
                f.write(text)
        print('\n=== finding {}: {}{}\n{}'.format(
            len(self.findings), category, ' (written to {})'.format(path)
            if path else '', text), file=self.out, flush=True)

    def _reduce(self, program, key, finding):
        def same(candidate):
            self.programs += 1
            f = self.worker.check(candidate, self.skip)
            if f is None:
                return False
            # A known category read from a feature may pass to another
            # feature's when a statement goes: the same difference still.
            return key_of(f) == key or (
                f[0] in CATEGORIES and key[0] in CATEGORIES and
                f[1] == finding[1])

        reduced = reduce.reduce(program, same)
        return reduced, self.worker.check(reduced, self.skip) or finding

    def run(self, programs=None, seconds=None, chunk=1000, seed=0):
        """Runs until ``programs`` programs or ``seconds`` have gone by
        (checking between chunks of ``chunk``), printing progress; returns
        the new findings."""
        start, cpu = time.time(), time.process_time() + self.worker.cpu
        n = 0
        while True:
            left = chunk if programs is None else min(
                chunk, programs - self.programs)
            if left <= 0 or (seconds is not None and
                             time.time() - start >= seconds):
                break
            self._chunk(left, seed * 1000003 + n)
            n += 1
            elapsed = time.time() - start
            busy = time.process_time() + self.worker.cpu - cpu
            print('programs {}  {:.0f} s  {:.1f} programs/s ({:.1f} per CPU '
                  's)  findings: {} new, {} known seen{}'.format(
                      self.programs, elapsed, self.programs / elapsed,
                      self.programs / max(busy, 1e-9),
                      len(self.findings), sum(self.counts.values()),
                      '  worker deaths {}'.format(self.worker.deaths)
                      if self.worker.deaths else ''),
                  file=self.out, flush=True)
        return self.findings

    def summary(self):
        """Lines counting the findings by kind."""
        return ['{:6d}  {}'.format(n, ' / '.join(key))
                for key, n in self.counts.most_common()]


def corpus_key(path):
    """The finding key a corpus file was written for."""
    with open(path) as f:
        doc = program_module.docstring(f.read())
    fields = dict(line.rstrip().partition(': ')[::2]
                  for line in doc.splitlines()
                  if line.startswith(('category:', 'signature:')))
    category = fields.get('category', 'new')
    return key_of((category, fields.get('signature', ''), ''))
