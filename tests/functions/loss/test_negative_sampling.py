"""F.negative_sampling / L.NegativeSampling (the compiled forwards of
``NegativeSamplingFunction`` and of its gradient node,
``NegativeSamplingFunctionGrad``), stock vs patched."""
import warnings

import numpy
import pytest

import chainer
import chainer.functions as F
import chainer.links as L
from chainer.functions.loss import negative_sampling

from chainer_fastpath.testing import (
    FLOAT_DTYPES, check_same, error_of, warned)
from chainer_fastpath.testing.cases import function_tests

FUNCTION = negative_sampling.NegativeSamplingFunction
GRAD = negative_sampling.NegativeSamplingFunctionGrad
N_VOCAB = 20


def _plant_specials(a, where):
    """NaNs of both signs and two payloads, infinities and -0.0 at a few
    places of ``a`` (in place) where ``where`` holds."""
    if not where:
        return
    flat = a.reshape(-1)
    uint = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}[a.itemsize]
    nan = numpy.array([numpy.nan, -numpy.nan], a.dtype)
    nan.view(uint)[1] ^= uint(5)
    values = numpy.concatenate([nan, numpy.array(
        [numpy.inf, -numpy.inf, -0.0], a.dtype)])
    flat[3::len(flat) // 4 + 1] = values[:len(flat[3::len(flat) // 4 + 1])]


def _case(dtype, reduce='sum', units=7, rows=30, layout='c', scale=1.0,
          ignore=True, sample_size=5, specials=''):
    """Loss, inputs' gradients and the samples of the link on a random
    batch; backward from a random gradient. ``specials`` names the
    operands ('x', 'W') given NaNs, infinities and -0.0."""
    with chainer.using_config('dtype', dtype):
        link = L.NegativeSampling(
            units, numpy.random.randint(1, 50, N_VOCAB), sample_size)
    link.W.array[...] = numpy.random.uniform(-scale, scale, link.W.shape)
    _plant_specials(link.W.array, 'W' in specials)
    x = numpy.random.uniform(-scale, scale, (rows, units)).astype(dtype)
    _plant_specials(x, 'x' in specials)
    if layout == 'f':
        x = numpy.asfortranarray(x)
        link.W.array = numpy.asfortranarray(link.W.array)
    elif layout == 'strided':
        x = numpy.repeat(x, 2, axis=1)[:, ::2]
    elif layout == 'offset':
        # C-ordered, one item past an aligned start
        x = numpy.concatenate([x.reshape(-1)[:1], x.reshape(-1)])[1:]
        x = x.reshape(rows, units)
    t = numpy.random.randint(0, N_VOCAB, rows).astype(numpy.int32)
    if ignore:
        t[::4] = -1
    x = chainer.Variable(x)
    loss, samples = link(x, t, reduce=reduce, return_samples=True)
    loss.grad = numpy.random.uniform(-1, 1, loss.shape).astype(dtype)
    loss.backward()
    return loss.array, x.grad, link.W.grad, samples


def _link_case(reduce, units=7, rows=30):
    """A gradient case: ``(inputs, loss)`` of the link on a random batch."""
    def build(dtype):
        with chainer.using_config('dtype', dtype):
            link = L.NegativeSampling(
                units, numpy.random.randint(1, 50, N_VOCAB), 5)
        link.W.array[...] = numpy.random.uniform(-1, 1, link.W.shape)
        x = chainer.Variable(numpy.random.uniform(
            -1, 1, (rows, units)).astype(dtype))
        t = numpy.random.randint(0, N_VOCAB, rows).astype(numpy.int32)
        t[::4] = -1
        return (x, link.W), link(x, t, reduce=reduce)
    return build


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'sum': lambda: (lambda x, t: F.negative_sampling(
        x, t, chainer.Variable(numpy.random.uniform(
            -1, 1, (N_VOCAB, 7)).astype(numpy.float32)),
        lambda shape: numpy.random.randint(0, N_VOCAB, shape), 5),
        [chainer.Variable(numpy.random.uniform(
            -1, 1, (30, 7)).astype(numpy.float32)),
         numpy.random.randint(0, N_VOCAB, 30).astype(numpy.int32)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'sum': _link_case('sum'),
    'no_reduce': _link_case('no'),
    'one_row': _link_case('sum', rows=1),
}

globals().update(function_tests(APPLY_CASES, BACKWARD_CASES,
                                  second_order=['sum']))


@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
@pytest.mark.parametrize('reduce', ['sum', 'no'])
@pytest.mark.parametrize('options', [
    {}, {'units': 1}, {'units': 100}, {'rows': 1}, {'ignore': False},
    {'layout': 'f'}, {'layout': 'strided'}, {'layout': 'offset'},
    {'ignore': False, 'layout': 'f'}, {'ignore': False, 'layout': 'offset'},
    {'ignore': False, 'units': 100}, {'ignore': False, 'rows': 0},
    {'sample_size': 0}, {'sample_size': 40}, {'specials': 'x'},
    {'specials': 'W'}, {'specials': 'xW'},
    {'specials': 'W', 'sample_size': 40}, {'specials': 'W', 'ignore': False},
    {'specials': 'x', 'ignore': False, 'units': 100}])
def test_loss_gradients_and_samples_same_as_stock(dtype, reduce, options):
    def fn():
        result = []
        # the warnings too, where specials make NumPy warn
        return warned(lambda: result.append(
            _case(dtype, reduce, **options))), result
    check_same(fn)


def _with_sampler(dtype, bad=None):
    """``F.negative_sampling`` with a sampler drawing ``dtype`` samples,
    one of them ``bad`` when given; the error, if any, and the
    gradients."""
    x = chainer.Variable(numpy.random.uniform(-1, 1, (6, 3)))
    W = chainer.Variable(numpy.random.uniform(-1, 1, (N_VOCAB, 3)))
    t = numpy.random.randint(0, N_VOCAB, 6).astype(numpy.int32)

    def sampler(shape):
        samples = numpy.random.randint(0, N_VOCAB, shape).astype(dtype)
        if bad is not None:
            samples[2, 1] = bad
        return samples

    def run():
        F.negative_sampling(x, t, W, sampler, 3).backward()
    return error_of(run), x.grad, W.grad


@pytest.mark.parametrize('dtype', [numpy.int32, numpy.int64])
def test_samples_of_either_int_type_same_as_stock(dtype):
    check_same(lambda: _with_sampler(dtype))


@pytest.mark.parametrize('bad', [-3, N_VOCAB + 1])
def test_samples_outside_w_same_as_stock(bad):
    # Stock's W[k] wraps a negative index and raises on one too large.
    check_same(lambda: _with_sampler(numpy.int32, bad))


def _stock_forward(cls):
    # NegativeSamplingFunction's forward_cpu is wrapped by the fp16 helper,
    # whose code all functions it wraps share.
    f = cls.forward_cpu
    return getattr(f, '__wrapped__', f)


@pytest.mark.parametrize('cls', [FUNCTION, GRAD])
@pytest.mark.parametrize('ignore', [True, False])
def test_compiled_instead_of_the_python_code(compiled_instead, cls, ignore):
    compiled_instead(lambda: _case(numpy.float32, ignore=ignore),
                     _stock_forward(cls))


@pytest.mark.parametrize('cls', [FUNCTION, GRAD])
def test_float16_is_left_to_stock(python_calls, cls):
    import chainer_fastpath
    with chainer_fastpath.enabled():
        assert python_calls(lambda: _case(numpy.float16),
                            _stock_forward(cls)) == 1


def test_flags_rerun_stocks_forward_on_the_samples_drawn(python_calls):
    # A NaN in W: NumPy warns from stock's lines, so stock's forward runs
    # once more, on the samples already drawn: the sampler is called once.
    import chainer_fastpath
    draws = []

    def run():
        x = numpy.random.uniform(-1, 1, (8, 3)).astype(numpy.float32)
        W = numpy.random.uniform(-1, 1, (N_VOCAB, 3)).astype(numpy.float32)
        W[:] = numpy.nan

        def sampler(shape):
            draws.append(shape)
            return numpy.random.randint(0, N_VOCAB, shape)
        t = numpy.random.randint(0, N_VOCAB, 8).astype(numpy.int32)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            loss = F.negative_sampling(x, t, W, sampler, 2)
        return loss.array, [(w.filename, w.lineno) for w in caught]
    stock, patched = check_same(run)
    assert stock[1]     # the case warns
    assert draws == [(8, 3), (8, 3)]
    with chainer_fastpath.enabled():
        assert python_calls(run, _stock_forward(FUNCTION)) == 1


@pytest.mark.parametrize('owner,name', [
    (FUNCTION, 'forward'), (FUNCTION, 'forward_cpu'),
    (FUNCTION, 'retain_inputs'), (FUNCTION, '_make_samples'),
    (FUNCTION, 'backward'), (FUNCTION, 'get_retained_inputs'),
    (GRAD, '__init__'), (GRAD, 'check_type_forward'), (GRAD, 'forward'),
    (GRAD, 'forward_cpu'), (GRAD, 'retain_inputs')])
def test_mock_is_called(mock_is_called, owner, name):
    mock_is_called(owner, name, lambda: _case(numpy.float32, ignore=False))


@pytest.mark.parametrize('type_check', [True, False])
@pytest.mark.parametrize('bad', [
    'x_1d', 'x_3d', 'w_float64', 'w_1d', 't_float', 't_2d', 'rows_fewer',
    'rows_more', 'units_mismatch', 'x_int'])
def test_bad_input_same_as_stock(bad, type_check):
    def fn():
        x = numpy.random.uniform(-1, 1, (6, 3)).astype(numpy.float32)
        W = numpy.random.uniform(-1, 1, (N_VOCAB, 3)).astype(numpy.float32)
        t = numpy.random.randint(0, N_VOCAB, 6).astype(numpy.int32)
        if bad == 'x_1d':
            x = x[:, 0]
        elif bad == 'x_3d':
            x = x[:, :, None]
        elif bad == 'w_float64':
            W = W.astype(numpy.float64)
        elif bad == 't_float':
            t = t.astype(numpy.float32)
        elif bad == 't_2d':
            t = t[:, None]
        elif bad == 'w_1d':
            W = W[:, 0]
        elif bad == 'rows_fewer':
            t = t[:4]
        elif bad == 'rows_more':
            t = numpy.concatenate([t, t])
        elif bad == 'units_mismatch':
            W = W[:, :2]
        else:
            x = (x * 10).astype(numpy.int32)

        def run():
            with chainer.using_config('type_check', type_check):
                return F.negative_sampling(
                    x, t, W, lambda shape: numpy.random.randint(
                        0, N_VOCAB, shape), 2, reduce='no').array
        result = []
        return warned(lambda: result.append(error_of(run))), result
    check_same(fn)


def test_ignore_label_of_a_subclass_same_as_stock():
    class IgnoreZero(FUNCTION):
        ignore_label = 0

    def fn():
        x = chainer.Variable(numpy.random.uniform(
            -1, 1, (10, 4)).astype(numpy.float32))
        W = chainer.Variable(numpy.random.uniform(
            -1, 1, (N_VOCAB, 4)).astype(numpy.float32))
        t = numpy.arange(10, dtype=numpy.int32) % 3
        node = IgnoreZero(
            lambda shape: numpy.random.randint(0, N_VOCAB, shape), 2)
        loss, = node.apply((x, t, W))
        loss.backward()
        return loss.array, node.ignore_mask, node.samples, x.grad, W.grad
    check_same(fn)


@pytest.mark.parametrize('dtype', FLOAT_DTYPES)
def test_overflows_ignored_same_as_stock(dtype):
    def fn():
        with numpy.errstate(all='ignore'):
            return _case(dtype, scale=60.0)
    check_same(fn)


@pytest.mark.parametrize('mode', ['raise', 'call', 'warn'])
def test_errstate_acts_as_stock(errstate_acts_as_stock, mode):
    # exp(-f) overflows for inputs this large: stock's per-row NumPy calls
    # warn, raise or call.
    errstate_acts_as_stock(
        lambda: _case(numpy.float32, scale=200.0, units=3), mode)


def test_function_hook_sees_the_gradient_node_as_stock():
    class Names(chainer.FunctionHook):
        def __init__(self):
            self.names = []

        def forward_preprocess(self, function, in_data):
            self.names.append(function.label)

    def fn():
        hook = Names()
        with hook:
            result = _case(numpy.float32, ignore=False)
        return hook.names, result
    stock, _ = check_same(fn)
    assert 'NegativeSamplingFunctionGrad' in stock[0]
