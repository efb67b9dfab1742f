# cython: boundscheck=True, wraparound=True
# The label is taken from the call's arguments by a user's key, indexed as
# Python indexes.
"""``L.Classifier.forward`` compiled: the label split off the arguments, the
predictor, loss and accuracy functions called and their values reported as
stock does.

Stock sets ``y``, ``loss`` and ``accuracy`` six times a call through
``Chain.__setattr__`` and ``Link.__setattr__``, which read
``within_init_scope`` twice each to find that the value is neither a link
nor a parameter to register. Outside an init scope, for a ``Classifier``
whose classes still have those methods, the attribute is stored as
``object.__setattr__`` at the end of that chain stores it. Everything the
user supplies (predictor, functions, the reporter) is looked up and called
per call, in stock's order. A subclass, a replaced method and a label key
of another type run stock's code, counted.
"""
from cpython.object cimport PyObject_GenericSetAttr

from chainer import link as link_module
from chainer.links.model import classifier as classifier_module

from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef object _Classifier = classifier_module.Classifier
cdef object _classifier_module = classifier_module
cdef StockMethods _classifier_methods = StockMethods(
    _Classifier, ('__setattr__', 'within_init_scope'))
cdef StockMethods _link_methods = StockMethods(
    link_module.Link, ('__setattr__',))

cdef EntryStats _stats_forward = _stats.entry('Classifier.forward')
cdef object _original = None

TARGETS = ((_Classifier, 'forward'),)


def bind(owner, attribute, original):
    """Keeps stock's ``Classifier.forward`` to fall back to; returns its
    replacement."""
    global _original
    _original = original
    return forward


cdef str _reason(tuple args):
    """Why this call cannot take the fast path, or None."""
    if not args:
        return 'no self'          # stock's TypeError
    self = args[0]
    if type(self) is not _Classifier:
        return 'not a Classifier'
    if not (_classifier_methods.on_class() and _link_methods.on_class()):
        return 'Link methods replaced'
    label_key = self.label_key
    if not isinstance(label_key, (int, str)):
        return 'label key neither int nor str'
    return None


cdef int _set(object self, str name, object value) except -1:
    """``self.name = value`` as ``Chain.__setattr__`` does it."""
    if getattr(self, '_within_init_scope', False):
        setattr(self, name, value)
    else:
        PyObject_GenericSetAttr(self, name, value)
    return 0


def forward(*args, **kwargs):
    """Drop-in for ``Classifier.forward``."""
    reason = _reason(args)
    if reason is not None:
        _stats_forward.fallback(reason)
        return _original(*args, **kwargs)
    _stats_forward.fast += 1
    self = args[0]
    args = args[1:]
    label_key = self.label_key
    if isinstance(label_key, int):
        if not (-len(args) <= label_key < len(args)):
            raise ValueError('Label key %d is out of bounds' % label_key)
        t = args[label_key]
        if label_key == -1:
            args = args[:-1]
        else:
            args = args[:label_key] + args[label_key + 1:]
    else:
        if label_key not in kwargs:
            raise ValueError('Label key "%s" is not found' % label_key)
        t = kwargs[label_key]
        del kwargs[label_key]

    _set(self, 'y', None)
    _set(self, 'loss', None)
    _set(self, 'accuracy', None)

    _set(self, 'y', self.predictor(*args, **kwargs))
    _set(self, 'loss', self.lossfun(self.y, t))
    _classifier_module.reporter.report({'loss': self.loss}, self)
    if self.compute_accuracy:
        _set(self, 'accuracy', self.accfun(self.y, t))
        _classifier_module.reporter.report({'accuracy': self.accuracy}, self)
    return self.loss
