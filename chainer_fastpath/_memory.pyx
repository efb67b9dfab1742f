"""Freed memory kept for reuse: glibc's malloc told to serve large blocks
from its heap and to keep the heap's freed top.

By default glibc gives each block above its mmap threshold (128 KiB,
raised as such blocks are freed, up to 32 MiB) a fresh mapping, and returns
the heap's top to the system beyond 128 KiB. A training step frees and makes
the same large arrays again every iteration: each one then costs a page
fault per page (per huge page where NumPy asks for them), which is kernel
time on every step. With both thresholds raised the blocks come from the
heap, which holds about the program's peak and reuses it.

Only the process's malloc parameters change, not any result. Where the
environment tunes glibc's malloc itself (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``glibc.malloc`` tunables)
nothing is changed.
"""
import os

from libc.limits cimport INT_MAX

cdef extern from *:
    """
    #ifdef __GLIBC__
    #include <malloc.h>
    #define CFP_GLIBC 1
    #else
    #define CFP_GLIBC 0
    #define M_TRIM_THRESHOLD -1
    #define M_MMAP_THRESHOLD -3
    static int mallopt(int param, int value) { return 0; }
    #endif
    """
    int CFP_GLIBC
    int M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
    int mallopt(int param, int value)

# glibc's initial values of both, which uninstall() sets back.
cdef int _GLIBC_DEFAULT = 128 * 1024
# The largest value mallopt takes for the mmap threshold where glibc's heap
# size is bounded (HEAP_MAX_SIZE / 2 on 64-bit).
cdef int _MMAP_THRESHOLD_BOUNDED = 32 * 1024 * 1024
_TUNING_VARIABLES = ('MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_',
                     'MALLOC_TOP_PAD_')

cdef bint _installed = False


def install(size_t limit):
    """Keeps freed blocks of up to ``limit`` bytes (at most 2 GiB) for
    reuse. Returns None, or why nothing was changed."""
    global _installed
    if not CFP_GLIBC:
        return 'the C library is not glibc'
    tuned = [name for name in _TUNING_VARIABLES if name in os.environ]
    if 'glibc.malloc.' in os.environ.get('GLIBC_TUNABLES', ''):
        tuned.append('GLIBC_TUNABLES')
    if tuned:
        return 'the environment tunes malloc ({})'.format(', '.join(tuned))
    cdef int value = <int>min(limit, <size_t>INT_MAX)
    if not mallopt(M_MMAP_THRESHOLD, value):
        mallopt(M_MMAP_THRESHOLD, min(value, _MMAP_THRESHOLD_BOUNDED))
    mallopt(M_TRIM_THRESHOLD, value)
    _installed = True
    return None


def uninstall():
    """Sets glibc's thresholds back to their initial values; its raising of
    the mmap threshold stays off (glibc has no way to turn it back on). The
    heap's free top goes back to the system at the next free."""
    global _installed
    if not _installed:
        return
    mallopt(M_MMAP_THRESHOLD, _GLIBC_DEFAULT)
    mallopt(M_TRIM_THRESHOLD, _GLIBC_DEFAULT)
    _installed = False


def installed():
    """Whether install() changed malloc's thresholds."""
    return _installed
