import pytest

import chainer_fastpath
from chainer_fastpath import _patch


@pytest.fixture(autouse=True)
def _restore_patch_state():
    """Every test starts stock with zeroed counters, and leaves it so."""
    chainer_fastpath.disable()
    chainer_fastpath.reset_stats()
    yield
    _patch.install(())
    chainer_fastpath.reset_stats()
