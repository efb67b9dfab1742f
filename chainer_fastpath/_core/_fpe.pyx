"""Floating-point exceptions as ``numpy.errstate`` sees them.

NumPy acts on a floating-point exception (warns, raises, calls back) from
inside the ufunc call, and a warning names the innermost Python frame: for a
call made from compiled code, the user's line rather than the line of
Chainer's forward that stock runs. So the compiled code makes its NumPy calls
with NumPy's error handling off (``quiet1``, ``quiet2``, ``quiet_into``,
which collect the flags each call raised) and, where a raised flag is one
errstate does not ignore (``acts``), gives the work back to stock's Python
code, which computes the same values and acts from stock's own line. The C
kernels that do what NumPy's loops do clear the ``watched()`` flags, run, and
give the work back the same way.

Reductions (``sum``, ``max``, ``mean``), ``matmul`` through Chainer's
helpers, casts and NumPy scalar arithmetic take no ``extobj``, and NumPy
clears the flags before each of its loops, so testing the flags after a run
of them would see only the last. A run of such calls goes between
``quiet_begin`` and ``quiet_end``: errstate there calls a recorder for every
floating-point exception, which collects what each call raised.
"""
from numpy.core import umath

cimport cython

from cpython.object cimport PyObject

cdef extern from *:
    """
    #if PY_VERSION_HEX < 0x03090000
    #define cfp_vectorcall _PyObject_Vectorcall
    #else
    #define cfp_vectorcall PyObject_Vectorcall
    #endif
    """
    object cfp_vectorcall(object callable, PyObject **args, size_t nargs,
                          object kwnames)

# NumPy 1.x keeps errstate as a mask of 3-bit modes (0: ignore) per flag.
cdef object _geterrobj = getattr(umath, 'geterrobj', None)
cdef tuple _SHIFTS = tuple(
    (getattr(umath, 'SHIFT_' + name, -1), flag) for name, flag in (
        ('DIVIDEBYZERO', FE_DIVBYZERO), ('OVERFLOW', FE_OVERFLOW),
        ('UNDERFLOW', FE_UNDERFLOW), ('INVALID', FE_INVALID)))
cdef int _ALL = all_flags()
# _SHIFTS, for watched() to read in C.
cdef int _shift[4]
cdef int _flag[4]


cdef void _fill_shifts() except *:
    cdef int i = 0
    for shift, flag in _SHIFTS:
        _shift[i] = shift
        _flag[i] = flag
        i += 1


_fill_shifts()

# A ufunc's ``extobj``: NumPy 1.x's default buffer size, every mode
# 'ignore'. NumPy clears the flags before each loop and, with nothing to act
# on, leaves them as the loop raised them. The buffer size only splits
# buffered elementwise loops, which does not change their values.
cdef list _IGNORE = [umath.UFUNC_BUFSIZE_DEFAULT, 0, None]
cdef tuple _EXTOBJ = ('extobj',)


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
    cdef int flags = 0, i
    for i in range(4):
        if _shift[i] < 0 or (m >> _shift[i]) & 7:
            flags |= _flag[i]
    return flags


cdef Py_ssize_t buffer_size() except -1:
    """NumPy's ufunc buffer size in this thread now (``numpy.getbufsize``),
    or 0 where it cannot be read."""
    if _geterrobj is None:
        return 0
    errobj = _geterrobj()
    if type(errobj) is not list or len(<list>errobj) < 1:
        return 0
    size = (<list>errobj)[0]
    if type(size) is not int or size <= 0:
        return 0
    return size


cdef bint acts(int raised) except -1:
    """Whether NumPy, as errstate is now, would act on one of the flags
    ``raised``: then the work goes back to stock."""
    return raised != 0 and (raised & watched()) != 0


cdef inline object _quiet(object ufunc, PyObject **args, size_t nargs,
                          int *raised):
    # ufunc(*args[:nargs], extobj=_IGNORE); args[nargs] is left for it.
    # Flags an earlier operation left are cleared first: NumPy clears them
    # only where its loop runs (not for empty operands), and they are not
    # this call's.
    args[nargs] = <PyObject *>_IGNORE
    clear_flags(_ALL)
    y = cfp_vectorcall(ufunc, args, nargs, _EXTOBJ)
    raised[0] |= fetestexcept(_ALL)
    return y


cdef object quiet1(object ufunc, object a, int *raised):
    """``ufunc(a)``, NumPy acting on no floating-point exception; adds the
    flags the call raised to ``raised``."""
    cdef PyObject *args[2]
    args[0] = <PyObject *>a
    return _quiet(ufunc, args, 1, raised)


cdef object quiet2(object ufunc, object a, object b, int *raised):
    """``ufunc(a, b)`` (what ``a + b`` calls for an ndarray or NumPy scalar
    ``a`` and an ndarray ``b``), as ``quiet1``."""
    cdef PyObject *args[3]
    args[0] = <PyObject *>a
    args[1] = <PyObject *>b
    return _quiet(ufunc, args, 2, raised)


cdef object quiet_into(object ufunc, object a, object b, object out,
                       int *raised):
    """``ufunc(a, b, out)`` (what ``a += b`` calls for an ndarray ``a`` with
    ``out`` ``a``), as ``quiet1``."""
    cdef PyObject *args[4]
    args[0] = <PyObject *>a
    args[1] = <PyObject *>b
    args[2] = <PyObject *>out
    return _quiet(ufunc, args, 3, raised)


# errstate 'call' (mode 3) for every flag, NumPy's UFUNC_FPE_* bits in the
# recorder's second argument mapped to the <fenv.h> flags ``acts`` reads.
cdef object _seterrobj = getattr(umath, 'seterrobj', None)
cdef long _CALL_ALL = sum([
    3 << getattr(umath, 'SHIFT_' + name, 0) for name in (
        'DIVIDEBYZERO', 'OVERFLOW', 'UNDERFLOW', 'INVALID')])
cdef tuple _FPE_BITS = (
    (getattr(umath, 'FPE_DIVIDEBYZERO', 1), FE_DIVBYZERO),
    (getattr(umath, 'FPE_OVERFLOW', 2), FE_OVERFLOW),
    (getattr(umath, 'FPE_UNDERFLOW', 4), FE_UNDERFLOW),
    (getattr(umath, 'FPE_INVALID', 8), FE_INVALID))


cpdef int fenv_flags(long numpy_bits):
    """The <fenv.h> flags of NumPy's ``UFUNC_FPE_*`` bits ``numpy_bits``
    (what errstate's 'call' callback is given)."""
    cdef int flags = 0
    for bit, fe in _FPE_BITS:
        if numpy_bits & <long>bit:
            flags |= <int>fe
    return flags


@cython.final
cdef class _Recorder:
    # The errstate callback of one quiet region.
    cdef int raised

    def __call__(self, kind, flag):
        self.raised |= fenv_flags(flag)


cdef object quiet_begin():
    """Starts a quiet region: NumPy acts on no floating-point exception
    until ``quiet_end``, which says which ones were raised. Pass its result
    to ``quiet_end`` (in a ``finally``)."""
    if _seterrobj is None or _geterrobj is None:
        return None
    saved = _geterrobj()
    recorder = _Recorder()
    # The buffer size stays the thread's: it splits a reduction's rows
    # (numpy.setbufsize), so it changes the sums' bits.
    cdef Py_ssize_t size = buffer_size()
    _seterrobj([size if size else umath.UFUNC_BUFSIZE_DEFAULT, _CALL_ALL,
                recorder])
    return saved, recorder


cdef int quiet_end(object saved) except -1:
    """Ends the quiet region ``saved`` began, restoring errstate; the flags
    its NumPy calls raised (all four where errstate could not be set, so
    the work goes back to stock wherever errstate watches anything)."""
    if saved is None:
        return _ALL
    _seterrobj((<tuple>saved)[0])
    return (<_Recorder>(<tuple>saved)[1]).raised
