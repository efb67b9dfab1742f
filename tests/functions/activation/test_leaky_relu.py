"""Compiled ``LeakyReLU`` (functions/activation/leaky_relu.pyx), stock vs
patched: outputs, gradients, graph state and errors bit for bit the same;
the compiled forward and backward are used, and anything overridden,
mocked or unusual reaches stock's code."""
import warnings
import weakref

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.activation import leaky_relu

import chainer_fastpath
from chainer_fastpath.testing import (
    applied, assert_same, check_same, error_of, run_both)
from chainer_fastpath.testing.cases import function_tests

DTYPES = [numpy.float16, numpy.float32, numpy.float64]
# >= 0 retains the output, < 0 the input; -0.0 >= 0.
SLOPES = [0.2, 0, 0.0, -0.0, 1.5, -0.3, -2, numpy.float32(0.1),
          numpy.float64(-0.7), numpy.float16(0.3)]
SHAPES = [(3, 4), (), (0,), (2, 0, 3), (7,), (2, 3, 2)]


def _x(shape, dtype=numpy.float32, requires_grad=True):
    a = numpy.random.uniform(-1, 1, shape).astype(dtype)
    flat = a.reshape(-1)
    # Both zeros and an exact negative, where the mask decides.
    for i, value in enumerate([0.0, -0.0, -0.5]):
        if flat.size > 2 * i + 3:
            flat[2 * i + 1] = value
    return chainer.Variable(a, requires_grad=requires_grad)


def _node_backward():
    return chainer_fastpath.stats()['FunctionNode.backward']


def _state(y, x):
    node = y.creator
    return {
        'y': y.array,
        'y.requires_grad': y.requires_grad,
        'inputs retained': node._input_indexes_to_retain,
        'outputs retained': node._output_indexes_to_retain,
        'x.grad': x.grad,
        'x.grad.requires_grad': x.grad_var.requires_grad,
    }


def _forward_backward(shape, dtype, slope, type_check=True):
    with chainer.using_config('type_check', type_check):
        x = _x(shape, dtype)
        y = F.leaky_relu(x, slope=slope)
        y.grad = numpy.random.uniform(-1, 1, shape).astype(dtype)
        y.backward()
    return _state(y, x)


# name -> builds (under the shared seed) and returns (fn, args)
APPLY_CASES = {
    'positive_slope': lambda: (lambda a: F.leaky_relu(a, 0.2), [_x((3, 4))]),
    'negative_slope': lambda: (lambda a: F.leaky_relu(a, -0.3),
                               [_x((3, 4))]),
    'zero_slope': lambda: (lambda a: F.leaky_relu(a, 0), [_x((2, 3))]),
}

# name -> f(dtype) building inputs and returning (inputs, output)
BACKWARD_CASES = {
    'positive_slope': lambda d: applied(lambda a: F.leaky_relu(a, 0.2),
                                        _x((3, 4), d)),
    'negative_slope': lambda d: applied(lambda a: F.leaky_relu(a, -0.3),
                                        _x((3, 4), d)),
    'zero_slope_0d': lambda d: applied(lambda a: F.leaky_relu(a, 0),
                                       _x((), d)),
    # Cubed, so that the second-order gradient is not zero.
    'cubed_positive_slope': lambda d: applied(
        lambda a: F.sum(F.leaky_relu(a, 0.2) ** 3), _x((3, 4), d)),
    'cubed_negative_slope': lambda d: applied(
        lambda a: F.sum(F.leaky_relu(a, -0.3) ** 3), _x((3, 4), d)),
}

globals().update(function_tests(
    APPLY_CASES, BACKWARD_CASES,
    second_order=['cubed_positive_slope', 'cubed_negative_slope']))


# --- same results as stock ---

@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('slope', SLOPES, ids=repr)
@pytest.mark.parametrize('shape', SHAPES, ids=str)
@pytest.mark.parametrize('type_check', [True, False])
def test_forward_backward_same_as_stock(dtype, slope, shape, type_check):
    check_same(lambda: _forward_backward(shape, dtype, slope, type_check))


def _caught(fn, errstate=None):
    """``fn()``'s result or error, and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        with numpy.errstate(**(errstate or {})):
            try:
                out = fn()
            except Exception as e:
                out = type(e).__name__, str(e)
    return out, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('slope', [0.2, -0.3, 0, 2], ids=repr)
@pytest.mark.parametrize('value', [-0.5, 0.0, -0.0, 0.7, numpy.inf,
                                   -numpy.inf, numpy.nan])
@pytest.mark.parametrize('gy', [-1.25, numpy.inf, -numpy.inf])
def test_scalar_special_values_same_as_stock(dtype, slope, value, gy):
    # -inf * 0 and inf * 0 warn (invalid), as stock does.
    def fn():
        x = chainer.Variable(numpy.array(value, dtype))
        y = F.leaky_relu(x, slope)
        y.grad = numpy.array(gy, dtype)
        y.backward()
        return _state(y, x)
    check_same(lambda: _caught(fn))


def _invalid(slope):
    # -inf * slope 0 in the forward, gy -inf * 0 in the backward.
    x = chainer.Variable(numpy.array([-numpy.inf, -1, 2], numpy.float32))
    y = F.leaky_relu(x, slope)
    y.grad = numpy.array([1, -numpy.inf, 3], numpy.float32)
    y.backward()
    return _state(y, x)


@pytest.mark.parametrize('slope', [0, -0.0])
@pytest.mark.parametrize('errstate', [
    {}, {'invalid': 'ignore'}, {'invalid': 'raise'}, {'invalid': 'call'}])
def test_floating_point_exceptions_same_as_stock(slope, errstate):
    def fn():
        calls = []
        with numpy.errstate(**errstate):
            previous = numpy.seterrcall(lambda *args: calls.append(args))
            try:
                out = _caught(lambda: _invalid(slope))
            finally:
                numpy.seterrcall(previous)
        return out, calls
    stock, patched = check_same(fn)
    assert stock[0][1] or stock[1] or errstate != {}


@pytest.mark.parametrize('slope', [0, -0.0])
def test_warning_as_error_same_as_stock(slope):
    def fn():
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            return error_of(lambda: _invalid(slope))
    stock, patched = check_same(fn)
    assert stock[0] == 'RuntimeWarning'


def _specials(dtype, n, seed):
    """``n`` values, most of them NaNs of both signs with payloads
    (signaling ones too), signed zeros, infinities, subnormals and huge
    numbers."""
    rng = numpy.random.RandomState(seed)
    info = numpy.finfo(dtype)
    bits = numpy.uint32 if dtype == numpy.float32 else numpy.uint64
    nans = numpy.array([numpy.nan, -numpy.nan], dtype)
    nans = numpy.concatenate([nans, (nans.view(bits) | bits(3)).view(dtype),
                              (nans.view(bits) & ~(bits(1) << bits(
                                  info.nmant - 1)) | bits(1)).view(dtype)])
    pool = numpy.concatenate([nans, numpy.array(
        [0.0, -0.0, numpy.inf, -numpy.inf, info.tiny / 4, -info.tiny / 2,
         info.max, -info.max, -1.5, 0.5], dtype)])
    return pool[rng.randint(0, len(pool), n)]


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
@pytest.mark.parametrize('slope', [
    0.2, -0.3, 0.0, -0.0, 1e-40, 1e30, 3.3e38, 3.5e38, numpy.inf,
    -numpy.inf, numpy.nan, 2, numpy.float64(3.5e38), numpy.float32(3e38),
    numpy.float32(numpy.nan), numpy.float16(0.3)], ids=repr)
@pytest.mark.parametrize('errstate', [
    {'all': 'ignore'}, {}, {'under': 'raise'}, {'over': 'raise'},
    {'all': 'call'}])
@pytest.mark.parametrize('layout', ['C', 'transposed', 'strided'])
def test_special_values_and_slopes_same_as_stock(dtype, slope, errstate,
                                                 layout):
    # Where the elements and the slope meet NumPy's casting, NaN payloads
    # and floating-point flags: the one-pass loop's products, flags and
    # NaNs are the gathered multiply's.
    def fn():
        calls = []
        a = _specials(dtype, 48, 0).reshape(6, 8)
        a = {'C': a, 'transposed': a.T, 'strided': a[:, ::2]}[layout]
        with numpy.errstate(**errstate):
            previous = numpy.seterrcall(lambda *args: calls.append(args))
            try:
                def run():
                    x = chainer.Variable(a)
                    y = F.leaky_relu(x, slope)
                    y.grad = _specials(dtype, y.size, 1).reshape(y.shape)
                    y.backward()
                    return _state(y, x)
                out = _caught(run)
            finally:
                numpy.seterrcall(previous)
        return out, calls
    check_same(fn)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('slope', [1e-40, 1e-6, -3e-8, 1e5, 70000, 2 ** 60,
                                   numpy.float32(1e-30), numpy.inf],
                         ids=repr)
@pytest.mark.parametrize('errstate', [{}, {'all': 'call'}, {'all': 'raise'}])
@pytest.mark.parametrize('layout', ['C', 'transposed'])
def test_slopes_numpy_casts_with_an_error_same_as_stock(dtype, slope,
                                                        errstate, layout):
    # Slopes that NumPy's multiply casts to the array's dtype with an
    # underflow or an overflow, or multiplies by in a wider dtype: the
    # cast's error comes from stock's line only.
    def fn():
        calls = []
        a = numpy.array([[-0.5, 2.0, -3.0], [0.25, -0.0, 1.0]], dtype)
        a = a.T if layout == 'transposed' else a
        with numpy.errstate(**errstate):
            previous = numpy.seterrcall(lambda *args: calls.append(args))
            try:
                def run():
                    x = chainer.Variable(a)
                    y = F.leaky_relu(x, slope)
                    y.grad = numpy.ones_like(a)
                    y.backward()
                    return _state(y, x)
                out = _caught(run)
            finally:
                numpy.seterrcall(previous)
        return out, calls
    check_same(fn)


def test_warning_location_is_stocks():
    def fn():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            _invalid(0)
        return [(w.filename, w.lineno) for w in caught]
    check_same(fn)


@pytest.mark.parametrize('slope', [0.2, -0.3])
def test_raw_array_input_and_no_backprop_same_as_stock(slope):
    def fn():
        a = _x((3, 4)).array
        y = F.leaky_relu(a, slope)
        with chainer.no_backprop_mode():
            z = F.leaky_relu(a, slope)
        return y.array, y.requires_grad, z.array, z.creator
    check_same(fn)


@pytest.mark.parametrize('slope', [0.2, -0.3])
def test_intermediate_variables_same_as_stock(slope):
    # The retained output (slope >= 0) or input (< 0) belongs to a
    # Variable that is gone by the time backward runs: its node keeps it.
    def fn():
        x = _x((4, 3))
        z = F.sum(F.leaky_relu(x * 2, slope) * 3)
        z.backward()
        return x.grad
    check_same(fn)


@pytest.mark.parametrize('slope', [0.2, -0.3])
def test_retain_grad_and_accumulation_same_as_stock(slope):
    def fn():
        x = _x((3, 4))
        h = F.leaky_relu(x, slope)
        y = F.leaky_relu(h, slope) + h
        y.grad = numpy.ones((3, 4), numpy.float32)
        y.backward(retain_grad=True)
        return x.grad, h.grad, x.grad_var.requires_grad
    check_same(fn)


@pytest.mark.parametrize('slope', [0.2, -0.3])
@pytest.mark.parametrize('requires_grad', [True, False])
def test_gradient_variable_requires_grad_same_as_stock(slope, requires_grad):
    # The gradient node's output requires grad as its input gy does.
    def fn():
        x = _x((3, 4))
        y = F.leaky_relu(x, slope)
        y.grad_var = chainer.Variable(
            numpy.random.uniform(-1, 1, (3, 4)).astype(numpy.float32),
            requires_grad=requires_grad)
        y.backward()
        return _state(y, x)
    stock, patched = check_same(fn)
    assert stock['x.grad.requires_grad'] == requires_grad


def _describe(obj, seen):
    """A structural description of a graph, comparable across runs."""
    if isinstance(obj, numpy.ndarray):
        return ('ndarray', obj.dtype.str, obj.shape, obj.tobytes())
    if isinstance(obj, (chainer.Variable, chainer.variable.VariableNode,
                        chainer.FunctionNode)):
        if id(obj) in seen:
            return ('seen', seen[id(obj)])
        seen[id(obj)] = len(seen)
        return (type(obj).__name__, [
            (k, _describe(v, seen)) for k, v in obj.__dict__.items()])
    if isinstance(obj, weakref.ref):
        return ('weakref', _describe(obj(), seen))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_describe(v, seen) for v in obj])
    if isinstance(obj, dict):
        return ('dict', [(k, _describe(v, seen)) for k, v in obj.items()])
    if isinstance(obj, numpy.dtype):
        return ('dtype', obj.str)
    return ('value', repr(obj))


@pytest.mark.parametrize('slope', [0.2, -0.3])
@pytest.mark.parametrize('backprop', [True, False])
def test_graph_objects_have_stock_state(slope, backprop):
    def build():
        x = _x((2, 3))
        with chainer.using_config('enable_backprop', backprop):
            y = F.leaky_relu(x, slope)
        return _describe(y, {})
    stock, patched = run_both(build)
    assert stock == patched


# --- the compiled code is what runs ---

@pytest.mark.parametrize('slope', [0.2, 0, -0.3, numpy.float32(-2)],
                         ids=repr)
@pytest.mark.parametrize('shape', [(3, 4), ()], ids=str)
def test_compiled_forward_and_backward_are_used(slope, shape, python_calls):
    functions = [leaky_relu.LeakyReLU.forward_cpu,
                 leaky_relu.LeakyReLU.backward,
                 leaky_relu._LeakyReLUGrad.forward_cpu,
                 chainer.FunctionNode.forward]

    def run():
        _forward_backward(shape, numpy.float32, slope)

    # FunctionNode.forward runs for LeakyReLU and for _LeakyReLUGrad.
    assert [python_calls(run, f) for f in functions] == [1, 1, 1, 2]
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        run()
        assert _node_backward() == {'fast': 1, 'fallback': {}}
        assert [python_calls(run, f) for f in functions] == [0, 0, 0, 0]


def test_passed_type_check_is_cached(python_calls):
    # LeakyReLU.check_type_forward reads only the inputs' number and dtypes
    # (type_check=()): a check passed once is not run again.
    from chainer_fastpath._core import _type_check
    check = leaky_relu.LeakyReLU.check_type_forward

    def run():
        F.leaky_relu(_x((3, 4)), 0.2)
        F.leaky_relu(_x((3, 4)), -0.5)

    assert python_calls(run, check) == 2
    with chainer_fastpath.enabled():
        assert leaky_relu.LeakyReLU in _type_check.audited_classes()
        run()
        assert python_calls(run, check) == 0


@pytest.mark.parametrize('slope', [numpy.array(0.3), True], ids=repr)
def test_unusual_slope_backward_is_left_to_stock(slope):
    check_same(lambda: _forward_backward((3, 4), numpy.float32, slope))
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _forward_backward((3, 4), numpy.float32, slope)
        reasons = _node_backward()['fallback']
    assert reasons == {'case left to stock: LeakyReLU': 1}


# --- overridden or mocked methods are called ---

@pytest.mark.parametrize('name,slope', [
    ('forward_cpu', 0.2), ('forward_cpu', -0.2), ('forward', 0.2),
    ('retain_outputs', 0.2), ('retain_inputs', -0.2),
    ('check_type_forward', 0.2)])
def test_mocked_forward_method_on_the_class_is_called(name, slope, spy):
    calls = spy(leaky_relu.LeakyReLU, name)
    numpy.random.seed(0)
    expected = _forward_backward((3, 4), numpy.float32, slope)
    stock_calls = len(calls)
    del calls[:]
    numpy.random.seed(0)
    with chainer_fastpath.enabled():
        got = _forward_backward((3, 4), numpy.float32, slope)
    assert stock_calls == 1
    assert len(calls) == stock_calls
    assert_same(expected, got)


@pytest.mark.parametrize('name', ['forward_cpu', 'forward', 'retain_outputs'])
def test_method_set_on_the_instance_is_called(name):
    def fn():
        calls = []
        node = leaky_relu.LeakyReLU(0.5)
        original = getattr(node, name)

        def replacement(*args):
            calls.append(name)
            return original(*args)

        setattr(node, name, replacement)
        x = _x((2, 3))
        y, = node.apply((x,))
        y.grad = numpy.ones((2, 3), numpy.float32)
        y.backward()
        return calls, _state(y, x)
    stock, patched = check_same(fn)
    assert stock[0] == [name]


def test_forward_cpu_replaced_on_the_instance_is_used():
    def fn():
        node = leaky_relu.LeakyReLU(0.5)
        node.forward_cpu = lambda inputs: (inputs[0] * 7,)
        return node.apply((_x((2, 3)),))[0].array
    check_same(fn)


@pytest.mark.parametrize('name', ['__init__', 'check_type_forward',
                                  'forward', 'forward_cpu'])
@pytest.mark.parametrize('slope', [0.2, -0.3])
def test_mocked_gradient_node_method_is_called(name, slope, spy):
    calls = spy(leaky_relu._LeakyReLUGrad, name)
    numpy.random.seed(0)
    expected = _forward_backward((3, 4), numpy.float32, slope)
    stock_calls = len(calls)
    del calls[:]
    numpy.random.seed(0)
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        got = _forward_backward((3, 4), numpy.float32, slope)
        reasons = _node_backward()['fallback']
    assert stock_calls == 1
    assert len(calls) == stock_calls
    assert reasons == {'patched or mocked method': 1}
    assert_same(expected, got)


@pytest.mark.parametrize('name', ['backward', 'get_retained_outputs'])
def test_mocked_backward_method_is_called(name, spy):
    calls = spy(leaky_relu.LeakyReLU, name)
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        _forward_backward((3, 4), numpy.float32, 0.2)
        reasons = _node_backward()['fallback']
    assert len(calls) == 1
    assert reasons == {'patched or mocked method': 1}


# --- double backprop stays stock's ---

@pytest.mark.parametrize('slope', [0.2, -0.3])
def test_double_backprop_does_not_use_compiled_backward(slope):
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        x = _x((3, 4))
        y = F.leaky_relu(x, slope)
        y.grad = numpy.ones((3, 4), numpy.float32)
        y.backward(enable_double_backprop=True)
        assert _node_backward()['fast'] == 0
        assert isinstance(x.grad_var.creator, leaky_relu._LeakyReLUGrad)


# --- bad input: stock's errors ---

def _apply(inputs, slope=0.2):
    return lambda: leaky_relu.LeakyReLU(slope).apply(inputs)


def _ints():
    return numpy.array([[-2, 0, 3]], numpy.int32)


BAD_INPUTS = {
    'int': _apply((_ints(),)),
    'int_zero_slope': _apply((_ints(),), 0),
    'two_inputs': _apply((_x((2,)), _x((2,)))),
    'no_input': _apply(()),
    'slope_none': _apply((_x((2,)),), None),
    'slope_string': _apply((_x((2,)),), 'a'),
    'slope_array': _apply((_x((2,)),), numpy.array([0.5, -0.5])),
}


@pytest.mark.parametrize('case', sorted(BAD_INPUTS))
@pytest.mark.parametrize('type_check', [True, False])
def test_bad_input_same_error_as_stock(case, type_check):
    def fn():
        with chainer.using_config('type_check', type_check):
            out = error_of(BAD_INPUTS[case])
            if out is None:     # accepted: compare what it gives
                y, = BAD_INPUTS[case]()
                return y.array, y.creator._output_indexes_to_retain
            return out
    stock, patched = check_same(fn)
    if type_check:
        assert isinstance(stock[0], str)    # an error's name


def test_error_after_a_cached_pass_is_stocks():
    def fn():
        F.leaky_relu(_x((2, 3)))
        F.leaky_relu(_x((2, 3)))
        return error_of(lambda: F.leaky_relu(_ints()))
    stock, patched = check_same(fn)
    assert stock[0] == 'InvalidType'


def test_int_forward_and_backward_without_type_check_same_as_stock():
    def fn():
        with chainer.using_config('type_check', False):
            x = chainer.Variable(_ints(), requires_grad=True)
            y = F.leaky_relu(x, 2)
            y.grad = numpy.array([[1, 2, 3]], numpy.int32)
            return y.array, error_of(y.backward), x.grad
    check_same(fn)


def test_slope_changed_sign_before_backward_same_error_as_stock():
    def fn():
        x = _x((2, 3))
        y = F.leaky_relu(x, 0.2)
        y.creator.slope = -0.2
        y.grad = numpy.ones((2, 3), numpy.float32)
        return error_of(y.backward)
    stock, patched = check_same(fn)
    assert stock[0] == 'IndexError'


@pytest.mark.parametrize('grad', [
    numpy.ones((3, 3), numpy.float32),      # broadcastable shape
    numpy.ones((1, 3), numpy.float64),      # another dtype
    numpy.ones((1, 3), numpy.int32),        # an integer gradient
], ids=['shape', 'dtype', 'int'])
@pytest.mark.parametrize('slope', [0.2, -0.3])
def test_bad_gradient_same_as_stock(grad, slope):
    def fn():
        x = _x((1, 3))
        y = F.leaky_relu(x, slope)
        # Bypasses the setter's check, which would refuse it up front.
        y._set_grad_var_without_check(chainer.Variable(grad))
        return error_of(y.backward), x.grad
    check_same(fn)
