"""The public functions replaced by compiled ones (``F.relu``, ``F.sigmoid``,
``F.tanh``, ``F.sum``, ``F.linear``, ``F.concat``, ``F.split_axis``,
``F.get_item`` and ``Variable.__getitem__``):
every call the stock function accepts gives stock's result and leaves the
node stock leaves; every call it rejects raises stock's error."""
import collections

import numpy
import pytest

import chainer
import chainer.functions as F
from chainer.functions.activation import relu as relu_module
from chainer.functions.activation import sigmoid as sigmoid_module
from chainer.functions.activation import tanh as tanh_module
from chainer.functions.array import concat as concat_module
from chainer.functions.array import get_item as get_item_module
from chainer.functions.array import split_axis as split_axis_module
from chainer.functions.connection import linear as linear_module
from chainer.functions.math import sum as sum_module

import chainer_fastpath
from chainer_fastpath.testing import check_same, error_of


def _x(*shape):
    return chainer.Variable(
        numpy.arange(numpy.prod(shape), dtype=numpy.float32).reshape(shape))


def _node_state(y):
    """The creator's own attributes, but those applying sets in both."""
    return sorted((k, repr(v)) for k, v in vars(y.creator).items()
                  if k not in ('inputs', 'outputs', '_input_layouts'))


def _one_argument_calls(name, module):
    """Calls of ``F.<name>(x)``, the public function of one parameter,
    good and bad."""
    def public(*args, **kwargs):
        return getattr(F, name)(*args, **kwargs)

    return {
        name: lambda: public(_x(2, 3)),
        name + '_keyword': lambda: public(x=_x(2, 3)),
        name + '_0d': lambda: public(_x()),
        name + '_array': lambda: public(numpy.ones(3, numpy.float32)),
        name + '_float64': lambda: public(numpy.ones(3, numpy.float64)),
        name + '_float16': lambda: public(numpy.ones(3, numpy.float16)),
        name + '_int': lambda: public(numpy.ones(3, numpy.int32)),
        name + '_list': lambda: public([1.0, 2.0]),
        name + '_module': lambda: getattr(module, name)(_x(3)),
        name + '_no_argument': lambda: public(),
        name + '_two_arguments': lambda: public(_x(3), _x(3)),
        name + '_unknown_keyword': lambda: public(_x(3), y=1),
    }


# name -> a call of the public function (errors are results too)
CALLS = {
    **_one_argument_calls('relu', relu_module),
    **_one_argument_calls('sigmoid', sigmoid_module),
    **_one_argument_calls('tanh', tanh_module),
    'sum': lambda: F.sum(_x(2, 3)),
    'sum_axis': lambda: F.sum(_x(2, 3), 1),
    'sum_axis_keyword': lambda: F.sum(_x(2, 3), axis=-1),
    'sum_axis_tuple': lambda: F.sum(_x(2, 3, 4), axis=(0, 2)),
    'sum_keepdims': lambda: F.sum(_x(2, 3), 0, True),
    'sum_keepdims_keyword': lambda: F.sum(_x(2, 3), keepdims=True),
    'sum_keepdims_odd': lambda: F.sum(_x(2, 3), axis=0, keepdims=1),
    'sum_all_keywords': lambda: F.sum(x=_x(2, 3), axis=1, keepdims=False),
    'sum_axis_bool': lambda: F.sum(_x(2, 3), axis=True),
    'sum_axis_numpy_int': lambda: F.sum(_x(2, 3), axis=numpy.int64(1)),
    'sum_axis_duplicate': lambda: F.sum(_x(2, 3), axis=(1, 1)),
    'sum_axis_list': lambda: F.sum(_x(2, 3), axis=[0]),
    'sum_axis_out_of_range': lambda: F.sum(_x(2, 3), axis=2),
    'sum_module': lambda: sum_module.sum(_x(3)),
    'sum_no_argument': lambda: F.sum(),
    'sum_too_many': lambda: F.sum(_x(3), None, False, 1),
    'sum_axis_twice': lambda: F.sum(_x(3), 0, axis=0),
    'sum_unknown_keyword': lambda: F.sum(_x(3), dtype=None),
    'linear': lambda: F.linear(_x(2, 3), _x(4, 3)),
    'linear_bias': lambda: F.linear(_x(2, 3), _x(4, 3), _x(4)),
    'linear_keywords': lambda: F.linear(W=_x(4, 3), x=_x(2, 3), b=_x(4)),
    'linear_bias_none': lambda: F.linear(_x(2, 3), _x(4, 3), None, 1),
    'linear_arrays': lambda: F.linear(_x(2, 3).array, _x(4, 3).array),
    'linear_1d': lambda: F.linear(_x(3), _x(4, 3)),
    'linear_3d': lambda: F.linear(_x(2, 3, 2), _x(4, 6)),
    'linear_batch_axes': lambda: F.linear(_x(2, 3, 2), _x(4, 2), None, 2),
    'linear_batch_axes_zero': lambda: F.linear(_x(2, 3), _x(4, 3),
                                               n_batch_axes=0),
    'linear_batch_axes_float': lambda: F.linear(_x(2, 3), _x(4, 3),
                                                n_batch_axes=1.0),
    'linear_missing_w': lambda: F.linear(_x(2, 3)),
    'linear_too_many': lambda: F.linear(_x(2, 3), _x(4, 3), None, 1, 2),
    'linear_shapes': lambda: F.linear(_x(2, 3), _x(4, 5)),
    'linear_module': lambda: linear_module.linear(_x(2, 3), _x(4, 3)),
    'concat': lambda: F.concat((_x(2, 3), _x(2, 1))),
    'concat_list': lambda: F.concat([_x(2, 3), _x(2, 1)]),
    'concat_axis': lambda: F.concat((_x(2, 3), _x(1, 3)), 0),
    'concat_axis_keyword': lambda: F.concat(xs=(_x(2, 3), _x(2, 3)),
                                            axis=-1),
    'concat_axis_bool': lambda: F.concat((_x(2, 3), _x(2, 3)), True),
    'concat_axis_numpy_int': lambda: F.concat((_x(2, 3), _x(2, 3)),
                                              numpy.int64(1)),
    'concat_one': lambda: F.concat((_x(2, 3),)),
    'concat_none': lambda: F.concat(()),
    'concat_shapes': lambda: F.concat((_x(2, 3), _x(3, 3))),
    'concat_no_argument': lambda: F.concat(),
    'concat_module': lambda: concat_module.concat((_x(2), _x(3)), 0),
    'split_axis': lambda: F.split_axis(_x(4, 3), 2, 0),
    'split_axis_indices': lambda: F.split_axis(_x(4, 3), [1, 3], 0),
    'split_axis_indices_tuple': lambda: F.split_axis(_x(4, 3), (1,), 1),
    'split_axis_indices_empty': lambda: F.split_axis(_x(4, 3), [], 0),
    'split_axis_indices_unsorted': lambda: F.split_axis(_x(4, 3), [3, 1], 0),
    'split_axis_indices_past_end': lambda: F.split_axis(_x(4, 3), [5], 0),
    'split_axis_indices_negative': lambda: F.split_axis(_x(4, 3), [-1], 0),
    'split_axis_indices_array': lambda: F.split_axis(
        _x(4, 3), numpy.array([2]), 0),
    'split_axis_indices_float_array': lambda: F.split_axis(
        _x(4, 3), numpy.array([2.0]), 0),
    'split_axis_indices_range': lambda: F.split_axis(_x(4, 3), range(1, 3),
                                                     0),
    'split_axis_indices_string': lambda: F.split_axis(_x(4, 3), 'ab', 0),
    'split_axis_indices_floats': lambda: F.split_axis(_x(4, 3), [1.5], 0),
    'split_axis_sections_numpy_int': lambda: F.split_axis(
        _x(4, 3), numpy.int64(2), 0),
    'split_axis_sections_bool': lambda: F.split_axis(_x(4, 3), True, 0),
    'split_axis_sections_float': lambda: F.split_axis(_x(4, 3), 2.0, 0),
    'split_axis_sections_zero': lambda: F.split_axis(_x(4, 3), 0, 0),
    'split_axis_sections_uneven': lambda: F.split_axis(_x(4, 3), 3, 0),
    'split_axis_keywords': lambda: F.split_axis(
        x=_x(4, 3), indices_or_sections=[1], axis=-1, force_tuple=True),
    'split_axis_axis_keyword': lambda: F.split_axis(_x(4, 3), [2], axis=0),
    'split_axis_axis_numpy_int': lambda: F.split_axis(
        _x(4, 3), 3, numpy.int32(1)),
    'split_axis_axis_out_of_range': lambda: F.split_axis(_x(4, 3), 2, 2),
    'split_axis_axis_none': lambda: F.split_axis(_x(4, 3), 2, None),
    'split_axis_one': lambda: F.split_axis(_x(4, 3), 1, 0),
    'split_axis_one_not_forced': lambda: F.split_axis(_x(4, 3), 1, 0, False),
    'split_axis_two_not_forced': lambda: F.split_axis(_x(4, 3), [1], 0,
                                                      force_tuple=0),
    'split_axis_array': lambda: F.split_axis(numpy.ones((2, 2)), 2, 1),
    'split_axis_no_axis': lambda: F.split_axis(_x(4, 3), 2),
    'split_axis_too_many': lambda: F.split_axis(_x(4, 3), 2, 0, True, 1),
    'split_axis_axis_twice': lambda: F.split_axis(_x(4, 3), 2, 0, axis=0),
    'split_axis_unknown_keyword': lambda: F.split_axis(_x(4, 3), 2, 0, y=1),
    'split_axis_module': lambda: split_axis_module.split_axis(
        _x(4, 3), [2], axis=0),
    'get_item': lambda: F.get_item(_x(4, 3), (1, slice(None, 2))),
    'get_item_operator': lambda: _x(4, 3)[1:, None],
    'get_item_int': lambda: _x(4, 3)[2],
    'get_item_bool': lambda: _x(4, 3)[True],
    'get_item_slice': lambda: F.get_item(_x(4, 3), slice(1, None)),
    'get_item_none': lambda: F.get_item(_x(4, 3), None),
    'get_item_ellipsis': lambda: _x(4, 3)[...],
    'get_item_two_ellipses': lambda: _x(4, 3)[..., ...],
    'get_item_empty_tuple': lambda: _x(4, 3)[()],
    'get_item_keywords': lambda: F.get_item(slices=1, x=_x(4, 3)),
    'get_item_array': lambda: F.get_item(numpy.ones((2, 3)), 1),
    'get_item_list_of_ints': lambda: _x(4, 3)[[0, 2]],
    'get_item_list_mixed': lambda: F.get_item(_x(4, 3), [1, slice(1, 2)]),
    'get_item_list_subclass': lambda: F.get_item(
        _x(4, 3), type('L', (list,), {})([0, 1])),
    'get_item_named_tuple': lambda: F.get_item(
        _x(4, 3), collections.namedtuple('I', 'a b')(1, slice(None))),
    'get_item_int_array': lambda: _x(4, 3)[numpy.array([3, 0])],
    'get_item_numpy_int': lambda: _x(4, 3)[numpy.int32(1)],
    'get_item_out_of_range': lambda: _x(4, 3)[4],
    'get_item_too_many': lambda: _x(4, 3)[0, 0, 0],
    'get_item_float': lambda: _x(4, 3)[1.0],
    'get_item_str': lambda: _x(4, 3)['a'],
    'get_item_dict': lambda: _x(4, 3)[{}],
    'get_item_no_argument': lambda: F.get_item(_x(3)),
    'get_item_too_many_arguments': lambda: F.get_item(_x(3), 0, 1),
    'get_item_module': lambda: get_item_module.get_item(_x(3), 0),
    'get_item_parameter': lambda: chainer.Parameter(
        numpy.ones((2, 3), numpy.float32))[1],
}


def _outcome(y):
    """What a call left: each output's array, whether it requires grad,
    and its creator's state."""
    if isinstance(y, tuple):
        return tuple(_outcome(v) for v in y)
    return y.array, y.requires_grad, _node_state(y)


@pytest.mark.parametrize('case', sorted(CALLS))
def test_same_result_node_and_error_as_stock(case):
    def fn():
        error = error_of(CALLS[case])
        if error is not None:
            return error
        return _outcome(CALLS[case]())
    check_same(fn)


@pytest.mark.parametrize('public,row', [
    (lambda: F.relu(_x(3)), 'relu.relu'),
    (lambda: F.sigmoid(_x(3)), 'sigmoid.sigmoid'),
    (lambda: F.tanh(_x(3)), 'tanh.tanh'),
    (lambda: F.sum(_x(3), axis=0), 'sum.sum'),
    (lambda: F.linear(_x(2, 3), _x(4, 3), _x(4)), 'linear.linear'),
    (lambda: F.concat((_x(2, 3), _x(2, 3))), 'concat.concat'),
    (lambda: F.split_axis(_x(2, 3), [1], axis=1), 'split_axis.split_axis'),
    (lambda: F.get_item(_x(2, 3), 1), 'get_item.get_item'),
    (lambda: _x(2, 3)[:, None], 'get_item.get_item'),
])
def test_wrapper_is_counted(public, row):
    chainer_fastpath.enable()
    chainer_fastpath.reset_stats()
    public()
    assert chainer_fastpath.stats()[row] == {'fast': 1, 'fallback': {}}


def test_sum_init_replaced_on_the_class_is_called(monkeypatch):
    calls = []
    original = sum_module.Sum.__init__

    def init(self, *args, **kwargs):
        calls.append(args)
        original(self, *args, **kwargs)

    chainer_fastpath.enable()
    monkeypatch.setattr(sum_module.Sum, '__init__', init)
    F.sum(_x(2, 3), 1)
    assert calls == [(1, False)]


def test_split_axis_init_and_helper_replaced_are_called(monkeypatch):
    calls = []
    init = split_axis_module.SplitAxis.__init__
    helper = split_axis_module._get_indices_or_sections

    def spy(name, original):
        def f(*args):
            calls.append(name)
            return original(*args)
        return f

    chainer_fastpath.enable()
    monkeypatch.setattr(split_axis_module.SplitAxis, '__init__',
                        spy('init', init))
    F.split_axis(_x(4, 3), [1], 0)
    monkeypatch.setattr(split_axis_module.SplitAxis, '__init__', init)
    monkeypatch.setattr(split_axis_module, '_get_indices_or_sections',
                        spy('helper', helper))
    F.split_axis(_x(4, 3), 2, 0)
    assert calls == ['init', 'helper']


def test_get_item_init_replaced_on_the_class_is_called(monkeypatch):
    calls = []
    original = get_item_module.GetItem.__init__

    def init(self, slices):
        calls.append(slices)
        original(self, slices)

    chainer_fastpath.enable()
    monkeypatch.setattr(get_item_module.GetItem, '__init__', init)
    _x(4, 3)[1, 2:]
    F.get_item(_x(4, 3), [0])
    assert calls == [(1, slice(2, None)), [0]]


@pytest.mark.parametrize('index,calls', [((Ellipsis, Ellipsis), 1),
                                         ((Ellipsis, 1), 2)])
def test_get_item_in_debug_mode_as_stock(index, calls):
    # Stock's GetItem rejects two Ellipses in debug mode only.
    def call():
        with chainer.using_config('debug', True):
            error = error_of(lambda: _x(2, 3)[index])
            return error if error is not None else _x(2, 3)[index].array
    chainer_fastpath.enable()
    chainer_fastpath.reset_stats()
    call()
    assert chainer_fastpath.stats()['get_item.get_item'] == {
        'fast': 0, 'fallback': {'debug mode': calls}}
    check_same(call)


def test_variable_subclass_getitem_is_its_own():
    class Indexed(chainer.Variable):
        def __getitem__(self, index):
            return ('own', index)

    chainer_fastpath.enable()
    assert Indexed(numpy.ones(3, numpy.float32))[1] == ('own', 1)


def test_split_axis_unsorted_indices_in_debug_mode():
    def call():
        with chainer.using_config('debug', True):
            return error_of(lambda: F.split_axis(_x(4, 3), [3, 1], 0))
    chainer_fastpath.enable()
    assert call()[0] == 'ValueError'
    check_same(call)


def test_node_class_replaced_in_its_module_is_applied(monkeypatch):
    class Doubled(relu_module.ReLU):
        def forward(self, inputs):
            return inputs[0] * 2,

    chainer_fastpath.enable()
    monkeypatch.setattr(relu_module, 'ReLU', Doubled)
    assert F.relu(_x(3)).array.tolist() == [0.0, 2.0, 4.0]


class _Pair(tanh_module.Tanh):
    """Two outputs: stock's ``tanh`` returns the first."""

    def forward(self, inputs):
        return inputs[0], inputs[0] * 2


@pytest.mark.parametrize('module,cls,fn', [
    (tanh_module, 'Tanh', lambda x: F.tanh(x)),
    (sigmoid_module, 'Sigmoid', lambda x: F.sigmoid(x)),
])
def test_node_of_two_outputs_handled_as_stock(monkeypatch, module, cls, fn):
    # tanh returns Tanh().apply(...)[0]; sigmoid unpacks ``y, = ...``.
    monkeypatch.setattr(module, cls, _Pair)

    def call():
        error = error_of(lambda: fn(_x(3)))
        return error if error is not None else fn(_x(3)).array
    check_same(call)
