"""F.add and the Variable operators, stock vs patched."""
import numpy
import pytest

import chainer
import chainer.functions as F

import chainer_fastpath
from chainer_fastpath.testing import check_same, run_both


def _v(*shape):
    return chainer.Variable(numpy.random.randn(*shape).astype(numpy.float32))


def _p(*shape):
    return chainer.Parameter(numpy.random.randn(*shape).astype(numpy.float32))


OPS = {
    'F.add': lambda a, b: F.add(a, b),
    'F.add3': lambda a, b: F.add(a, b, a),
    'add': lambda a, b: a + b,
    'radd_array': lambda a, b: b.array + a,
    'sub': lambda a, b: a - b,
    'rsub_scalar': lambda a, b: 1.5 - a,
    'rsub_int': lambda a, b: 1 - a,
    'rsub_array': lambda a, b: b.array - a,
    'rsub_numpy_scalar': lambda a, b: numpy.float32(2) - a,
    'mul': lambda a, b: a * b,
    'rmul_scalar': lambda a, b: 2 * b,
    'mul_array': lambda a, b: a * b.array,
    'mul_array_broadcast': lambda a, b: a * b.array[:, :1],
    'mul_array_float64': lambda a, b: a * b.array.astype(numpy.float64),
    'rmul_array': lambda a, b: b.array * a,
    'add_scalar': lambda a, b: a + 1,
    'add_float_scalar': lambda a, b: a + 0.25,
    'radd_int': lambda a, b: 3 + b,
    'sub_scalar': lambda a, b: a - 2,
    'mul_scalar': lambda a, b: a * 0.5,
    'add_numpy_scalar': lambda a, b: a + numpy.float64(0.5),
    'add_bool': lambda a, b: a + True,
    'neg': lambda a, b: -a * b,
    'sub_array': lambda a, b: a - b.array,
    'add_array': lambda a, b: a + b.array,
    'add_array_broadcast': lambda a, b: a + b.array[:1],
    'add_array_float64': lambda a, b: a + b.array.astype(numpy.float64),
    'add_array_int': lambda a, b: a + numpy.arange(6).reshape(3, 2),
    'add_array_0d': lambda a, b: a + numpy.array(2.5),
    'radd_array_0d': lambda a, b: numpy.array(2.5, numpy.float32) + a,
    'F.add_array': lambda a, b: F.add(a, b.array),
    'F.add_array_lhs': lambda a, b: F.add(a.array, b),
    'sub_array_broadcast': lambda a, b: a - b.array[:, :1],
    'rsub_array_float64': lambda a, b: b.array.astype(numpy.float64) - a,
    'rsub_array_0d': lambda a, b: numpy.array(1.5) - a,
    'add_numpy_int': lambda a, b: a + numpy.int64(2),
    'sub_numpy_scalar': lambda a, b: a - numpy.float16(0.5),
    'mul_numpy_scalar': lambda a, b: a * numpy.float32(3),
    'dqn_target': lambda a, b: (
        numpy.ones((3, 2), numpy.float32)
        + 0.99 * (1 - numpy.eye(3, 2, dtype=numpy.float32)) * b),
}


@pytest.mark.parametrize('make_rhs', [_v, _p])
@pytest.mark.parametrize('name', sorted(OPS))
def test_operator_same_stock_and_patched(name, make_rhs):
    def build():
        a, b = _v(3, 2), make_rhs(3, 2)
        y = OPS[name](a, b)
        F.sum(y * y).backward()
        return y, a.grad, b.grad

    check_same(build)


@pytest.mark.parametrize('rhs', [
    'abc', [1.0, 2.0], None, object()])
def test_bad_rhs_same_error(rhs):
    def build():
        out = []
        for op in (lambda a: a + rhs, lambda a: a - rhs, lambda a: a * rhs,
                   lambda a: F.add(a, rhs)):
            try:
                op(_v(2))
                out.append(None)
            except Exception as e:
                out.append(type(e).__name__)
        return out

    stock, patched = run_both(build)
    assert stock == patched


@pytest.mark.parametrize('op', [
    lambda a, rhs: a + rhs, lambda a, rhs: a - rhs, lambda a, rhs: a * rhs,
    lambda a, rhs: rhs - a, lambda a, rhs: rhs + a, lambda a, rhs: rhs * a,
    lambda a, rhs: F.add(a, rhs)])
@pytest.mark.parametrize('rhs', [
    numpy.ones(4, numpy.float32), numpy.array(['a', 'b']),
    numpy.ones((3, 2), numpy.complex64), numpy.str_('a')])
def test_bad_array_operand_same_error(op, rhs):
    def build():
        try:
            op(_v(3, 2), rhs)
        except Exception as e:
            return type(e).__name__
    stock, patched = run_both(build)
    assert stock == patched


def test_arrays_and_numpy_scalars_take_the_fast_path():
    # DQN's target: ndarray + float * (int - ndarray) * Variable.
    chainer_fastpath.enable()
    reward, done = numpy.ones(3, numpy.float32), numpy.zeros(3, numpy.float32)
    next_q = _v(3)
    reward + 0.99 * (1 - done) * next_q
    next_q - reward, reward - next_q, F.add(next_q, reward)
    next_q + numpy.float32(1), next_q - numpy.float64(1), 2 - next_q[0]
    s = chainer_fastpath.stats()
    assert [s['basic_math.' + f] for f in ('add', 'sub', 'rsub', 'mul')] == [
        {'fast': 3, 'fallback': {}}, {'fast': 2, 'fallback': {}},
        {'fast': 2, 'fallback': {}}, {'fast': 1, 'fallback': {}}]
    assert s['utils.force_array']['fallback'] == {}


def test_variables_and_numbers_take_the_fast_path():
    chainer_fastpath.enable()
    a, b = _v(2), _v(2)
    a + b, a - b, a * b, F.add(a, b)
    a + 1, a - 2.5, 3 * a
    a + True
    s = chainer_fastpath.stats()
    assert [s['basic_math.' + f]['fast'] for f in ('add', 'sub', 'mul')] == [
        3, 2, 2]
    assert s['basic_math.add']['fallback'] == {
        'right-hand side neither a plain Variable nor a Python number': 1}


def test_rsub_number_and_mul_array_take_the_fast_path():
    chainer_fastpath.enable()
    a = _v(2)
    1 - a, 2.5 - a, a * a.array
    s = chainer_fastpath.stats()
    assert s['basic_math.rsub'] == {'fast': 2, 'fallback': {}}
    assert s['basic_math.mul'] == {'fast': 1, 'fallback': {}}
    True - a
    s = chainer_fastpath.stats()['basic_math.rsub']
    assert s['fallback'] == {
        'left-hand side of rsub not a Python number': 1}


def test_mocked_preprocess_rhs_is_called_for_an_array(spy):
    from chainer.functions.math import basic_math
    calls = spy(basic_math, '_preprocess_rhs')
    chainer_fastpath.enable()
    a = _v(2)
    a * a.array
    assert [type(value).__name__ for _, value in calls] == ['ndarray']


def test_operators_restored_on_disable():
    from chainer.functions.math import basic_math
    original = chainer.Variable.__add__
    chainer_fastpath.enable()
    assert chainer.Variable.__add__ is not original
    chainer_fastpath.disable()
    assert chainer.Variable.__add__ is original is basic_math.add
    assert chainer.Variable.__rsub__ is basic_math.rsub
    assert F.add is basic_math.add


@pytest.mark.parametrize('dtype', [numpy.float16, numpy.float32,
                                   numpy.float64, numpy.int32])
@pytest.mark.parametrize('op', ['add', 'radd', 'sub', 'rsub', 'mul', 'rmul'])
def test_array_operand_converted_as_stock(op, dtype):
    # The array the node is given: the operand itself where its dtype is
    # the Variable's, else a converted copy; and the calls a mock of
    # chainer.get_array_types sees.
    from unittest import mock

    def fn():
        a = _v(3, 2)
        rhs = numpy.random.randn(3, 2).astype(dtype)
        seen = []

        class Inputs(chainer.FunctionHook):
            def forward_preprocess(self, function, in_data):
                seen.extend(in_data)

        with Inputs():
            y = {'add': lambda: a + rhs, 'radd': lambda: rhs + a,
                 'sub': lambda: a - rhs, 'rsub': lambda: rhs - a,
                 'mul': lambda: a * rhs, 'rmul': lambda: rhs * a}[op]()
        arrays = [x for x in seen if x is not a.array]
        with mock.patch.object(chainer, 'get_array_types',
                               wraps=chainer.get_array_types) as m:
            y2 = a * rhs
        return (y.array, [x is rhs for x in arrays],
                [x.dtype for x in arrays], len(m.call_args_list), y2.array)
    check_same(fn)


def _recording_subclass(cls, calls):
    class Recorded(cls):
        def __init__(self, value):
            calls.append(value)
            super().__init__(value * 2)
    return Recorded


class _Meta(type):
    pass


CONSTANT_NODES = {
    'AddConstant': lambda a: a + 1.5,
    'SubFromConstant': lambda a: 0.5 - a,
    'MulConstant': lambda a: a * 3,
}


@pytest.mark.parametrize('how', ['subclass', 'init_replaced', 'metaclass',
                                 'finalizer'])
@pytest.mark.parametrize('name', sorted(CONSTANT_NODES))
def test_constant_node_made_as_stock_makes_it(name, how, monkeypatch):
    # The node is made without its __init__'s frame only while that is
    # stock's: a class put in its place, an __init__ replaced on the class,
    # a metaclass or a __del__ each gets stock's call.
    from chainer.functions.math import basic_math
    cls = getattr(basic_math, name)
    calls = []
    if how == 'subclass':
        monkeypatch.setattr(basic_math, name,
                            _recording_subclass(cls, calls))
    elif how == 'init_replaced':
        stock_init = cls.__init__

        def init(self, value):
            calls.append(value)
            stock_init(self, value * 2)
        monkeypatch.setattr(cls, '__init__', init)
    elif how == 'metaclass':
        monkeypatch.setattr(basic_math, name, _Meta(
            name, (cls,), {'__init__': lambda self, value: (
                calls.append(value), cls.__init__(self, value * 2))[1]}))
    else:
        monkeypatch.setattr(basic_math, name, type(name, (cls,), {
            '__del__': lambda self: calls.append('del')}))

    def build():
        del calls[:]
        a = _v(3, 2)
        y = CONSTANT_NODES[name](a)
        F.sum(y).backward()
        node = y.creator
        state = (type(node).__name__, sorted(vars(node)), node.value)
        del node
        y.unchain_backward()
        return y, a.grad, state, list(calls)

    stock, patched = check_same(build)
    assert stock[3], 'the replacement was not called'
