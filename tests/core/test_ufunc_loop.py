"""``_ufunc_loop``: a ufunc's loop called as its trivial path calls it
(``Binary``, ``UfuncLoop.unary_into``), against the ufunc itself, bit for
bit."""
import numpy
import pytest

from chainer_fastpath._core._fpe import fenv_flags
from chainer_fastpath._core._ufunc_loop import (
    Binary, Constant, FloatLoops, Reduction, UfuncLoop)
from chainer_fastpath.testing import bits

UFUNCS = [numpy.add, numpy.subtract, numpy.multiply, numpy.maximum]
DTYPES = [numpy.float32, numpy.float64]


def _specials(dtype, n, rng):
    """``n`` values, half of them NaNs with random payloads and signs,
    infinities, signed zeros, subnormals and huge numbers."""
    values = rng.randn(n).astype(dtype)
    info = numpy.finfo(dtype)
    pool = numpy.array([numpy.nan, -numpy.nan, numpy.inf, -numpy.inf, 0.0,
                        -0.0, info.tiny / 4, -info.tiny / 2, info.max],
                       dtype)
    mask = rng.rand(n) < 0.5
    values[mask] = rng.choice(pool, int(mask.sum()))
    nan = numpy.isnan(values)
    uint = numpy.uint32 if dtype == numpy.float32 else numpy.uint64
    payload = rng.randint(0, 1 << 20, int(nan.sum())).astype(uint)
    values.view(uint)[nan] ^= payload
    return values


# name -> (shape, how the operand is taken from a bigger array)
LAYOUTS = {
    '0d': ((), None),
    '1': ((1,), None),
    '2': ((2,), None),
    '17': ((17,), None),
    '33': ((33,), None),
    '64': ((64,), None),
    '3x5': ((3, 5), None),
    '2x3x4': ((2, 3, 4), None),
    'empty': ((0,), None),
    'empty_2d': ((4, 0), None),
    'strided_1d': ((9,), lambda a: a[::3]),
    'one_of_strided': ((5,), lambda a: a[::5]),
}


def _operand(layout, dtype, rng):
    shape, take = LAYOUTS[layout]
    n = int(numpy.prod(shape))
    if take is None:
        return _specials(dtype, n, rng).reshape(shape)
    return take(_specials(dtype, n, rng))


@pytest.mark.parametrize('broadcast', ['none', 'a', 'b'])
@pytest.mark.parametrize('layout', sorted(LAYOUTS))
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('ufunc', UFUNCS, ids=lambda u: u.__name__)
def test_same_bits_as_the_ufunc(ufunc, dtype, layout, broadcast):
    # broadcast: which operand is 0-d (the trivial path broadcasts it).
    rng = numpy.random.RandomState(0)
    loop = Binary(ufunc)
    for _ in range(20):
        a = _operand('0d' if broadcast == 'a' else layout, dtype, rng)
        b = _operand('0d' if broadcast == 'b' else layout, dtype, rng)
        with numpy.errstate(all='ignore'):
            expected = numpy.asarray(ufunc(a, b))
        actual, raised = loop(a, b)
        _check_same_array(actual, expected)


def _check_same_array(actual, expected):
    """``actual`` is a new array as NumPy allocates ``expected``, with its
    bits (NaN bits too, where NumPy reproduces them itself: NumPy 1.26
    always)."""
    assert type(actual) is numpy.ndarray
    assert actual.dtype is expected.dtype
    assert actual.shape == expected.shape
    assert actual.strides == expected.strides
    assert actual.flags.owndata and actual.flags.writeable
    assert bits(actual) == bits(expected)


@pytest.mark.parametrize('ufunc', UFUNCS, ids=lambda u: u.__name__)
@pytest.mark.parametrize('values', [
    ([3e38, 1.0], [3e38, 2.0]),             # + and * overflow
    ([numpy.inf, 1.0], [numpy.inf, 0.0]),   # - invalid, * fine
    ([1e-30, 0.0], [1e-20, numpy.inf]),     # * underflows, * invalid
    ([1.0, 2.0], [3.0, 4.0]),               # none
])
def test_raised_flags_are_the_ufuncs(ufunc, values):
    a, b = (numpy.array(v, numpy.float32) for v in values)
    _, raised = Binary(ufunc)(a, b)
    assert raised == _ufunc_flags(ufunc, a, b)


def _ufunc_flags(ufunc, a, b):
    """The flags ``ufunc(a, b)`` raises, as ``fenv.h`` numbers them."""
    flags = []
    with numpy.errstate(all='call',
                        call=lambda kind, flag: flags.append(flag)):
        ufunc(a, b)
    return fenv_flags(sum(set(flags)))


# name -> operands the loop leaves to the ufunc
NOT_TAKEN = {
    'fortran': lambda: (numpy.ones((3, 2), numpy.float32).T,
                        numpy.ones((2, 3), numpy.float32)),
    'transposed_both': lambda: (numpy.ones((3, 2), numpy.float32).T,
                                numpy.ones((3, 2), numpy.float32).T),
    'dtypes': lambda: (numpy.ones(3, numpy.float32),
                       numpy.ones(3, numpy.float64)),
    'float16': lambda: (numpy.ones(3, numpy.float16),
                        numpy.ones(3, numpy.float16)),
    'int32': lambda: (numpy.ones(3, numpy.int32), numpy.ones(3, numpy.int32)),
    'byte_swapped': lambda: (numpy.ones(3, '>f4'), numpy.ones(3, '>f4')),
    'shapes': lambda: (numpy.ones((2, 3), numpy.float32),
                       numpy.ones((3,), numpy.float32)),
    'broadcast': lambda: (numpy.ones((2, 3), numpy.float32),
                          numpy.ones((1, 3), numpy.float32)),
    'subclass': lambda: (numpy.ones(3, numpy.float32).view(numpy.matrix),
                         numpy.ones(3, numpy.float32)),
    'scalar': lambda: (numpy.float32(1), numpy.ones(3, numpy.float32)),
    'large_broadcast': lambda: (numpy.ones(4097, numpy.float32),
                                numpy.zeros((), numpy.float32)),
    'unaligned': lambda: (
        numpy.frombuffer(bytearray(13), numpy.float32, 3, 1),
        numpy.ones(3, numpy.float32)),
}


@pytest.mark.parametrize('case', sorted(NOT_TAKEN))
def test_other_operands_are_left_to_the_ufunc(case):
    a, b = NOT_TAKEN[case]()
    assert Binary(numpy.add)(a, b) == (None, 0)


# name -> layout of ``a`` and ``b`` for ``ufunc(a, b, out=a)``
INTO_LAYOUTS = ['1', '2', '17', '33', '64', '3x5', '2x3x4', 'empty',
                'empty_2d']


@pytest.mark.parametrize('b_layout', ['same', 'strided_1d'])
@pytest.mark.parametrize('layout', INTO_LAYOUTS)
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('ufunc', UFUNCS, ids=lambda u: u.__name__)
def test_into_same_bits_as_the_ufunc_in_place(ufunc, dtype, layout,
                                              b_layout):
    # NumPy's in-place loop on one element keeps the other NaN than its
    # loop into a new array: the same loop, called the same way, must.
    if b_layout == 'strided_1d' and len(LAYOUTS[layout][0]) != 1:
        pytest.skip('a strided 1-d operand')
    rng = numpy.random.RandomState(2)
    loop = Binary(ufunc)
    for _ in range(20):
        a = _operand(layout, dtype, rng)
        if b_layout == 'same':
            b = _operand(layout, dtype, rng)
        else:
            b = _specials(dtype, 3 * a.size, rng)[::3]
        expected = a.copy()
        with numpy.errstate(all='ignore'):
            ufunc(expected, b, out=expected)
        before = a.__array_interface__['data'][0]
        assert loop.apply_into(a, b)[0]
        assert a.__array_interface__['data'][0] == before
        assert bits(a) == bits(expected)


# name -> operands ``into`` leaves to the ufunc, untouched
INTO_NOT_TAKEN = dict(NOT_TAKEN, **{
    'same_array': lambda: (lambda a: (a, a))(numpy.ones(3, numpy.float32)),
    'overlapping': lambda: (lambda base: (base[1:], base[:-1]))(
        numpy.ones(4, numpy.float32)),
    'strided_out': lambda: (numpy.ones(6, numpy.float32)[::2],
                            numpy.ones(3, numpy.float32)),
    'read_only': lambda: (numpy.broadcast_to(
        numpy.ones(3, numpy.float32), (2, 3)),
        numpy.ones((2, 3), numpy.float32)),
    '0d_both': lambda: (numpy.ones((), numpy.float32),
                        numpy.ones((), numpy.float32)),
    '0d_operand': lambda: (numpy.ones(3, numpy.float32),
                           numpy.ones((), numpy.float32)),
})


@pytest.mark.parametrize('case', sorted(INTO_NOT_TAKEN))
def test_into_other_operands_are_left_to_the_ufunc(case):
    a, b = INTO_NOT_TAKEN[case]()
    before = numpy.array(a, copy=True)
    assert Binary(numpy.add).apply_into(a, b) == (False, 0)
    assert bits(numpy.asarray(a)) == bits(before)


# name -> (rows, width, the row operand from an array of twice its length)
ROW_LAYOUTS = {
    '1x1': (1, 1, None),
    '1x32': (1, 32, None),
    '3x17': (3, 17, None),
    '64x33': (64, 33, None),
    '300x40': (300, 40, None),      # more than one buffer
    '3000x3': (3000, 3, None),      # a short row repeated many times
    '1000x9_strided': (1000, 9, lambda b: b[::2]),
    '2x5000': (2, 5000, None),
    'strided_bias': (4, 9, lambda b: b[::2]),
    'reversed_bias': (5, 8, lambda b: b[::-2]),
    'one_row_strided': (1, 9, lambda b: b[1::2]),
    'no_rows': (0, 5, None),
    'no_columns': (3, 0, None),
}


@pytest.mark.parametrize('layout', sorted(ROW_LAYOUTS))
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('ufunc', UFUNCS, ids=lambda u: u.__name__)
def test_rows_same_bits_as_the_ufunc_in_place(ufunc, dtype, layout,
                                              buffer_size):
    # Where two NaNs meet, SIMD and scalar code keep different ones: the
    # loop must be called as NumPy calls it for every element to match.
    rows, width, take = ROW_LAYOUTS[layout]
    rng = numpy.random.RandomState(1)
    for _ in range(10):
        a = _specials(dtype, rows * width, rng).reshape(rows, width)
        whole = _specials(dtype, width * (2 if take else 1), rng)
        b = take(whole) if take else whole
        expected = a.copy()
        with numpy.errstate(all='ignore'):
            ufunc(expected, b, out=expected)
        done, _ = Binary(ufunc).add_rows(a, b)
        if rows > 1 and width > buffer_size:
            assert not done     # NumPy's own runs: left to it
            continue
        assert done
        assert bits(a) == bits(expected)


@pytest.mark.parametrize('layout', sorted(ROW_LAYOUTS))
@pytest.mark.parametrize('dtype', DTYPES)
def test_rows_where_every_element_meets_two_nans(dtype, layout):
    # Which of two NaNs survives depends on the branch of the loop that
    # adds them: NaNs of both signs everywhere tell every branch apart.
    rows, width, take = ROW_LAYOUTS[layout]
    a = numpy.full((rows, width), numpy.nan, dtype)
    whole = numpy.full(width * (2 if take else 1), -numpy.nan, dtype)
    b = take(whole) if take else whole
    expected = a.copy()
    numpy.add(expected, b, out=expected)
    done, _ = Binary(numpy.add).add_rows(a, b)
    assert done
    assert bits(a) == bits(expected)


@pytest.mark.parametrize('values', [
    ([3e38, 1.0], [3e38, 2.0]),             # overflow
    ([numpy.inf, 1.0], [-numpy.inf, 0.0]),  # invalid
    ([1.0, 2.0], [3.0, 4.0]),               # none
])
@pytest.mark.parametrize('method', ['add_rows', 'apply_into'])
def test_in_place_raises_the_ufuncs_flags(method, values):
    a, b = (numpy.array(v, numpy.float32) for v in values)
    if method == 'add_rows':
        a = a[None]     # one row
    expected = a.copy()
    flags = []
    with numpy.errstate(all='call',
                        call=lambda kind, flag: flags.append(flag)):
        numpy.add(expected, b, out=expected)
    done, raised = getattr(Binary(numpy.add), method)(a, b)
    assert done and raised == fenv_flags(sum(set(flags)))


def _row_view_of(a):
    return a, a[1]


# name -> operands add_rows leaves to the ufunc, untouched
ROWS_NOT_TAKEN = {
    'bias_inside': lambda: _row_view_of(numpy.ones((3, 4), numpy.float32)),
    'bias_in_another_view': lambda: (lambda base: (base[:2], base[1]))(
        numpy.ones((3, 4), numpy.float32)),
    'fortran': lambda: (numpy.ones((4, 3), numpy.float32).T,
                        numpy.ones(4, numpy.float32)),
    'read_only': lambda: (numpy.broadcast_to(
        numpy.ones(3, numpy.float32), (2, 3)), numpy.ones(3, numpy.float32)),
    'dtypes': lambda: (numpy.ones((2, 3), numpy.float32),
                       numpy.ones(3, numpy.float64)),
    'float16': lambda: (numpy.ones((2, 3), numpy.float16),
                        numpy.ones(3, numpy.float16)),
    'width': lambda: (numpy.ones((2, 3), numpy.float32),
                      numpy.ones(2, numpy.float32)),
    'bias_2d': lambda: (numpy.ones((2, 3), numpy.float32),
                        numpy.ones((1, 3), numpy.float32)),
    'rows_1d': lambda: (numpy.ones(3, numpy.float32),
                        numpy.ones(3, numpy.float32)),
    'one_column': lambda: (numpy.ones((4, 1), numpy.float32),
                           numpy.ones(1, numpy.float32)),
    'subclass': lambda: (numpy.ones((2, 3), numpy.float32).view(numpy.matrix),
                         numpy.ones(3, numpy.float32)),
}


@pytest.mark.parametrize('case', sorted(ROWS_NOT_TAKEN))
def test_rows_other_operands_are_left_to_the_ufunc(case):
    a, b = ROWS_NOT_TAKEN[case]()
    before = a.copy()
    assert Binary(numpy.add).add_rows(a, b) == (False, 0)
    assert bits(numpy.asarray(a)) == bits(numpy.asarray(before))


REDUCE_SHAPES = [(1,), (2,), (7,), (8,), (9,), (16,), (17,), (127,), (128,),
                 (129,), (255,), (256,), (257,), (1000,), (8191,), (8193,),
                 (20011,), (3, 5), (4, 32), (1, 32), (2, 3, 4), (64, 129),
                 (), (1, 1)]


@pytest.fixture(params=[None, 16, 10000])
def buffer_size(request):
    """NumPy's ufunc buffer size, the default or one set."""
    if request.param is None:
        yield numpy.getbufsize()
        return
    old = numpy.setbufsize(request.param)
    yield request.param
    numpy.setbufsize(old)


def _window(rows, cols, dtype, rng):
    # The rows of a column window of a wider array (a gradient split from a
    # stacked one).
    return _specials(dtype, rows * (cols + 7), rng).reshape(
        rows, cols + 7)[:, 2:2 + cols]


def _whole(rows, cols, dtype, rng):
    return _specials(dtype, rows * cols, rng).reshape(rows, cols)


# name -> (rows, columns, how a is made, how b is made)
APART_LAYOUTS = {
    'b_window': (6, 37, _whole, _window),
    'a_window': (6, 37, _window, _whole),
    'both_windows': (5, 33, _window, _window),
    'two_runs': (300, 37, _whole, _window),         # more than a buffer
    'square': (256, 256, _whole, _window),
    'long_rows': (3, 9000, _whole, _window),        # rows over the buffer
}


@pytest.mark.parametrize('in_place', [False, True])
@pytest.mark.parametrize('layout', sorted(APART_LAYOUTS))
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('ufunc', UFUNCS, ids=lambda u: u.__name__)
def test_apart_same_bits_as_the_ufunc(ufunc, dtype, layout, in_place,
                                      buffer_size):
    # NumPy buffers the operand whose rows lie apart and calls its loop in
    # runs of its buffer size over the flattened elements; where two NaNs
    # meet, the loop's branch decides which stays.
    rows, cols, make_a, make_b = APART_LAYOUTS[layout]
    rng = numpy.random.RandomState(2)
    a, b = make_a(rows, cols, dtype, rng), make_b(rows, cols, dtype, rng)
    with numpy.errstate(all='ignore'):
        if in_place and a.flags.c_contiguous:
            expected = a.copy()
            ufunc(expected, b, out=expected)
        else:
            expected = ufunc(a, b)
    out, _ = Binary(ufunc).apart(a, b, in_place)
    if cols > buffer_size or (in_place and not a.flags.c_contiguous):
        assert out is None      # NumPy's own runs, or a is not writable so
        return
    assert out is not None
    if in_place:
        assert out is a
    assert out.flags.c_contiguous and out.strides == expected.strides
    assert bits(out) == bits(expected)


@pytest.mark.parametrize('dtype', DTYPES)
def test_apart_where_every_element_meets_two_nans(dtype):
    a = numpy.full((40, 300), numpy.nan, dtype)
    b = numpy.full((40, 310), -numpy.nan, dtype)[:, 5:305]
    expected = numpy.add(a, b)
    out, _ = Binary(numpy.add).apart(a, b)
    assert bits(out) == bits(expected)


@pytest.mark.parametrize('values', [
    ([3e38, 1.0], [3e38, 2.0]),             # overflow
    ([numpy.inf, 1.0], [-numpy.inf, 0.0]),  # invalid
    ([1.0, 2.0], [3.0, 4.0]),               # none
])
def test_apart_raises_the_ufuncs_flags(values):
    a = numpy.array([values[0]] * 3, numpy.float32)
    b = numpy.array([values[1] + [0.0]] * 3, numpy.float32)[:, :2]
    flags = []
    with numpy.errstate(all='call',
                        call=lambda kind, flag: flags.append(flag)):
        numpy.add(a, b)
    out, raised = Binary(numpy.add).apart(a, b)
    assert out is not None and raised == fenv_flags(sum(set(flags)))


@pytest.mark.parametrize('case', [
    lambda r: (r.rand(4, 6), r.rand(4, 6)),                 # both C: call's
    lambda r: (r.rand(4, 6), r.rand(6, 4).T),               # a transpose
    lambda r: (r.rand(4, 6), r.rand(4, 12)[:, ::2]),        # strided rows
    lambda r: (r.rand(4, 6), r.rand(4, 7).astype('f4')[:, :6]),
    lambda r: (r.rand(1, 6), r.rand(1, 7)[:, :6]),          # one row
    lambda r: (r.rand(4, 1), r.rand(4, 2)[:, :1]),          # one column
    lambda r: (r.rand(4, 6), numpy.lib.stride_tricks.as_strided(
        r.rand(40), (4, 6), (16, 8))),                      # rows overlap
    lambda r: (r.rand(2, 3, 4), r.rand(2, 3, 5)[..., :4]),  # 3-d
], ids=['both_c', 'transposed', 'strided_rows', 'dtypes', 'one_row',
        'one_column', 'overlapping_rows', 'three_d'])
def test_apart_leaves_other_operands_to_the_ufunc(case):
    a, b = case(numpy.random.RandomState(0))
    assert Binary(numpy.add).apart(a, b) == (None, 0)


@pytest.mark.parametrize('keepdims', [False, True])
@pytest.mark.parametrize('shape', REDUCE_SHAPES, ids=str)
@pytest.mark.parametrize('dtype', DTYPES)
def test_reduction_same_bits_as_the_ufuncs_reduce(dtype, shape, keepdims,
                                                   buffer_size):
    rng = numpy.random.RandomState(1)
    reduction = Reduction(numpy.add)
    n = int(numpy.prod(shape))
    for trial in range(12):
        if trial < 4:
            # Magnitudes far apart: the order of the additions shows.
            a = (rng.randn(n) * 10.0 ** rng.randint(-8, 9, n)).astype(dtype)
        else:
            a = _specials(dtype, n, rng)
        a = a.reshape(shape)
        with numpy.errstate(all='ignore'):
            expected = numpy.asarray(numpy.add.reduce(
                a, axis=None, keepdims=keepdims))
        actual, raised = reduction(a, keepdims)
        assert actual.dtype is expected.dtype
        assert actual.shape == expected.shape
        assert bits(actual) == bits(expected), (trial, a)
        flags = []
        with numpy.errstate(all='call',
                            call=lambda kind, flag: flags.append(flag)):
            numpy.add.reduce(a, axis=None, keepdims=keepdims)
        assert raised == fenv_flags(sum(set(flags)))


@pytest.mark.parametrize('case', ['fortran', 'strided', 'empty', 'float16',
                                  'int32', 'byte_swapped', 'subclass'])
def test_reduction_leaves_other_arrays_to_the_ufunc(case):
    a = {'fortran': lambda: numpy.ones((3, 2), numpy.float32).T,
         'strided': lambda: numpy.ones(6, numpy.float32)[::2],
         'empty': lambda: numpy.ones((2, 0), numpy.float32),
         'float16': lambda: numpy.ones(3, numpy.float16),
         'int32': lambda: numpy.ones(3, numpy.int32),
         'byte_swapped': lambda: numpy.ones(3, '>f4'),
         'subclass': lambda: numpy.ones((1, 3), numpy.float32).view(
             numpy.matrix)}[case]()
    assert Reduction(numpy.add)(a) == (None, 0)


@pytest.mark.parametrize('value', [0.5, 1, -2.75])
@pytest.mark.parametrize('dtype', DTYPES + [numpy.float16, numpy.int32])
def test_constant_is_the_operand_numpy_makes_of_stocks_scalar(value, dtype):
    rng = numpy.random.RandomState(3)
    x = (_specials(dtype, 7, rng) if dtype in DTYPES
         else numpy.arange(7).astype(dtype))
    c = Constant(value)(x)
    scalar = x.dtype.type(value)
    assert numpy.asarray(c).dtype == x.dtype
    assert bits(numpy.asarray(c)) == bits(numpy.asarray(scalar))
    if dtype in DTYPES:
        assert type(c) is numpy.ndarray and c.shape == ()
        assert not c.flags.writeable
        # As an operand it gives what the scalar gives, bit for bit.
        with numpy.errstate(all='ignore'):
            assert bits(Binary(numpy.subtract)(c, x)[0]) == bits(
                numpy.subtract(scalar, x))
    else:
        assert type(c) is dtype


def test_constant_beside_a_subclass_is_the_scalar():
    m = numpy.ones(3, numpy.float32).view(numpy.matrix)
    assert type(Constant(1)(m)) is numpy.float32


# Python numbers as stock's constant nodes take them: the value's conversion
# to float32 is exact, rounds, or is the number zero of either sign.
VALUES = [0.5, 1, -2.75, 0.1, -0.0, 0, 1e-3, 65504.0, 2.0 ** -14, 3]


@pytest.mark.parametrize('value_first', [False, True])
@pytest.mark.parametrize('layout', sorted(LAYOUTS))
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('ufunc', UFUNCS + [numpy.true_divide],
                         ids=lambda u: u.__name__)
def test_value_same_bits_as_the_ufunc_of_the_scalar(ufunc, dtype, layout,
                                                    value_first):
    # What stock's AddConstant and its kind compute: the array and
    # ``x.dtype.type(value)``, the NumPy scalar, in either order.
    rng = numpy.random.RandomState(5)
    loop = Binary(ufunc)
    for value in VALUES:
        x = _operand(layout, dtype, rng)
        c = x.dtype.type(value)
        with numpy.errstate(all='ignore'):
            expected = numpy.asarray(ufunc(c, x) if value_first
                                     else ufunc(x, c))
        actual, raised = loop.with_value(x, value, value_first)
        _check_same_array(actual, expected)


@pytest.mark.parametrize('value_first', [False, True])
@pytest.mark.parametrize('ufunc', [numpy.add, numpy.multiply,
                                   numpy.true_divide],
                         ids=lambda u: u.__name__)
@pytest.mark.parametrize('values', [
    [3e38, -3e38, 1.0],         # overflow
    [numpy.inf, 0.0, 1.0],      # invalid, divide by zero
    [1e-39, 1e-44, 2.0],        # underflow
    [1.0, 2.0, 3.0],            # none
])
def test_value_raises_the_ufuncs_flags(values, ufunc, value_first):
    x = numpy.array(values, numpy.float32)
    for value in (0, 65504.0, 2.0 ** -14, -1):
        c = numpy.float32(value)
        a, b = (c, x) if value_first else (x, c)
        _, raised = Binary(ufunc).with_value(x, value, value_first)
        assert raised == _ufunc_flags(ufunc, a, b)


@pytest.mark.parametrize('case', [
    'fortran', 'float16', 'int32', 'byte_swapped', 'subclass', 'unaligned',
    'large_broadcast'])
def test_value_leaves_other_arrays_to_the_ufunc(case):
    x = {**NOT_TAKEN, 'large_broadcast': lambda: (
        numpy.ones(4097, numpy.float32), None)}[case]()[0]
    assert Binary(numpy.add).with_value(x, 1.5) == (None, 0)


def _broadcast_view(rng, dtype, shape, view):
    # An operand of ``shape`` as a program makes one: C-ordered, a window
    # of a wider array, every other column, broadcast along a new axis.
    if view == 'c':
        return rng.randn(*shape).astype(dtype)
    if view == 'window':
        return rng.randn(*shape[:-1], shape[-1] + 3).astype(dtype)[
            ..., :shape[-1]]
    if view == 'every_other':
        return rng.randn(*shape[:-1], shape[-1] * 2).astype(dtype)[..., ::2]
    return numpy.broadcast_to(
        numpy.array(rng.randn(*shape[1:]), dtype), shape)


# (shape of a, shape of b): CRF1d's alpha[..., None] against its cost
# matrix, a row or a column against a matrix, keepdims reductions, a 0-d
# operand, one item, four axes of which three are counted outside the run.
BROADCAST_SHAPES = [((3, 5, 1), (5, 5)), ((3, 5, 5), (3, 1, 5)),
                    ((4, 6), (6,)), ((4, 1), (4, 6)), ((1,), (2, 3, 4)),
                    ((2, 3), ()), ((1, 1), (1,)), ((2, 1, 3), (4, 1)),
                    ((0, 3), (3,)), ((2, 1, 3, 1), (4, 1, 5))]


@pytest.mark.parametrize('view', ['c', 'window', 'every_other', 'lead'])
@pytest.mark.parametrize('shapes', BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('ufunc', [numpy.add, numpy.subtract,
                                   numpy.multiply, numpy.true_divide])
def test_broadcast_same_array_as_the_ufunc(ufunc, dtype, shapes, view):
    rng = numpy.random.RandomState(0)
    a_shape, b_shape = shapes
    a = rng.randn(*a_shape).astype(dtype)
    b = (_broadcast_view(rng, dtype, b_shape, view) if b_shape
         else numpy.array(rng.randn(), dtype))
    for x, y in ((a, b), (b, a)):
        out, raised = Binary(ufunc).broadcast(x, y)
        with numpy.errstate(divide='ignore'):
            expected = ufunc(x, y)
        assert out is not None
        assert (out.shape, out.strides, out.dtype) == (
            expected.shape, expected.strides, expected.dtype)
        assert bits(out) == bits(expected)
        assert out.flags.c_contiguous and out.flags.writeable


@pytest.mark.parametrize('values', [
    ([3e38, 1.0], [3e38, 2.0]),             # + and * overflow
    ([1e-30, 0.0], [1e-20, 5.0]),           # * underflows
    ([1.0, 2.0], [3.0, 4.0]),               # none
])
def test_broadcast_raises_the_ufuncs_flags(values):
    a = numpy.array(values[0], numpy.float32)[:, None]
    b = numpy.broadcast_to(numpy.array(values[1], numpy.float32), (2, 2))
    for ufunc in (numpy.add, numpy.multiply, numpy.true_divide):
        _, raised = Binary(ufunc).broadcast(a, b)
        assert raised == _ufunc_flags(ufunc, a, b)


# name -> operands ``broadcast`` leaves to the ufunc
BROADCAST_NOT_TAKEN = {
    # A NaN result: which NaN depends on how NumPy's iterator runs.
    'nan': lambda: (numpy.array([[numpy.nan], [1.0]], numpy.float32),
                    numpy.ones((2, 3), numpy.float32)),
    'inf_minus_inf': lambda: (
        numpy.array([numpy.inf], numpy.float32)[:, None],
        numpy.full((1, 2), numpy.inf, numpy.float32)[:, ::-1] * 1),
    # NumPy's iterator puts these axes in another order, and its output.
    'transposed': lambda: (numpy.ones((3, 2), numpy.float32).T,
                           numpy.ones((2, 1), numpy.float32)),
    'reversed': lambda: (numpy.ones((2, 3), numpy.float32)[:, ::-1],
                         numpy.ones((2, 3), numpy.float32)),
    'clash': lambda: (numpy.ones((2, 3), numpy.float32),
                      numpy.ones((2,), numpy.float32)),
    'dtypes': lambda: (numpy.ones((2, 3), numpy.float32),
                       numpy.ones((3,), numpy.float64)),
    'int32': lambda: (numpy.ones((2, 3), numpy.int32),
                      numpy.ones((3,), numpy.int32)),
    'maximum': lambda: (numpy.ones((2, 3), numpy.float32),
                        numpy.ones((3,), numpy.float32)),
    'unaligned': lambda: (
        numpy.frombuffer(bytearray(13), numpy.float32, 3, 1),
        numpy.ones((2, 3), numpy.float32)),
}


@pytest.mark.parametrize('case', sorted(BROADCAST_NOT_TAKEN))
def test_broadcast_leaves_other_operands_to_the_ufunc(case):
    a, b = BROADCAST_NOT_TAKEN[case]()
    ufunc = numpy.maximum if case == 'maximum' else numpy.subtract
    with numpy.errstate(all='ignore'):
        assert Binary(ufunc).broadcast(a, b) == (None, 0)


UNARY = [numpy.exp, numpy.log, numpy.tanh]


@pytest.mark.parametrize('in_place', [False, True])
@pytest.mark.parametrize('shape', [(1,), (7,), (3, 5), (1000,), (100003,)])
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('ufunc', UNARY, ids=lambda u: u.__name__)
def test_unary_same_bits_and_flags_as_the_ufunc(ufunc, dtype, shape,
                                                in_place):
    rng = numpy.random.RandomState(3)
    a = _specials(dtype, int(numpy.prod(shape)), rng).reshape(shape)
    a[::4] = numpy.abs(a[::4])      # log of positive numbers, too
    out = a.copy() if in_place else numpy.empty_like(a)
    expected = numpy.empty_like(a)
    flags = []
    with numpy.errstate(all='call',
                        call=lambda kind, flag: flags.append(flag)):
        ufunc(a, expected)
    done, raised = UfuncLoop(ufunc, numpy.dtype(dtype).num).apply_unary(
        out if in_place else a, out)
    assert done
    assert raised == fenv_flags(sum(set(flags)))
    assert bits(out) == bits(expected)


# name -> (a, out) the loop leaves to the ufunc
UNARY_NOT_TAKEN = {
    'strided': lambda: (numpy.ones(6, numpy.float32)[::2],
                        numpy.ones(3, numpy.float32)),
    'fortran_out': lambda: (numpy.ones(6, numpy.float32),
                            numpy.ones((3, 2), numpy.float32).T),
    'other_dtype': lambda: (numpy.ones(3, numpy.float64),
                            numpy.ones(3, numpy.float32)),
    'float16': lambda: (numpy.ones(3, numpy.float16),
                        numpy.ones(3, numpy.float16)),
    'byte_swapped': lambda: (numpy.ones(3, '>f4'), numpy.ones(3, '>f4')),
    'sizes': lambda: (numpy.ones(3, numpy.float32),
                      numpy.ones(4, numpy.float32)),
    'empty': lambda: (numpy.ones(0, numpy.float32),
                      numpy.ones(0, numpy.float32)),
    'read_only_out': lambda: (numpy.ones(3, numpy.float32), _read_only(3)),
    'overlapping': lambda: _shifted_views(),
    'subclass': lambda: (numpy.ones(3, numpy.float32).view(numpy.matrix),
                         numpy.ones(3, numpy.float32)),
    'unaligned': lambda: (
        numpy.frombuffer(bytearray(13), numpy.float32, 3, 1),
        numpy.ones(3, numpy.float32)),
}


def _read_only(n):
    a = numpy.ones(n, numpy.float32)
    a.flags.writeable = False
    return a


def _shifted_views():
    base = numpy.ones(5, numpy.float32)
    return base[:4], base[1:]


@pytest.mark.parametrize('case', sorted(UNARY_NOT_TAKEN))
def test_unary_other_operands_are_left_to_the_ufunc(case):
    a, out = UNARY_NOT_TAKEN[case]()
    before = out.copy()
    loop = UfuncLoop(numpy.exp, numpy.dtype(numpy.float32).num)
    assert loop.apply_unary(a, out) == (False, 0)
    assert bits(out) == bits(before)


@pytest.mark.parametrize('shape', [(1,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('ufunc', UNARY, ids=lambda u: u.__name__)
def test_unary_new_array_as_the_ufunc_makes(ufunc, dtype, shape):
    rng = numpy.random.RandomState(6)
    a = numpy.abs(_specials(dtype, int(numpy.prod(shape)), rng)).reshape(
        shape)
    got, _ = FloatLoops(ufunc).unary_of(a)
    with numpy.errstate(all='ignore'):
        want = ufunc(a)
    assert (got.dtype, got.shape, got.strides) == (
        want.dtype, want.shape, want.strides)
    assert bits(got) == bits(want)


def _unpickled(a):
    import pickle
    return pickle.loads(pickle.dumps(a))


# name -> an array the ufunc's own call is left for
UNARY_NEW_NOT_TAKEN = {
    '0d': lambda: numpy.float32(2).reshape(()),
    'empty': lambda: numpy.ones((0, 3), numpy.float32),
    'fortran': lambda: numpy.ones((3, 2), numpy.float32).T,
    'float16': lambda: numpy.ones(3, numpy.float16),
    'unpickled_dtype': lambda: _unpickled(numpy.ones(3, numpy.float32)),
    'subclass': lambda: numpy.ones(3, numpy.float32).view(numpy.matrix),
    'list': lambda: [1.0, 2.0],
}


@pytest.mark.parametrize('case', sorted(UNARY_NEW_NOT_TAKEN))
def test_unary_new_leaves_other_arrays_to_the_ufunc(case):
    a = UNARY_NEW_NOT_TAKEN[case]()
    if case == 'unpickled_dtype':
        assert not a.dtype.isbuiltin
    assert FloatLoops(numpy.tanh).unary_of(a) == (None, 0)
