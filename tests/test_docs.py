"""The user's guide stays a guide: README.md within 12 KB."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_is_at_most_12_kb():
    size = os.path.getsize(os.path.join(ROOT, 'README.md'))
    assert size <= 12 * 1024, 'README.md is {} bytes'.format(size)
