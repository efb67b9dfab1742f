# cython: boundscheck=True, wraparound=True
# Indexing here is of users' objects (a report's tuple, the reporters'
# list), checked as Python checks it.
"""``chainer.reporter`` compiled: ``Reporter.report``, ``report`` (also
``chainer.report``), ``Summary.add`` and ``DictSummary.add``, the reports a
training loop makes every iteration and LogReport's accumulation of them.

Stock's ``Summary.add`` spends most of its time finding the device of a
value it then adds on the CPU (``get_device_from_array``, ``using_device``
and a ``with`` block); here a NumPy scalar, 0-d array or Python number is
known to be on the CPU and added with the same Python operations in the
same order. Its arithmetic is NumPy's scalar arithmetic, which acts on
floating-point exceptions from the innermost Python frame: the fast path
takes only magnitudes whose sums and squares can raise none (finite, far
from overflow and underflow), and gives anything else to stock. A report
from a ``Reporter`` that still has the compiled ``report`` goes straight
to it; a subclass, a method set on an instance or on the class, or a
rebound helper of ``chainer.reporter`` runs stock's code, counted.
"""
import copy

from libc.math cimport fabs

from cpython.float cimport PyFloat_AsDouble
from cpython.long cimport PyLong_AsDouble

import numpy

import chainer
from chainer import backend
from chainer import reporter as reporter_module
from chainer import variable

from chainer_fastpath._core._audit cimport (
    StockFunctions, method_is, stock_replaced)
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, cfp_nd, cfp_typenum)
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef object _Reporter = reporter_module.Reporter
cdef object _Summary = reporter_module.Summary
cdef object _DictSummary = reporter_module.DictSummary
cdef object _Variable = variable.Variable
cdef object _thread_local = reporter_module._thread_local
cdef object _copy_module = copy
cdef object _MISSING = object()
cdef type _ndarray = numpy.ndarray
cdef type _float32 = numpy.float32
cdef type _float64 = numpy.float64

# What stock's code calls by name on the way: rebound (a mock), stock runs.
cdef StockFunctions _helpers = StockFunctions((
    (reporter_module, '_copy_variable'),
    (reporter_module, '_get_reporters'),
    (backend, 'get_device_from_array'),
    (backend, 'get_device'),
    (chainer, 'using_device')))


cdef str _replaced():
    """Why stock's code must run: a helper of ``chainer.reporter`` or
    the backend, a NumPy function or a ``Variable`` property replaced."""
    if not _helpers.unchanged():
        return 'chainer.reporter helper replaced'
    return stock_replaced()

cdef EntryStats _stats_reporter_report = _stats.entry('Reporter.report')
cdef EntryStats _stats_report = _stats.entry('reporter.report')
cdef EntryStats _stats_summary_add = _stats.entry('Summary.add')
cdef EntryStats _stats_dict_summary_add = _stats.entry('DictSummary.add')

cdef Signature _report_signature = Signature(('values', 'observer'), (None,))
cdef Signature _method_report_signature = Signature(
    ('self', 'values', 'observer'), (None,))
cdef Signature _add_signature = Signature(('self', 'value', 'weight'), (1,))
cdef Signature _dict_add_signature = Signature(('self', 'd'))

cdef dict _originals = {}

TARGETS = ((_Reporter, 'report'), (reporter_module, 'report'),
           (chainer, 'report'), (_Summary, 'add'), (_DictSummary, 'add'))


def bind(owner, attribute, original):
    """Keeps stock's function to fall back to; returns its replacement."""
    if attribute == 'report':
        if owner is _Reporter:
            _originals['Reporter.report'] = original
            return Reporter_report
        _originals['report'] = original
        return report
    if owner is _Summary:
        _originals['Summary.add'] = original
        return Summary_add
    _originals['DictSummary.add'] = original
    return DictSummary_add


cdef tuple _bound(Signature signature, EntryStats stats, tuple args,
                  dict kwargs):
    """The parameters of a call that can take the fast path; None, the
    fallback counted, for one that cannot."""
    bound = signature.bind(args, kwargs)
    reason = signature.mismatch if bound is None else _replaced()
    if reason is not None:
        stats.fallback(reason)
        return None
    return bound


# -- Reporter.report, report ------------------------------------------------

cdef object _unreported(object value):
    # stock's _copy_variable: the value, a Variable copied off its graph.
    if isinstance(value, _Variable):
        return _copy_module.copy(value)
    return value


cdef object _reported(object values):
    """``values`` as stock's ``Reporter.report`` stores them."""
    if ConfigView.current().get('keep_graph_on_report'):
        return values
    cdef dict out = {}
    if type(values) is dict:
        for key, value in (<dict>values).items():
            out[key] = _unreported(value)
    else:
        for key, value in values.items():
            out[key] = _unreported(value)
    return out


cdef object _report_to(object self, object values, object observer):
    """Stock's ``Reporter.report(self, values, observer)``."""
    values = _reported(values)
    if observer is None:
        self.observation.update(values)
        return None
    observer_id = id(observer)
    names = self._observer_names
    if observer_id not in names:
        raise KeyError('Given observer is not registered to the reporter.')
    observer_name = names[observer_id]
    for key, value in values.items():
        if type(observer_name) is str and type(key) is str:
            name = <str>observer_name + '/' + <str>key
        else:
            name = '%s/%s' % (observer_name, key)
        self.observation[name] = value
    return None


def Reporter_report(*args, **kwargs):
    """Drop-in for ``Reporter.report``."""
    bound = _bound(_method_report_signature, _stats_reporter_report, args,
                   kwargs)
    if bound is None:
        return _originals['Reporter.report'](*args, **kwargs)
    _stats_reporter_report.fast += 1
    return _report_to(bound[0], bound[1], bound[2])


def report(*args, **kwargs):
    """Drop-in for ``chainer.reporter.report``: the current reporter's
    ``report``, nothing where none is current."""
    bound = _bound(_report_signature, _stats_report, args, kwargs)
    if bound is None:
        return _originals['report'](*args, **kwargs)
    _stats_report.fast += 1
    values, observer = bound
    # stock's _get_reporters(): the thread's list, made on first use.
    reporters = getattr(_thread_local, 'reporters', _MISSING)
    if reporters is _MISSING:
        reporters = _thread_local.reporters = []
    if not reporters:
        return None
    current = reporters[-1]
    if method_is(current, 'report', Reporter_report):
        # What ``current.report(values, observer)`` would run (the helpers
        # were checked above), counted as its own fast call.
        _stats_reporter_report.fast += 1
        _report_to(current, values, observer)
        return None
    current.report(values, observer)
    return None


# -- Summary.add, DictSummary.add ---------------------------------------------

# Magnitudes (besides 0) whose products and sums as the fast path makes
# them stay normal and finite in float32: |value|, |weight| within
# [_LOW, _HIGH], the running sums within [_SUM_LOW, _SUM_HIGH]. A nonzero
# difference of two such floats is at least an ulp of the smaller one.
cdef double _LOW = 1e-10, _HIGH = 1e10
cdef double _SUM_LOW = 1e-20, _SUM_HIGH = 1e30

# What a number is, for the arithmetic NumPy and Python would do with it.
cdef enum _Kind:
    _OTHER, _INT, _FLOAT, _F32, _F64


cdef _Kind _kind(object v, double *value) except *:
    """The kind of ``v`` (a Python int or float, a NumPy float32 or float64
    scalar or 0-d array) with its value; _OTHER for anything else."""
    cdef type t = type(v)
    cdef _Kind kind
    if t is float:
        kind = _FLOAT
    elif t is _float64:
        kind = _F64
    elif t is _float32:
        kind = _F32
    elif t is int:
        try:
            value[0] = PyLong_AsDouble(v)
        except OverflowError:
            return _OTHER
        return _INT
    elif t is _ndarray and cfp_nd(v) == 0:
        if cfp_typenum(v) == CFP_NPY_FLOAT:
            kind = _F32
        elif cfp_typenum(v) == CFP_NPY_DOUBLE:
            kind = _F64
        else:
            return _OTHER
    else:
        return _OTHER
    value[0] = PyFloat_AsDouble(v)
    return kind


cdef inline bint _in_range(double d, double low, double high):
    d = fabs(d)
    return d == 0.0 or (low <= d <= high)


cdef bint _added(object self, object value, object weight) except -1:
    """Stock's ``Summary.add`` for an exact ``Summary`` and values that
    cannot raise a floating-point exception; False (nothing done) for
    anything else."""
    if type(self) is not _Summary:
        return False
    cdef double v, w, xd, x2d, nd
    cdef _Kind value_kind = _kind(value, &v)
    cdef _Kind weight_kind = _kind(weight, &w)
    if (value_kind == _OTHER or weight_kind == _OTHER
            or not _in_range(v, _LOW, _HIGH)
            or not _in_range(w, _LOW, _HIGH)):
        return False
    cdef dict own = self.__dict__
    x = own.get('_x', _MISSING)
    x2 = own.get('_x2', _MISSING)
    n = own.get('_n', _MISSING)
    cdef _Kind x_kind = _kind(x, &xd)
    cdef _Kind x2_kind = _kind(x2, &x2d)
    if (x_kind == _OTHER or x2_kind == _OTHER or _kind(n, &nd) == _OTHER
            or not _in_range(xd, _SUM_LOW, _SUM_HIGH)
            or not _in_range(x2d, _SUM_LOW, _SUM_HIGH)
            or not _in_range(nd, 0.0, _SUM_HIGH)):
        return False
    if (weight_kind == _INT and w == 1.0 and type(n) is int
            and (value_kind == _F32 or value_kind == _F64)
            and (x_kind == _FLOAT or x_kind == _F64)
            and (x2_kind == _FLOAT or x2_kind == _F64)):
        # The usual report, a float scalar of weight 1. NumPy 1.x takes
        # ``1 * value`` for float64 (a Python int is a long to its scalar
        # math), so the product, the square and the sums are float64 ones.
        square = v * v
        own['_x'] = _float64(xd + v)
        own['_x2'] = _float64(x2d + square)
        own['_n'] = n + 1
        return True
    # ``self._x += weight * value`` and so on: the same operations, in
    # place where the operand does it in place.
    x += weight * value
    own['_x'] = x
    x2 += weight * value * value
    own['_x2'] = x2
    n += weight
    own['_n'] = n
    return True


def Summary_add(*args, **kwargs):
    """Drop-in for ``Summary.add``."""
    bound = _bound(_add_signature, _stats_summary_add, args, kwargs)
    if bound is not None:
        if _added(bound[0], bound[1], bound[2]):
            _stats_summary_add.fast += 1
            return None
        _stats_summary_add.fallback(
            'not a Summary' if type(bound[0]) is not _Summary
            else 'not a CPU scalar of a safe magnitude')
    return _originals['Summary.add'](*args, **kwargs)


cdef bint _is_scalar(object v) except -1:
    """``numpy.isscalar(v) or getattr(v, 'ndim', -1) == 0``."""
    cdef type t = type(v)
    if t is float or t is int or t is _float32 or t is _float64:
        return True
    if t is _ndarray:
        return cfp_nd(v) == 0
    return numpy.isscalar(v) or getattr(v, 'ndim', -1) == 0


cdef object _summary_add(object summary, object value, object weight):
    # What ``summary.add(value, weight=weight)`` runs.
    if method_is(summary, 'add', Summary_add):
        if _added(summary, value, weight):
            _stats_summary_add.fast += 1
            return None
    summary.add(value, weight=weight)


def DictSummary_add(*args, **kwargs):
    """Drop-in for ``DictSummary.add``."""
    bound = _bound(_dict_add_signature, _stats_dict_summary_add, args, kwargs)
    if bound is None:
        return _originals['DictSummary.add'](*args, **kwargs)
    _stats_dict_summary_add.fast += 1
    self, d = bound
    summaries = self._summaries
    for k, v in d.items():
        w = 1
        if isinstance(v, tuple):
            w = v[1]
            v = v[0]
            if isinstance(w, _Variable):
                w = w.array
            if not numpy.isscalar(w) and not getattr(w, 'ndim', -1) == 0:
                raise ValueError(
                    'Given weight to {} was not scalar.'.format(k))
        if isinstance(v, _Variable):
            v = v.array
        if _is_scalar(v):
            _summary_add(summaries[k], v, w)
    return None
