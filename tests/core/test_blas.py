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


def _layouts(rng, shape, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    yield a
    yield numpy.asfortranarray(a)
    big = rng.standard_normal((shape[0] * 2, shape[1] * 3)).astype(dtype)
    yield big[::2, ::3]


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('left,right,route', [
    ((4, 3), (3, 5), 'gemm'), ((64, 70), (70, 9), 'gemm'),
    ((2, 2), (2, 2), 'gemm'), ((4, 1), (1, 5), 'gemm'),
    ((1, 3), (3, 5), 'gemv'), ((4, 3), (3, 1), 'gemv'),
    ((1, 3), (3, 1), 'dot'), ((1, 1), (1, 5), 'scalar'),
    ((4, 3), (4, 3), 'error'),
])
def test_matrix_products_are_numpy_dot_bit_for_bit(dtype, left, right,
                                                   route):
    # Every layout pair: where the product is taken, its bits and dtype are
    # numpy.dot's; where declined (None), numpy.dot runs instead. NumPy's
    # own routes for a dot of two vectors and a scalar operand are
    # declined, and so are the operands NumPy would copy first (the
    # strided layout of a matrix).
    rng = numpy.random.RandomState(2)
    taken = 0
    for a in _layouts(rng, left, dtype):
        for b in _layouts(rng, right, dtype):
            got = _blas.product_of_matrices(a, b)
            if got is not None:
                taken += 1
                want = numpy.dot(a, b)
                assert got.dtype == want.dtype and got.shape == want.shape
                assert got.flags.c_contiguous
                assert got.tobytes() == want.tobytes()
    assert (taken > 0) == (route in ('gemm', 'gemv'))


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('left,right', [
    ((4, 3), (3, 5)), ((8, 64), (64, 1000)), ((1, 3), (3, 5)),
    ((4, 3), (3, 1)), ((4, 1), (1, 5))])
def test_products_into_memory_that_held_nans(dtype, left, right):
    # The output's memory is whatever the allocator hands out, here the
    # buffer a NaN array of its size just gave back: gemm with beta 0 sets
    # every item (it is not zeroed first), gemv's output is zeroed as
    # NumPy zeroes it; the bits are numpy.dot's either way.
    rng = numpy.random.RandomState(5)
    a = rng.standard_normal(left).astype(dtype)
    b = rng.standard_normal(right).astype(dtype)
    want = numpy.dot(a, b).tobytes()
    for _ in range(20):
        garbage = numpy.full((left[0], right[1]), numpy.nan, dtype)
        del garbage
        got = _blas.product_of_matrices(a, b)
        assert got is not None
        assert got.tobytes() == want


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('left,right', [
    ((4, 3), (3, 5)), ((64, 70), (70, 9)), ((1, 3), (3, 5)), ((4, 3), (3, 1)),
    ((4, 1), (1, 5)), ((1, 3), (3, 1)), ((4, 3), (4, 3)),
])
@pytest.mark.parametrize('transposed', ['a', 'b', 'both'])
def test_transposed_operands_as_their_views(dtype, left, right, transposed):
    # An operand given with its transpose flag is multiplied as its view
    # .T would be: taken or declined alike, the same bits where taken.
    rng = numpy.random.RandomState(4)
    ta, tb = transposed in ('a', 'both'), transposed in ('b', 'both')
    for a in _layouts(rng, left[::-1] if ta else left, dtype):
        for b in _layouts(rng, right[::-1] if tb else right, dtype):
            got = _blas.product_of_matrices(a, b, ta, tb)
            want = _blas.product_of_matrices(a.T if ta else a,
                                             b.T if tb else b)
            assert (got is None) == (want is None)
            if got is not None:
                assert got.tobytes() == want.tobytes()
                assert got.tobytes() == numpy.dot(
                    a.T if ta else a, b.T if tb else b).tobytes()


def test_a_matrix_times_its_own_transpose_is_left_to_numpy():
    # NumPy calls syrk there, which need not round as gemm does.
    a = numpy.random.RandomState(3).standard_normal((5, 4))
    assert _blas.product_of_matrices(a, a.T) is None
    assert _blas.product_of_matrices(a.T, a) is None
    assert _blas.product_of_matrices(a, a, False, True) is None
    assert _blas.product_of_matrices(a, a, True, False) is None
    assert _blas.product_of_matrices(a, a.T.copy()) is not None


@pytest.mark.parametrize('a,b', [
    (numpy.ones((2, 3), numpy.float32), numpy.ones((3, 2), numpy.float64)),
    (numpy.ones((2, 3), numpy.float16), numpy.ones((3, 2), numpy.float16)),
    (numpy.ones((2, 3), numpy.int64), numpy.ones((3, 2), numpy.int64)),
    (numpy.ones((2, 0)), numpy.ones((0, 2))),
    (numpy.ones((3,)), numpy.ones((3, 2))),
    (numpy.ones((2, 3))[:, ::-1], numpy.ones((3, 2))),
])
def test_operands_numpy_treats_otherwise_are_declined(a, b):
    assert _blas.product_of_matrices(a, b) is None
