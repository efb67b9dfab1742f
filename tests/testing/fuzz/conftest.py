import pytest

from chainer_fastpath.testing.fuzz.worker import Worker


@pytest.fixture(scope='module')
def worker():
    """A fuzz worker shared by a module's tests."""
    with Worker() as w:
        yield w
