"""Binding a call's arguments to a function's parameters as Python does.

A compiled replacement declared ``(*args, **kwargs)`` binds them itself and
hands a call Python would reject to the stock function, so that the
``TypeError`` is Python's own, worded as stock's is.
"""

cdef object _MISSING = object()


cdef class Signature:
    """Parameters ``names``, the last ``len(defaults)`` of them with those
    defaults; no ``*args``, ``**kwargs`` nor keyword-only parameters."""

    def __init__(self, names, defaults=()):
        self.names = tuple(names)
        self.defaults = tuple(defaults)
        # The fallback reason where a call does not bind.
        self.mismatch = 'arguments not ({})'.format(', '.join(self.names))

    cdef tuple bind(self, tuple args, dict kwargs):
        """The parameters' values for a call ``f(*args, **kwargs)``, bound
        as Python binds them; None where Python would raise (an argument
        missing, given twice or unknown, or too many)."""
        cdef Py_ssize_t n = len(args), m = len(self.names), i
        cdef Py_ssize_t first_default = m - len(self.defaults)
        if n > m:
            return None
        if not kwargs and n >= first_default:
            # Positional arguments only: the usual call.
            if n == m:
                return args
            return args + self.defaults[n - first_default:]
        cdef list values = list(args)
        for i in range(n, m):
            values.append(self.defaults[i - first_default]
                          if i >= first_default else _MISSING)
        if kwargs:
            for name, value in kwargs.items():
                for i in range(m):
                    if self.names[i] == name:
                        break
                else:
                    i = -1
                if i < n:
                    return None
                values[i] = value
        for i in range(first_default):
            if values[i] is _MISSING:
                return None
        return tuple(values)

    def bind_or_none(self, *args, **kwargs):
        """``bind`` for Python callers (the tests)."""
        return self.bind(args, kwargs)
