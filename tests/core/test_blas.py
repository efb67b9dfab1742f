import numpy
import pytest

from chainer_fastpath._core import _blas


pytestmark = pytest.mark.skipif(
    not _blas.gemv_ready(),
    reason="NumPy's BLAS is not its bundled ILP64 OpenBLAS")


def _vector(rng, n, dtype, step):
    return rng.standard_normal(n * step).astype(dtype)[::step]


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('shape', [(2, 2), (3, 17), (64, 5), (300, 129)])
@pytest.mark.parametrize('step', [1, 3])
def test_products_are_numpy_dot_bit_for_bit(dtype, shape, step):
    rng = numpy.random.RandomState(1)
    a = rng.standard_normal(shape).astype(dtype)
    v = _vector(rng, shape[1], dtype, step)
    w = _vector(rng, shape[0], dtype, step)
    assert _blas.product(a, v, False).tobytes() == numpy.dot(a, v).tobytes()
    assert _blas.product(a, w, True).tobytes() == numpy.dot(w, a).tobytes()


def test_nan_and_inf_propagate_as_numpy_dot():
    # The test hook's output starts as NaNs, which NumPy's zeroing (and
    # beta 0) must overwrite.
    a = numpy.array([[numpy.inf, 1.0], [2.0, numpy.nan]], numpy.float32)
    v = numpy.array([0.0, 1.0], numpy.float32)
    assert _blas.product(a, v, False).tobytes() == numpy.dot(a, v).tobytes()
    assert _blas.product(a, v, True).tobytes() == numpy.dot(v, a).tobytes()


@pytest.mark.parametrize('shape', [(1, 5), (5, 1), (1, 1)])
def test_shapes_numpy_does_not_give_to_gemv_are_declined(shape):
    a = numpy.ones(shape, numpy.float32)
    assert _blas.product(a, numpy.ones(shape[1], numpy.float32),
                         False) is None
    assert _blas.product(a, numpy.ones(shape[0], numpy.float32),
                         True) is None


def test_a_reversed_vector_is_declined():
    a = numpy.ones((3, 4), numpy.float64)
    assert _blas.product(a, numpy.arange(4.0)[::-1], False) is None
