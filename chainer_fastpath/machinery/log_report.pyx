"""``LogReport.__call__`` compiled: each iteration's observation added to
the summary (``DictSummary.add``, itself compiled), the trigger asked, and
at its interval the means written as stock writes them.

The summary, the trigger, ``postprocess``, the trainer's and updater's
attributes, ``_init_summary`` and the file functions of the module
(``utils.tempdir``, ``os.path.join``, ``open``, ``json.dump``,
``shutil.move``) are looked up and called per call, in stock's order,
so a mock or a replaced attribute sees what it sees in stock. A subclass
and a method replaced on the instance or class run stock's code, counted.
"""
import builtins

from chainer.training.extensions import log_report as log_report_module

from chainer_fastpath._core._audit cimport class_finds
from chainer_fastpath._core._audit import is_chainers
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef object _LogReport = log_report_module.LogReport
cdef object _module = log_report_module
cdef object _builtins = builtins
# Found on the class and not set on the instance. (Not StockMethods'
# method lookup: Extension's __getattr__ gives the class a lookup of its
# own, which the interpreter's method lookup does not shortcut.)
cdef object _init_summary = _LogReport.__dict__['_init_summary']
if not is_chainers(_init_summary):
    _init_summary = object()
cdef Signature _signature = Signature(('self', 'trainer'))

cdef EntryStats _stats_call = _stats.entry('LogReport.__call__')
cdef object _original = None

TARGETS = ((_LogReport, '__call__'),)


def bind(owner, attribute, original):
    """Keeps stock's ``LogReport.__call__`` to fall back to; returns its
    replacement."""
    global _original
    _original = original
    return __call__


cdef str _reason(tuple bound):
    if bound is None:
        return _signature.mismatch
    if type(bound[0]) is not _LogReport:
        return 'not a LogReport'
    if (not class_finds(_LogReport, '_init_summary', _init_summary)
            or '_init_summary' in bound[0].__dict__):
        return 'LogReport methods replaced'
    return None


def __call__(*args, **kwargs):
    """Drop-in for ``LogReport.__call__``."""
    bound = _signature.bind(args, kwargs)
    reason = _reason(bound)
    if reason is not None:
        _stats_call.fallback(reason)
        return _original(*args, **kwargs)
    _stats_call.fast += 1
    self, trainer = bound
    keys = self._keys
    observation = trainer.observation
    summary = self._summary
    if keys is None:
        summary.add(observation)
    else:
        summary.add({k: observation[k] for k in keys if k in observation})
    if trainer.is_before_training or self._trigger(trainer):
        _write(self, trainer)


cdef _write(self, trainer):
    """The means appended to the log and the log written out, then a new
    summary: what stock does when the trigger fires."""
    stats = self._summary.compute_mean()
    stats_cpu = {}
    for name, value in stats.items():
        stats_cpu[name] = float(value)      # copied to the CPU
    updater = trainer.updater
    stats_cpu['epoch'] = updater.epoch
    stats_cpu['iteration'] = updater.iteration
    stats_cpu['elapsed_time'] = trainer.elapsed_time
    if self._postprocess is not None:
        self._postprocess(stats_cpu)
    self._log.append(stats_cpu)
    if self._log_name is not None:
        log_name = self._log_name.format(**stats_cpu)
        # Written beside and moved, so that a reader never sees half a log.
        with _module.utils.tempdir(prefix=log_name, dir=trainer.out) as tempd:
            path = _module.os.path.join(tempd, 'log.json')
            with _builtins.open(path, 'w') as f:
                _module.json.dump(self._log, f, indent=4)
            new_path = _module.os.path.join(trainer.out, log_name)
            _module.shutil.move(path, new_path)
    self._init_summary()
