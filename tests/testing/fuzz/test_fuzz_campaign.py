"""The bounded campaign `make test` runs, and the replay of every finding
kept in corpus/.

CHAINER_FASTPATH_FUZZ_PROGRAMS sets the bounded campaign's size (default
3000, about a minute); CHAINER_FASTPATH_FUZZ_SKIP the categories it leaves
out (default 'unfixed': chainer_fastpath.testing.fuzz.known.UNFIXED).
"""
import os

import pytest

from chainer_fastpath.testing.fuzz import known
from chainer_fastpath.testing.fuzz import program
from chainer_fastpath.testing.fuzz.campaign import Campaign
from chainer_fastpath.testing.fuzz.campaign import corpus_key

CORPUS = os.path.join(os.path.dirname(__file__), 'corpus')


def _corpus():
    cases = []
    for name in sorted(os.listdir(CORPUS)):
        if not name.endswith('.py'):
            continue
        path = os.path.join(CORPUS, name)
        category = corpus_key(path)[0]
        marks = ()
        if category in known.default_skip():
            # Strict: once the fix lands this passes, and the category is
            # to come off known.UNFIXED.
            marks = pytest.mark.xfail(strict=True, reason=(
                'known difference, not fixed yet: ' + category))
        cases.append(pytest.param(path, id=name, marks=marks))
    return cases


@pytest.mark.parametrize('path', _corpus())
def test_corpus_case_agrees(worker, path):
    with open(path) as f:
        case = program.load(f.read())
    assert worker.check(case) is None


def test_bounded_campaign(worker, capsys):
    programs = int(os.environ.get('CHAINER_FASTPATH_FUZZ_PROGRAMS', 3000))
    campaign = Campaign(skip=known.default_skip(), worker=worker,
                        corpus=None)
    with capsys.disabled():
        findings = campaign.run(programs=programs, seed=int(os.environ.get(
            'CHAINER_FASTPATH_FUZZ_SEED', 0)))
    assert not findings, '\n\n'.join(
        p.reproducer('category: {}\nsignature: {}\n{}'.format(*f))
        for _, p, f in findings)
