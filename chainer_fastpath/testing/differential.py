"""Differential testing: the same callable stock and patched, compared bit
for bit."""
import contextlib
import math
import random
import warnings

import numpy

import chainer
import chainer.functions


@contextlib.contextmanager
def _mode(patched, enable_kwargs):
    import chainer_fastpath
    from chainer_fastpath import _patch

    previous = _patch.installed()
    try:
        if patched:
            if not chainer_fastpath.enable(**enable_kwargs):
                raise RuntimeError('chainer_fastpath could not be enabled')
        else:
            chainer_fastpath.disable()
        yield
    finally:
        _patch.install(previous)


def run_both(fn, seed=0, **enable_kwargs):
    """Runs ``fn()`` stock, then patched, from the same random seeds.

    ``fn`` must build everything it uses (models, inputs, optimizers) so the
    two runs share nothing. Returns ``(stock_result, patched_result)``.
    ``enable_kwargs`` select the patched parts, as in ``enable()``.
    """
    results = []
    for patched in (False, True):
        with _mode(patched, enable_kwargs):
            numpy.random.seed(seed)
            random.seed(seed)
            results.append(fn())
    return tuple(results)


#: Whether stock's NaN bits follow from its inputs alone. Which NaN an
#: operation on two NaNs keeps is up to NumPy's loops; NumPy 1.24's (the
#: newest for Python 3.8) choose by the alignment of the arrays, temporaries
#: included, so stock differs from itself run to run in NaN bits, and in
#: nothing else. Where they do not follow, comparisons take every NaN of a
#: dtype for one NaN (its position still counts).
NAN_BITS_REPRODUCIBLE = (numpy.lib.NumpyVersion(numpy.__version__)
                         >= '1.26.0')


def bits(a):
    """The bytes of the array ``a`` that stock reproduces: all of them, or
    without NaN bits where :data:`NAN_BITS_REPRODUCIBLE` is false."""
    if not NAN_BITS_REPRODUCIBLE and a.dtype.kind in 'fc' and a.size:
        a = numpy.array(a)
        with numpy.errstate(invalid='ignore'):
            if a.dtype.kind == 'c':
                a.real[numpy.isnan(a.real)] = numpy.nan
                a.imag[numpy.isnan(a.imag)] = numpy.nan
            else:
                a[numpy.isnan(a)] = numpy.nan
    return a.tobytes()


def assert_same(expected, actual, path='result'):
    """Asserts two results are identical: arrays by dtype, shape and bytes
    (:func:`bits`), Variables by array and grad, containers element by
    element."""
    if isinstance(expected, chainer.Variable):
        assert isinstance(actual, chainer.Variable), (
            '{}: {!r} is not a Variable'.format(path, type(actual)))
        assert_same(expected.array, actual.array, path + '.array')
        assert_same(expected.grad, actual.grad, path + '.grad')
        return
    if isinstance(expected, numpy.ndarray) or isinstance(
            actual, numpy.ndarray):
        assert type(actual) is type(expected), '{}: {} vs {}'.format(
            path, type(expected), type(actual))
        assert expected.dtype == actual.dtype, '{}: dtype {} vs {}'.format(
            path, expected.dtype, actual.dtype)
        assert expected.shape == actual.shape, '{}: shape {} vs {}'.format(
            path, expected.shape, actual.shape)
        if bits(expected) != bits(actual):
            diff = numpy.argwhere(expected != actual)
            raise AssertionError('{}: arrays differ at {} places, first {}:'
                                 ' {!r} vs {!r}'.format(
                                     path, len(diff), tuple(diff[0]),
                                     expected[tuple(diff[0])],
                                     actual[tuple(diff[0])])
                                 if len(diff) else
                                 '{}: arrays differ bitwise'.format(path))
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and expected.keys() == actual.keys(), (
            '{}: keys {} vs {}'.format(path, sorted(expected),
                                       sorted(actual)))
        for k in expected:
            assert_same(expected[k], actual[k], '{}[{!r}]'.format(path, k))
        return
    if isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(
            expected), '{}: {!r} vs {!r}'.format(path, expected, actual)
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, '{}[{}]'.format(path, i))
        return
    if isinstance(expected, float) and math.isnan(expected):
        assert isinstance(actual, float) and math.isnan(actual), (
            '{}: nan vs {!r}'.format(path, actual))
        return
    assert type(expected) is type(actual) and expected == actual, (
        '{}: {!r} vs {!r}'.format(path, expected, actual))


def check_same(fn, seed=0, **enable_kwargs):
    """Runs ``fn`` stock and patched and asserts identical results."""
    stock, patched = run_both(fn, seed=seed, **enable_kwargs)
    assert_same(stock, patched)
    return stock, patched


# -- one Chainer function's cases, stock vs patched ----------------------

FLOAT_DTYPES = (numpy.float16, numpy.float32, numpy.float64)


def variable(*shape, dtype=numpy.float32, low=-1, high=1,
             requires_grad=True):
    """A Variable of values drawn uniformly from ``[low, high)`` by NumPy's
    global generator (which ``run_both`` seeds)."""
    return chainer.Variable(
        numpy.random.uniform(low, high, shape).astype(dtype),
        requires_grad=requires_grad)


def strided_variable(*shape, dtype=numpy.float32):
    """A Variable like ``variable``'s whose array is a non-contiguous view
    (every other element of the last axis of a larger array)."""
    a = numpy.random.uniform(-1, 1, shape[:-1] + (2 * shape[-1],))
    return chainer.Variable(a.astype(dtype)[..., ::2])


def special_variable(shape, dtype=numpy.float32, take=None):
    """A Variable of NaNs with payloads of both signs, infinities, signed
    zeros and subnormals among normal values (a view of every third
    element of a larger array where ``take``)."""
    n = int(numpy.prod(shape)) * (3 if take else 1)
    uint = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}[
        numpy.dtype(dtype).itemsize]
    values = numpy.linspace(-2, 2, n).astype(dtype)
    pool = numpy.array([numpy.nan, -numpy.nan, numpy.inf, -numpy.inf, 0.0,
                        -0.0, numpy.finfo(dtype).tiny / 2], dtype)
    values[::2] = numpy.resize(pool, values[::2].shape)
    nan = numpy.isnan(values)
    values.view(uint)[nan] ^= numpy.arange(1, nan.sum() + 1).astype(uint)
    values = values[::3] if take else values
    return chainer.Variable(values.reshape(shape))


def misaligned(a):
    """A copy of the array ``a`` at an odd address: C-contiguous and not
    aligned for any dtype wider than a byte."""
    a = numpy.asarray(a)
    b = numpy.zeros(a.nbytes + 1, numpy.uint8)[1:].view(a.dtype)
    b = b.reshape(a.shape)
    b[...] = a
    return b


def applied(f, *inputs):
    """``(inputs, f(*inputs))``: a gradient case's inputs and output."""
    return inputs, f(*inputs)


def grad_vars(*variables):
    """What backward leaves on ``variables``: for each, None or its
    gradient's array, dtype and ``requires_grad``."""
    out = []
    for v in variables:
        gv = v.grad_var
        out.append(None if gv is None
                   else (gv.array, gv.array.dtype, gv.requires_grad))
    return out


def gradients(build, dtype):
    """Runs backward from the output of ``build(dtype)`` (which returns
    ``(inputs, output)``), with a random gradient; returns
    ``grad_vars(*inputs)``."""
    inputs, y = build(dtype)
    y.grad = numpy.random.uniform(-1, 1, y.shape).astype(y.dtype)
    y.backward()
    return grad_vars(*inputs)


def check_gradients_same(build, dtype, type_check=True):
    """Asserts ``gradients(build, dtype)`` is the same stock and patched,
    with ``chainer.config.type_check`` as given."""
    def fn():
        with chainer.using_config('type_check', type_check):
            return gradients(build, dtype)
    return check_same(fn)


def outputs(build, backprop):
    """Calls ``fn(*args)``, ``(fn, args)`` being what ``build()`` returns,
    with ``enable_backprop`` as given; returns the outputs' arrays,
    ``requires_grad`` and whether each has a creator, and with backprop the
    inputs' gradients from the loss ``sum(y * y)`` over the outputs."""
    fn, xs = build()[:2]
    with chainer.using_config('enable_backprop', backprop):
        ys = fn(*xs)
    ys = [ys] if isinstance(ys, chainer.Variable) else list(ys)
    result = {'y': [y.array for y in ys],
              'requires_grad': [y.requires_grad for y in ys],
              'has_creator': [y.creator is not None for y in ys]}
    if backprop:
        loss = sum(chainer.functions.sum(y * y) for y in ys)
        loss.backward()
        result['gx'] = [x.grad if isinstance(x, chainer.Variable) else None
                        for x in xs]
    return result


def check_outputs_same(build, backprop, type_check=True):
    """Asserts ``outputs(build, backprop)`` is the same stock and patched,
    with ``chainer.config.type_check`` as given."""
    with chainer.using_config('type_check', type_check):
        return check_same(lambda: outputs(build, backprop))


def error_of(fn):
    """``(type name, message)`` of the exception ``fn()`` raises, or
    None."""
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e)
    return None


def applied_state(node, inputs):
    """``node.apply(inputs)``'s output arrays, or ``(type name, message)``
    of its error; with the input indexes ``node`` retained meanwhile."""
    try:
        out = [y.array for y in node.apply(inputs)]
    except Exception as e:
        out = type(e).__name__, str(e)
    return out, node._input_indexes_to_retain


def warned(fn):
    """``error_of(fn)`` and every warning it issued, under the filter
    ``always``: ``(category, message, file, line)``, where a filter by
    module or a once-per-location registry looks."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        error = error_of(fn)
    return error, [(w.category, str(w.message), w.filename, w.lineno)
                   for w in caught]


def error_after_passing(first, second):
    """Runs ``first`` (a call whose type check passes, so the patch caches
    it), then ``second``; returns the name of the type of the error
    ``second`` raised, or None."""
    first()
    try:
        second()
    except Exception as e:
        return type(e).__name__
    return None


def check_error_after_passing(first, second):
    """Asserts ``error_after_passing(first, second)`` is the same stock and
    patched; returns it."""
    stock, patched = run_both(lambda: error_after_passing(first, second))
    assert stock == patched
    return stock


def second_order(build, dtype):
    """Backward from the output of ``build(dtype)`` with
    ``enable_double_backprop``, then backward again from the sum of the
    squared first gradients; returns the first gradients' arrays and
    ``grad_vars(*inputs)``."""
    inputs, y = build(dtype)
    gy = chainer.Variable(
        numpy.random.uniform(-1, 1, y.shape).astype(y.dtype))
    gxs = chainer.grad([y], list(inputs), [gy],
                       enable_double_backprop=True)
    loss = None
    for gx in gxs:
        if gx is not None:
            term = chainer.functions.sum(gx * gx)
            loss = term if loss is None else loss + term
    if loss is not None and loss.requires_grad:
        loss.backward()
    return [None if gx is None else gx.array for gx in gxs], grad_vars(
        *inputs)


def check_second_order_same(build, dtype):
    """Asserts ``second_order(build, dtype)`` is the same stock and
    patched."""
    return check_same(lambda: second_order(build, dtype))


def check_error_same(fn, type_check=None):
    """Asserts ``error_of(fn)`` is the same stock and patched (under the
    ``type_check`` configuration where given); returns it."""
    if type_check is None:
        return check_same(lambda: error_of(fn))[0]
    with chainer.using_config('type_check', type_check):
        return check_same(lambda: error_of(fn))[0]
