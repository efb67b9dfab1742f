"""MPI tests skip, with the reason, where mpiexec or mpi4py is missing;
``CHAINER_FASTPATH_REQUIRE_MPI=1`` (set by ``make test``/``make test-mpi``)
turns the skip into a failure, so CI cannot pass them silently."""
import os

import pytest

import mpi_launch


@pytest.fixture
def mpi():
    """The launcher module, once MPI is known to be usable."""
    why = mpi_launch.missing()
    if why:
        if os.environ.get('CHAINER_FASTPATH_REQUIRE_MPI') == '1':
            pytest.fail('CHAINER_FASTPATH_REQUIRE_MPI=1 but ' + why)
        pytest.skip(why)
    return mpi_launch
