"""Floating-point exceptions as ``numpy.errstate`` sees them.

The kernels that do in C what NumPy's loops do must warn or raise where
NumPy would. They clear the ``watched()`` flags, run, and give the work back
to NumPy when one was raised; NumPy then acts on it as errstate says.
"""
from numpy.core import umath

# NumPy 1.x keeps errstate as a mask of 3-bit modes (0: ignore) per flag.
cdef object _geterrobj = getattr(umath, 'geterrobj', None)
cdef tuple _SHIFTS = tuple(
    (getattr(umath, 'SHIFT_' + name, -1), flag) for name, flag in (
        ('DIVIDEBYZERO', FE_DIVBYZERO), ('OVERFLOW', FE_OVERFLOW),
        ('UNDERFLOW', FE_UNDERFLOW), ('INVALID', FE_INVALID)))
cdef int _ALL = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID


cdef int watched():
    """The flags whose errstate mode is not 'ignore' in this thread now;
    all four when errstate cannot be read."""
    if _geterrobj is None:
        return _ALL
    errobj = _geterrobj()
    if type(errobj) is not list or len(<list>errobj) < 2:
        return _ALL
    mask = (<list>errobj)[1]
    if type(mask) is not int:
        return _ALL
    cdef long m = mask
    cdef int flags = 0
    for shift, flag in _SHIFTS:
        if shift < 0 or (m >> <int>shift) & 7:
            flags |= <int>flag
    return flags
