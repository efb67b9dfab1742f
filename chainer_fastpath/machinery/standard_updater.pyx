"""``StandardUpdater.update`` and ``update_core`` compiled: one iteration's
batch fetched, converted and handed to the optimizer, without the two
Python frames and their bytecode.

Every object the updater holds (iterator, converter, optimizer, loss
function) is user-replaceable, so each is looked up and called per call in
stock's order with stock's arguments: ``iterator.next()``, the module's
``convert._call_converter(converter, batch, input_device)`` (a rebound or
compiled converter helper is the one called), ``optimizer.update`` with the
arrays spread as a tuple, a dict or one argument, ``optimizer.new_epoch(
auto=True)`` at an epoch's end. ``update`` calls ``self.update_core()`` by
name, so a subclass's or a mock's runs. Both speak for any subclass that
does not define them.
"""
from chainer.training.updaters import standard_updater as updater_module

from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef object _StandardUpdater = updater_module.StandardUpdater
cdef object _updater_module = updater_module

cdef EntryStats _stats_update = _stats.entry('StandardUpdater.update')
cdef EntryStats _stats_update_core = _stats.entry(
    'StandardUpdater.update_core')
cdef dict _originals = {}

TARGETS = ((_StandardUpdater, 'update'), (_StandardUpdater, 'update_core'))


def bind(owner, attribute, original):
    """Keeps stock's method to fall back to; returns its replacement."""
    _originals[attribute] = original
    return update if attribute == 'update' else update_core


cdef bint _only_self(EntryStats stats, tuple args, dict kwargs) except -1:
    """Whether the call is ``method(self)``, counted either way; stock
    raises Python's error for any other."""
    if len(args) != 1 or kwargs:
        stats.fallback('arguments not (self)')
        return False
    stats.fast += 1
    return True


def update(*args, **kwargs):
    """Drop-in for ``StandardUpdater.update``."""
    if not _only_self(_stats_update, args, kwargs):
        return _originals['update'](*args, **kwargs)
    self = args[0]
    self.update_core()
    self.iteration += 1


def update_core(*args, **kwargs):
    """Drop-in for ``StandardUpdater.update_core``."""
    if not _only_self(_stats_update_core, args, kwargs):
        return _originals['update_core'](*args, **kwargs)
    self = args[0]
    iterator = self._iterators['main']
    batch = iterator.next()
    in_arrays = _updater_module.convert._call_converter(
        self.converter, batch, self.input_device)

    optimizer = self._optimizers['main']
    loss_func = self.loss_func or optimizer.target

    if isinstance(in_arrays, tuple):
        optimizer.update(loss_func, *in_arrays)
    elif isinstance(in_arrays, dict):
        optimizer.update(loss_func, **in_arrays)
    else:
        optimizer.update(loss_func, in_arrays)

    if self.auto_new_epoch and iterator.is_new_epoch:
        optimizer.new_epoch(auto=True)
