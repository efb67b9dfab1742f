"""The user's guide stays a guide: README.md within 12 KB, its results
table the one ``make bench-docs`` made from docs/results/bench.json."""
import json
import os

from chainer_fastpath.bench import runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_is_at_most_12_kb():
    size = os.path.getsize(os.path.join(ROOT, 'README.md'))
    assert size <= 12 * 1024, 'README.md is {} bytes'.format(size)


def test_readme_table_is_the_published_run():
    with open(os.path.join(ROOT, 'docs', 'results', 'bench.json')) as f:
        results = json.load(f)
    machine = results.pop(runner.MACHINE, None)
    summary = runner.readme_summary(results, runner.has_torch(results),
                                    machine)
    with open(os.path.join(ROOT, 'README.md')) as f:
        text = f.read()
    assert runner.replace_readme_summary(text, summary) == text
