"""A warning stock issues with ``warnings.warn(message, category)``, issued
from compiled code as if from stock's line.

``warnings.warn`` takes the file, line, module (which filters match) and
once-per-location registry from the innermost Python frame, which for
compiled code is the caller's. ``StockWarning`` finds stock's call in its
code object once and issues the warning with ``warn_explicit`` and what that
frame would give.
"""
import dis
import sys
import warnings

import _warnings

cdef object _warn = _warnings.warn
cdef object _warn_explicit = _warnings.warn_explicit


def call_line(function, fragment):
    """The line Python reports for the first call in ``function``'s code
    after the string constant containing ``fragment``, or None."""
    code = function.__code__
    found = False
    for ins in dis.get_instructions(code):
        if not found:
            found = (ins.opname == 'LOAD_CONST' and type(ins.argval) is str
                     and fragment in ins.argval)
        elif ins.opname.startswith('CALL'):
            return _line_at(code, ins)
    return None


def _line_at(code, ins):
    if sys.version_info >= (3, 11):
        return ins.positions.lineno
    line = None
    for offset, lineno in dis.findlinestarts(code):
        if offset > ins.offset:
            break
        line = lineno
    return line


cdef class StockWarning:
    """``warnings.warn(message, category)`` as ``function`` (stock's) calls
    it where ``message`` is its string constant holding ``fragment``."""

    def __init__(self, function, str fragment, category):
        code = function.__code__
        self.filename = code.co_filename
        line = call_line(function, fragment)
        self.lineno = -1 if line is None else line
        self.module_globals = function.__globals__
        self.message = next(
            (c for c in code.co_consts if type(c) is str and fragment in c),
            None)
        self.category = category

    @property
    def found(self):
        """Whether stock's call was found."""
        return self.lineno >= 0 and self.message is not None

    cdef int warn(self) except -1:
        """Issues the warning with stock's file, line, module and registry,
        or calls the ``warnings.warn`` stock's code would reach, where that
        is not Python's (a mock, say)."""
        g = self.module_globals
        module = g.get('warnings', warnings)
        warn = getattr(module, 'warn')
        if warn is not _warn:
            warn(self.message, self.category)
            return 0
        registry = g.get('__warningregistry__')
        if registry is None:
            registry = g['__warningregistry__'] = {}
        name = g.get('__name__')
        if name is not None and type(name) is not str:
            name = '<string>'
        _warn_explicit(self.message, self.category, self.filename,
                       self.lineno, name, registry)
        return 0
