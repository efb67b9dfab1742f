"""F.softmax_cross_entropy (``SoftmaxCrossEntropy``) and its gradient,
stock vs patched; and the one-pass kernels (``fused_forward``,
``fused_grad``) against stock's ``SoftmaxCrossEntropy.forward_cpu`` and its
gradient's: bit for bit, the same attributes, the same warnings and errors,
and None wherever they leave the work to NumPy."""
import warnings

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.loss import softmax_cross_entropy as sce

from chainer_fastpath.functions.loss import softmax_cross_entropy as kernel
from chainer_fastpath.testing import (
    applied, assert_same, run_both, variable as _v)
from chainer_fastpath.testing.cases import function_tests

SHAPES = [(8, 1000), (1, 1), (3, 5), (20, 7), (129, 3), (300, 2)]


def _inputs(dtype, shape, scale, label_dtype=numpy.int32, seed=0):
    rng = numpy.random.RandomState(seed)
    x = (rng.randn(*shape) * scale).astype(dtype)
    # A column of a wider matrix, as t[:, j] in a language model: strided.
    t = rng.randint(-1, shape[1], size=(shape[0], 3)).astype(label_dtype)
    return x, t[:, 1]


def _stock(x, t, **kwargs):
    node = sce.SoftmaxCrossEntropy(**kwargs)
    loss, = node.forward_cpu((x, t))
    return node, loss


def _value(v):
    # Arrays by bits; scalars by type and value (the type decides how the
    # gradient multiplies by coeff).
    if isinstance(v, numpy.ndarray):
        return type(v), v.dtype, v.shape, v.tobytes()
    return type(v), v


@pytest.mark.parametrize('shape', SHAPES)
@pytest.mark.parametrize('ignored', ['all', 'all_but_one'])
@pytest.mark.parametrize('normalize', [True, False])
def test_forward_coefficient_as_stock(shape, ignored, normalize):
    # 1.0 / max(count, 1): a NumPy float64 where a label counts, the float
    # 1.0 where none does (normalize), 1.0 / len(x) otherwise.
    x, t = _inputs(numpy.float32, shape, 1)
    t[:] = -1
    if ignored == 'all_but_one':
        t[-1] = 0
    node, expected = _stock(x, t, normalize=normalize)
    loss, _, coeff = kernel.fused_forward(x, t, -1, normalize, 'mean', True)
    assert _value(loss) == _value(expected)
    assert _value(coeff) == _value(node._coeff)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('shape', SHAPES)
@pytest.mark.parametrize('scale', [0.1, 1, 30, 300])
@pytest.mark.parametrize('label_dtype', [numpy.int32, numpy.int64])
@pytest.mark.parametrize('options', [
    {}, {'normalize': False}, {'reduce': 'no'}, {'cache_score': False},
    {'ignore_label': 2}])
def test_forward_bit_for_bit(dtype, shape, scale, label_dtype, options):
    x, t = _inputs(dtype, shape, scale, label_dtype)
    node, expected = _stock(x, t, **options)
    opts = dict({'normalize': True, 'reduce': 'mean', 'cache_score': True,
                 'ignore_label': -1}, **options)
    got = kernel.fused_forward(x, t, opts['ignore_label'], opts['normalize'],
                               opts['reduce'], opts['cache_score'])
    assert got is not None
    loss, y, coeff = got
    assert _value(loss) == _value(expected)
    if opts['cache_score']:
        assert _value(y) == _value(node.y)
    else:
        assert y is None
    if opts['reduce'] == 'mean':
        assert _value(coeff) == _value(node._coeff)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('shape', SHAPES)
@pytest.mark.parametrize('scale', [0.1, 1, 30, 300])
@pytest.mark.parametrize('options', [
    {}, {'normalize': False}, {'reduce': 'no'}, {'ignore_label': 2}])
def test_grad_bit_for_bit(dtype, shape, scale, options):
    x, t = _inputs(dtype, shape, scale)
    node, _ = _stock(x, t, **options)
    rng = numpy.random.RandomState(1)
    if options.get('reduce') == 'no':
        gloss = rng.randn(shape[0]).astype(dtype)
        coeff = None
    else:
        gloss = numpy.array(rng.randn(), dtype)
        coeff = node._coeff
    ignore_label = options.get('ignore_label', -1)
    grad_node = sce._SoftmaxCrossEntropyGrad_NoDoubleBackprop(
        ignore_label, None, node.y, coeff, False)
    expected, = grad_node.forward_cpu((x, t, gloss))
    got = kernel.fused_grad(node.y, t, ignore_label, gloss, coeff)
    assert got is not None
    assert _value(got) == _value(expected)


def _gloss_layouts(rows, dtype):
    rng = numpy.random.RandomState(2)
    wide = rng.randn(2 * rows).astype(dtype)
    return {
        'broadcast': numpy.broadcast_to(numpy.array(1.5, dtype), (rows,)),
        'every other': wide[::2],
        'reversed': wide[:rows][::-1],
        'one row': numpy.broadcast_to(wide[:1], (1,)),
    }


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('layout', sorted(_gloss_layouts(1, numpy.float32)))
def test_grad_strided_gloss_bit_for_bit(dtype, layout):
    # reduce='no' under F.sum: the loss's gradient is a broadcast.
    rows = 1 if layout == 'one row' else 4
    x, t = _inputs(dtype, (rows, 5), 1)
    node, _ = _stock(x, t, reduce='no')
    gloss = _gloss_layouts(rows, dtype)[layout]
    grad_node = sce._SoftmaxCrossEntropyGrad_NoDoubleBackprop(
        -1, None, node.y, None, False)
    expected, = grad_node.forward_cpu((x, t, gloss))
    got = kernel.fused_grad(node.y, t, -1, gloss, None)
    assert got is not None
    assert _value(got) == _value(expected)


def test_misaligned_gloss_is_left_to_numpy():
    x, t = _inputs(numpy.float32, (3, 5), 1)
    node, _ = _stock(x, t, reduce='no')
    raw = numpy.zeros(3 * 4 + 1, numpy.uint8)[1:]
    gloss = raw.view(numpy.float32)
    assert not gloss.flags.aligned
    assert kernel.fused_grad(node.y, t, -1, gloss, None) is None


def test_unsupported_inputs_are_left_to_numpy():
    x, t = _inputs(numpy.float32, (3, 5), 1)
    forward = kernel.fused_forward
    assert forward(x.astype(numpy.float16), t, -1, True, 'mean', True) is None
    assert forward(numpy.asfortranarray(x), t, -1, True, 'mean', True) is None
    assert forward(x[None], t, -1, True, 'mean', True) is None
    assert forward(x, t[:2], -1, True, 'mean', True) is None
    assert forward(x, t.astype(numpy.int16), -1, True, 'mean', True) is None
    assert forward(x, t, numpy.int32(-1), True, 'mean', True) is None
    assert forward(x, t, 2 ** 70, True, 'mean', True) is None
    assert forward(x, t, -1, True, 'sum', True) is None
    assert forward(x[:0], t[:0], -1, True, 'mean', True) is None
    y = _stock(x, t)[0].y
    gloss = numpy.array(1, numpy.float64)
    assert kernel.fused_grad(y, t, -1, gloss, 0.5) is None


@pytest.mark.parametrize('label', [5, -6, 100])
def test_label_out_of_range_is_left_to_numpy(label):
    x, t = _inputs(numpy.float32, (3, 5), 1)
    t = t.copy()
    t[1] = label
    assert kernel.fused_forward(x, t, -1, True, 'mean', True) is None
    assert kernel.fused_grad(
        x, t, -1, numpy.array(1, numpy.float32), 1.0) is None


def test_negative_labels_wrap_as_numpy_indexing_does():
    x, t = _inputs(numpy.float32, (3, 5), 1)
    t = numpy.array([-2, -5, 4], numpy.int32)
    node, expected = _stock(x, t)
    loss, y, coeff = kernel.fused_forward(x, t, -1, True, 'mean', True)
    assert _value(loss) == _value(expected)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('column', [0, 3, 6, 8])
@pytest.mark.parametrize('errstate', [{}, {'invalid': 'ignore'}])
def test_nan_input_is_left_to_numpy(dtype, column, errstate):
    # In the first element, in the unrolled part and in the tail of a row;
    # found whether or not NumPy watches the invalid flag.
    x, t = _inputs(dtype, (3, 9), 1)
    x[2, column] = numpy.nan
    with numpy.errstate(**errstate):
        assert kernel.fused_forward(x, t, -1, True, 'mean', True) is None


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('row', [
    [-0.0, 0.0, -0.0, 0.0, -0.0, -1.0],
    [0.0, -0.0, 0.0, -0.0, 0.0, -2.0],
    [-3.0, -0.0, -1.0, -2.0, 0.0, -0.0],
    [-0.0, -0.0, -0.0, -0.0, -0.0, -0.0],
    [-numpy.inf, -0.0, -numpy.inf, -5.0, -numpy.inf, 0.0],
])
def test_zero_maxima_of_either_sign_give_stock_bits(dtype, row):
    x = numpy.array([row, row[::-1], row[1:] + row[:1]], dtype)
    _check_zero_maxima(x, numpy.array([0, 1, 5], numpy.int32))


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('cols', list(range(1, 41)) + [63, 64, 65, 129, 257])
def test_zero_maxima_across_vector_widths(dtype, cols):
    # Which zero NumPy's maximum keeps depends on the row's length and the
    # zeros' places relative to its vector loop.
    rng = numpy.random.RandomState(cols)
    x = -rng.randint(1, 4, (12, cols)).astype(dtype)
    for i in range(12):
        places = rng.choice(cols, min(cols, 1 + i % 5), replace=False)
        x[i, places] = rng.choice([0.0, -0.0], len(places))
    _check_zero_maxima(x, rng.randint(0, cols, 12).astype(numpy.int32))


def _check_zero_maxima(x, t):
    # Rows whose maximum is a zero take NumPy's own; the outputs are
    # stock's.
    for options in [{}, {'reduce': 'no'}]:
        node, expected = _stock(x, t, **options)
        got = kernel.fused_forward(
            x, t, -1, True, options.get('reduce', 'mean'), True)
        assert _value(got[0]) == _value(expected)
        assert _value(got[1]) == _value(node.y)


def test_infinity_minus_infinity_is_left_to_numpy():
    x, t = _infinite_logit()
    with numpy.errstate(invalid='ignore'):
        assert kernel.fused_forward(x, t, -1, True, 'mean', True) is None


def _infinite_logit():
    # inf - max(inf) is invalid.
    x, t = _inputs(numpy.float32, (3, 5), 1)
    x[1, 2] = numpy.inf
    return x, t


def _tiny_probabilities():
    # exp of very negative logits gives subnormal scores; scaling them in
    # the gradient underflows.
    x, t = _inputs(numpy.float32, (3, 5), 1)
    x[:, 0] = 200
    return x, t


def _sce_warnings(inputs, errstate):
    """What F.softmax_cross_entropy and its backward warn about or raise,
    and their results' bits."""
    x_array, t = inputs()
    x = chainer.Variable(x_array)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        try:
            with numpy.errstate(**errstate):
                loss = F.softmax_cross_entropy(x, t)
                loss.backward()
        except FloatingPointError as e:
            return 'raised: ' + str(e), [str(w.message) for w in caught]
    return ([str(w.message) for w in caught],
            _value(loss.array), _value(x.grad))


@pytest.mark.parametrize('inputs,errstate,expected', [
    (_infinite_logit, {}, 'invalid value encountered in subtract'),
    (_infinite_logit, {'all': 'raise'}, 'raised: invalid value'),
    (_tiny_probabilities, {'under': 'warn'}, 'underflow encountered'),
    (_tiny_probabilities, {'under': 'raise'}, 'raised: underflow'),
])
def test_warnings_and_errors_as_stock(inputs, errstate, expected):
    stock, patched = run_both(lambda: _sce_warnings(inputs, errstate))
    assert_same(stock, patched)
    assert expected in str(stock)


def test_ignored_underflow_takes_the_kernel():
    # Under the default errstate underflow is ignored: the kernel runs and
    # its subnormal results are NumPy's.
    x, t = _tiny_probabilities()
    node, expected = _stock(x, t)
    got = kernel.fused_forward(x, t, -1, True, 'mean', True)
    assert got is not None and _value(got[1]) == _value(node.y)
    gloss = numpy.array(0.7, numpy.float32)
    grad_node = sce._SoftmaxCrossEntropyGrad_NoDoubleBackprop(
        -1, None, node.y, node._coeff, False)
    gx, = grad_node.forward_cpu((x, t, gloss))
    assert _value(kernel.fused_grad(node.y, t, -1, gloss, node._coeff)) == \
        _value(gx)


@pytest.mark.parametrize('errstate', [{}, {'invalid': 'ignore'}])
def test_label_column_flags_only_move_work_to_numpy(errstate):
    # A label whose score is exactly 0, times an infinite gradient: stock
    # computes (0 - 1) * inf there; the kernel's first pass over the row
    # computes 0 * inf too, which is invalid. It then gives stock's bits or
    # leaves the work to NumPy, never another result.
    x = numpy.zeros((2, 6), numpy.float32)
    x[:, 2] = -200
    t = numpy.array([2, 2], numpy.int32)
    node, _ = _stock(x, t)
    assert node.y[0, 2] == 0
    gloss = numpy.array(numpy.inf, numpy.float32)
    grad_node = sce._SoftmaxCrossEntropyGrad_NoDoubleBackprop(
        -1, None, node.y, node._coeff, False)
    with numpy.errstate(**errstate):
        expected, = grad_node.forward_cpu((x, t, gloss))
        got = kernel.fused_grad(node.y, t, -1, gloss, node._coeff)
    if errstate:
        assert _value(got) == _value(expected)
    else:
        assert got is None


# -- F.softmax_cross_entropy stock vs patched -------------------------------

def _ints(high, *shape):
    return numpy.random.randint(0, high, shape).astype(numpy.int32)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'softmax_cross_entropy': lambda: (
        lambda x: F.softmax_cross_entropy(x, _ints(5, 4)), [_v(4, 5)]),
    'softmax_cross_entropy_ignore_no_reduce': lambda: (
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([1, -1, 3, 0], numpy.int32), reduce='no'),
        [_v(4, 5)]),
    'softmax_cross_entropy_not_normalized_no_cache': lambda: (
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([1, -1, 3, 0], numpy.int32), normalize=False,
            cache_score=False), [_v(4, 5)]),
    'softmax_cross_entropy_class_weight': lambda: (
        lambda x: F.softmax_cross_entropy(
            x, _ints(5, 4), class_weight=numpy.arange(
                1, 6, dtype=numpy.float32)), [_v(4, 5)]),
    'softmax_cross_entropy_soft_target': lambda: (
        lambda x: F.softmax_cross_entropy(
            x, numpy.full((4, 5), 0.2, numpy.float32)), [_v(4, 5)]),
    'softmax_cross_entropy_3d': lambda: (
        lambda x: F.softmax_cross_entropy(x, _ints(5, 2, 3)),
        [_v(2, 5, 3)]),
    'softmax_cross_entropy_float16': lambda: (
        lambda x: F.softmax_cross_entropy(x, _ints(5, 4)),
        [_v(4, 5, dtype=numpy.float16)]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'softmax_cross_entropy': lambda d: applied(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([0, 2, -1], numpy.int32)), _v(3, 5, dtype=d)),
    'softmax_cross_entropy_no_reduce': lambda d: applied(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([1, 2, 0], numpy.int32), reduce='no'),
        _v(3, 5, dtype=d)),
    'softmax_cross_entropy_no_cache': lambda d: applied(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([0, 2, 1], numpy.int32), cache_score=False,
            normalize=False), _v(3, 5, dtype=d)),
    'softmax_cross_entropy_class_weight': lambda d: applied(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([0, 2, 1], numpy.int32),
            class_weight=numpy.arange(1, 6).astype(d)), _v(3, 5, dtype=d)),
    'softmax_cross_entropy_3d': lambda d: applied(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([[0, 2], [1, -1]], numpy.int32)),
        _v(2, 5, 2, dtype=d)),
    'softmax_cross_entropy_no_reduce_summed': lambda d: applied(
        lambda x: F.sum(F.softmax_cross_entropy(
            x, numpy.array([1, -1, 0], numpy.int32), reduce='no')),
        _v(3, 5, dtype=d)),
    'softmax_cross_entropy_double_backprop': lambda d: applied(
        lambda x: F.softmax_cross_entropy(
            x, numpy.array([0, 2, 1], numpy.int32),
            enable_double_backprop=True), _v(3, 5, dtype=d)),
}


# The compiled forward takes 2-d float32/float64 scores with integer
# labels and no class weights; the others are stock's.
FUSED = ['softmax_cross_entropy', 'softmax_cross_entropy_ignore_no_reduce',
         'softmax_cross_entropy_not_normalized_no_cache']


globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['softmax_cross_entropy_double_backprop'],
    # The gradient that can be differentiated again is stock's.
    compiled_backward=sorted(
        set(BACKWARD_CASES) - {'softmax_cross_entropy_double_backprop'}),
    compiled_forward=dict.fromkeys(FUSED,
                                   sce.SoftmaxCrossEntropy.forward_cpu)))


def test_passed_type_check_is_cached(type_check_is_cached):
    x, t = _v(2, 3), numpy.array([0, 2], numpy.int32)
    type_check_is_cached(sce.SoftmaxCrossEntropy,
                         lambda: F.softmax_cross_entropy(x, t))


def _grad_node_applied():
    # A graph recorded through the backward: stock's backward applies the
    # gradient node, whose forward is compiled.
    x = _v(3, 5)
    loss = F.sum(F.softmax_cross_entropy(
        x, numpy.array([1, -1, 0], numpy.int32), reduce='no'))
    loss.backward(enable_double_backprop=True)
    return x.grad_var.array, x.grad_var.requires_grad, x.grad_var.creator


def test_gradient_node_forward_same_as_stock():
    stock, patched = run_both(_grad_node_applied)
    assert_same(stock[:2], patched[:2])
    assert type(stock[2]) is type(patched[2])


def test_gradient_node_forward_is_compiled(compiled_instead):
    assert compiled_instead(
        _grad_node_applied,
        sce._SoftmaxCrossEntropyGrad_NoDoubleBackprop.forward_cpu) == 1
