"""Per-entry-point counters: calls that took the fast path, and fallbacks
by reason; and per FunctionNode class, the forwards and backwards that ran
as stock's Python, by reason.

The fast paths ``cimport`` :class:`EntryStats` and bump ``fast`` as a C field,
so counting costs one increment per call. A compiled forward or backward is
counted on its registry entry (``_registry``), for the same reason.
"""
import logging

logger = logging.getLogger('chainer_fastpath')

# name -> EntryStats, in creation order (the order of the report).
_registry = {}
_verbose = False
# (class, 'forward' or 'backward') -> {reason: runs of stock's Python}
cdef dict _python = {}


cdef class EntryStats:
    """Counters of one patched entry point."""

    def __cinit__(self, str name):
        self.name = name
        self.fast = 0
        self._fallbacks = {}

    cpdef fallback(self, str reason):
        """Counts one fallback to the original; logs a reason seen first."""
        cdef object n = self._fallbacks.get(reason)
        if n is None:
            self._fallbacks[reason] = 1
            if _verbose:
                logger.info('%s: fell back to the original (%s)',
                            self.name, reason)
        else:
            self._fallbacks[reason] = n + 1

    def snapshot(self):
        return {'fast': self.fast, 'fallback': dict(self._fallbacks)}

    def reset(self):
        self.fast = 0
        self._fallbacks.clear()


def entry(str name):
    """Returns the counters registered under ``name``, creating them once."""
    stats = _registry.get(name)
    if stats is None:
        stats = _registry[name] = EntryStats(name)
    return stats


def set_verbose(bint verbose):
    global _verbose
    _verbose = verbose


cdef int python_ran(object cls, str part, str reason) except -1:
    """Counts one ``part`` of a node of ``cls`` run as stock's Python."""
    key = (cls, part)
    reasons = _python.get(key)
    if reasons is None:
        reasons = _python[key] = {}
    reasons[reason] = reasons.get(reason, 0) + 1
    return 0


def python_runs():
    """``{(class, part): {reason: n}}``: what ran as stock's Python."""
    return {key: dict(reasons) for key, reasons in _python.items()}


def snapshot():
    return {name: s.snapshot() for name, s in _registry.items()}


def reset():
    for s in _registry.values():
        s.reset()
    _python.clear()
