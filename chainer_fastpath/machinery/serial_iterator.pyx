# cython: boundscheck=True, wraparound=True
"""``SerialIterator.__next__`` and ``ShuffleOrderSampler.__call__``,
compiled.

``__next__`` does what stock's does, in stock's order: the previous epoch
detail, the state machine's step (its integers in C, the order sampler,
``len`` and the order's slices called as stock calls them, NumPy's
``arange`` and ``concatenate`` for the indices), the new state, then the
batch. A ``TupleDataset`` of NumPy arrays gives its batch in one C loop
(``datasets.rows_of``); any other dataset is indexed per example with the
index objects stock passes. A subclass overriding a property the step
reads past, or a rebound ``_statemachine`` name, runs stock's method.
"""
import numpy

from chainer.iterators import _statemachine
from chainer.iterators import order_samplers
from chainer.iterators import serial_iterator

from chainer_fastpath._core._audit cimport (
    StockFunctions, StockMethods, class_finds, stock_replaced)
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats
from chainer_fastpath.machinery.datasets cimport (
    item_is_compiled, rows_of, tuple_item)

cdef type _SerialIterator = serial_iterator.SerialIterator
cdef type _ShuffleOrderSampler = order_samplers.ShuffleOrderSampler
cdef type _IteratorState = _statemachine.IteratorState
cdef object _arange = numpy.arange
cdef object _concatenate = numpy.concatenate
cdef object _intp = numpy.intp
cdef type _ndarray = numpy.ndarray
# What the step reads past: stock's properties, and how attributes are
# read and written.
cdef StockMethods _props = StockMethods(
    _SerialIterator, ('epoch_detail', 'epoch', 'current_position',
                      '_epoch_size', 'repeat', '__getattribute__',
                      '__setattr__'))
cdef StockFunctions _functions = StockFunctions(
    ((_statemachine, 'iterator_statemachine'),))
cdef dict _module_dict = serial_iterator.__dict__
cdef dict _machine_dict = _statemachine.__dict__
# Positions and epochs beyond this go to stock's Python integers.
cdef Py_ssize_t _LIMIT = 1 << 60

cdef EntryStats _stats_next = _stats.entry('SerialIterator.__next__')
cdef EntryStats _stats_sampler = _stats.entry('ShuffleOrderSampler.__call__')
cdef Signature _next_signature = Signature(('self',))
cdef Signature _sampler_signature = Signature(
    ('self', 'current_order', 'current_position'))
cdef object _original_next = None
cdef object _original_sampler = None


TARGETS = ((_SerialIterator, '__next__'), (_SerialIterator, 'next'),
           (_ShuffleOrderSampler, '__call__'))


def bind(owner, attribute, original):
    """Keeps the stock method to fall back to; returns its replacement."""
    global _original_next, _original_sampler
    if owner is _ShuffleOrderSampler:
        _original_sampler = original
        return shuffle_order
    _original_next = original
    return serial_next


def shuffle_order(*args, **kwargs):
    """Drop-in for ``ShuffleOrderSampler.__call__``: a permutation of the
    order's length, drawn from the sampler's generator."""
    cdef tuple values = _sampler_signature.bind(args, kwargs)
    if values is None:
        _stats_sampler.fallback(_sampler_signature.mismatch)
        return _original_sampler(*args, **kwargs)
    _stats_sampler.fast += 1
    return values[0]._random.permutation(len(values[1]))


def serial_next(*args, **kwargs):
    """Drop-in for ``SerialIterator.__next__`` (and ``next``)."""
    cdef tuple values = _next_signature.bind(args, kwargs)
    if values is None:
        _stats_next.fallback(_next_signature.mismatch)
        return _original_next(*args, **kwargs)
    self = values[0]
    reason = _left_to_stock(self)
    if reason is not None:
        _stats_next.fallback(reason)
        return _original_next(self)
    _stats_next.fast += 1
    return _next(self)


cdef str _left_to_stock(object self):
    """Why stock's ``__next__`` must run for ``self``, or None."""
    cdef object cls = type(self)
    cdef Py_ssize_t i
    if not isinstance(self, _SerialIterator):
        return 'not a SerialIterator'
    # Looked up without calling a descriptor: a PropertyMock counts calls
    # even on the class.
    for i in range(len(_props.names)):
        if not class_finds(cls, _props.names[i], _props.originals[i]):
            return ('SerialIterator methods replaced' if cls is _SerialIterator
                    else 'SerialIterator subclass overrides '
                    + _props.names[i])
    if (_module_dict.get('_statemachine') is not _statemachine
            or _machine_dict.get('IteratorState') is not _IteratorState
            or not _functions.unchanged()):
        return '_statemachine replaced'
    return stock_replaced()


cdef bint _plain_int(object v):
    return type(v) is int and -_LIMIT < v < _LIMIT


cdef object _next(object self):
    # SerialIterator.epoch_detail, with its _epoch_size.
    state = self._state
    order = state.order
    size = len(self.dataset) if order is None else len(order)
    self._previous_epoch_detail = state.epoch + state.current_position / size
    # The arguments of iterator_statemachine, in stock's order.
    state = self._state
    batch_size = self.batch_size
    repeat = self._repeat
    order_sampler = self.order_sampler
    n_data = len(self.dataset)
    if (type(state) is _IteratorState and _plain_int(state[0])
            and _plain_int(state[1]) and _plain_int(batch_size)
            and (type(repeat) is bool or type(repeat) is int)):
        self._state, indices = _step(state, batch_size, repeat,
                                     order_sampler, n_data)
    else:
        self._state, indices = _statemachine.iterator_statemachine(
            state, batch_size, repeat, order_sampler, n_data)
    if indices is None:
        raise StopIteration
    batch = rows_of(self.dataset, indices)
    if batch is not None:
        return batch
    batch = []
    for index in indices:
        dataset = self.dataset
        if item_is_compiled(type(dataset)):
            batch.append(tuple_item(dataset, index))
        else:
            batch.append(dataset[index])
    return batch


cdef tuple _step(object state, Py_ssize_t batch_size, bint repeat,
                 object order_sampler, Py_ssize_t dataset_len):
    """``_statemachine.iterator_statemachine`` with the position, epoch
    and batch size in C."""
    cdef Py_ssize_t i = state[0], epoch = state[1], n, i_end
    order = state[3]
    if not repeat and epoch > 0:
        return state, None
    cdef list pieces = []
    n = dataset_len if order is None else len(order)
    if repeat and n == 0:
        raise ValueError('Epoch size must be positive for an iterator '
                         'that repeats.')
    i_end = i + batch_size
    cdef bint is_new_epoch = False
    while i_end >= n:
        if order is None:
            pieces.append(_arange(i, n, dtype=_intp))
        else:
            pieces.append(order[i:n])
            new_order = order_sampler(order, i)
            if len(new_order) != len(order):
                raise ValueError('The size of order does not match '
                                 'the size of the previous order.')
            order = new_order
        epoch += 1
        is_new_epoch = True
        i = 0
        if repeat:
            i_end -= n
        else:
            i_end = 0
            break
    if order is None:
        pieces.append(_arange(i, i_end, dtype=_intp))
    else:
        pieces.append(order[i:i_end])
    new_state = _IteratorState(i_end, epoch, is_new_epoch, order)
    if (len(pieces) == 1 and order is None
            and type(pieces[0]) is _ndarray):
        # arange's new array is what concatenate would copy it to.
        return new_state, pieces[0]
    return new_state, _concatenate(pieces)
