/*
 * The floating-point flags of SSE arithmetic: cfp_sse_flags tests them,
 * cfp_clear_sse_flags clears them.
 *
 * fetestexcept reads the x87 status word as well as MXCSR: on x86-64 the
 * x87 read (fnstsw) and the call take about 12 ns, against nothing
 * measurable for MXCSR alone.
 *
 * Arithmetic on float and double in C is SSE or AVX on x86-64, whose flags
 * are in MXCSR alone. The x87 status word holds those of long double
 * arithmetic and those that glibc's feraiseexcept sets for overflow and
 * underflow, which is how NumPy raises them where it sets flags itself
 * (its float16 conversions, its SIMD exp). So these are for C code that,
 * between the clear and the test, does its own float and double arithmetic
 * and raises flags by cfp_raise_sse_flags only: no NumPy loop, no libm
 * call. Elsewhere they are the <fenv.h> functions.
 */
#ifndef CHAINER_FASTPATH_FPE_H
#define CHAINER_FASTPATH_FPE_H

#include <fenv.h>

#if defined(__x86_64__) && defined(__SSE__)
#include <xmmintrin.h>

/* The FE_ flags are the MXCSR exception bits. */
_Static_assert(FE_INVALID == 0x01 && FE_DIVBYZERO == 0x04
               && FE_OVERFLOW == 0x08 && FE_UNDERFLOW == 0x10,
               "FE_ flags are not MXCSR's bits");

static inline int cfp_sse_flags(int flags)
{
    return (int)(_mm_getcsr() & (unsigned int)flags);
}

/* Rewrites MXCSR only where one of the flags is set. */
static inline void cfp_clear_sse_flags(int flags)
{
    unsigned int csr = _mm_getcsr();
    if (csr & (unsigned int)flags) {
        _mm_setcsr(csr & ~(unsigned int)flags);
    }
}

/* Sets the flags as an SSE operation raising them would. */
static inline void cfp_raise_sse_flags(int flags)
{
    _mm_setcsr(_mm_getcsr() | (unsigned int)flags);
}

#else

static inline int cfp_sse_flags(int flags)
{
    return fetestexcept(flags);
}

static inline void cfp_clear_sse_flags(int flags)
{
    if (fetestexcept(flags)) {
        feclearexcept(flags);
    }
}

static inline void cfp_raise_sse_flags(int flags)
{
    feraiseexcept(flags);
}

#endif

#endif
