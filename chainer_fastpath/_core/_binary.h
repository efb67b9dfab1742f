/*
 * NumPy's add, subtract, multiply and divide over a broadcast
 * (_ufunc_loop.pyx's ``Binary.call_broadcast``): out[i] = a[i] OP b[i]
 * over ``m`` merged axes, innermost first, of ``runs[k]`` items each, the
 * operands ``sa[k]`` and ``sb[k]`` bytes apart along axis k (0: one item
 * repeated) and the output ``so[k]``; one IEEE operation per item as
 * NumPy's loops do it (setup.py builds with -ffp-contract=off). Which NaN
 * two NaNs give is the loop's choice, so each returns whether a result is
 * a NaN and the caller leaves those to NumPy. The outer axes are counted
 * here, not by the caller, so a broadcast of short rows (a CRF's
 * label-by-label sums) pays one call, not one per row. Named cfp_ so that
 * a profile counts them as the arithmetic they replace.
 */
#ifndef CHAINER_FASTPATH_BINARY_H
#define CHAINER_FASTPATH_BINARY_H

#include <Python.h>

#include "_clones.h"

#define CFP_BINARY_ADD 0
#define CFP_BINARY_SUBTRACT 1
#define CFP_BINARY_MULTIPLY 2
#define CFP_BINARY_DIVIDE 3

#define CFP_BINARY_LOOP(T, OP, A, B)                                          \
    for (i = 0; i < n; i++) {                                                 \
        T v = (A) OP (B);                                                     \
        nan |= v != v;                                                        \
        out[i] = v;                                                           \
    }

/* One run in the four layouts: both contiguous, either one repeated, any
 * strides; contiguous rows the compiler vectorises. */
#define CFP_DEFINE_BINARY_RUN(NAME, T, OP)                                    \
static inline __attribute__((always_inline)) int                             \
cfp_binary_run_##NAME(const char *a, Py_ssize_t sa, const char *b,            \
                      Py_ssize_t sb, T *restrict out, Py_ssize_t n)           \
{                                                                             \
    Py_ssize_t i;                                                             \
    int nan = 0;                                                              \
    const T *restrict x = (const T *)a;                                       \
    const T *restrict y = (const T *)b;                                       \
    if (sa == (Py_ssize_t)sizeof(T) && sb == (Py_ssize_t)sizeof(T)) {         \
        CFP_BINARY_LOOP(T, OP, x[i], y[i])                                    \
    } else if (sa == 0 && sb == (Py_ssize_t)sizeof(T)) {                      \
        const T s = *x;                                                       \
        CFP_BINARY_LOOP(T, OP, s, y[i])                                       \
    } else if (sa == (Py_ssize_t)sizeof(T) && sb == 0) {                      \
        const T s = *y;                                                       \
        CFP_BINARY_LOOP(T, OP, x[i], s)                                       \
    } else {                                                                  \
        CFP_BINARY_LOOP(T, OP, *(const T *)(a + i * sa),                      \
                        *(const T *)(b + i * sb))                             \
    }                                                                         \
    return nan;                                                               \
}                                                                             \
                                                                              \
static CFP_CLONES __attribute__((noinline)) int                              \
cfp_binary_##NAME(const char *a, const Py_ssize_t *sa, const char *b,         \
                  const Py_ssize_t *sb, char *out, const Py_ssize_t *so,      \
                  const Py_ssize_t *runs, int m)                              \
{                                                                             \
    Py_ssize_t index[32];                                                     \
    int nan = 0, k;                                                           \
    for (k = 0; k < m; k++)                                                   \
        index[k] = 0;                                                         \
    for (;;) {                                                                \
        nan |= cfp_binary_run_##NAME(a, sa[0], b, sb[0], (T *)out, runs[0]);  \
        for (k = 1; k < m; k++) {    /* the next run: count the outer axes */ \
            a += sa[k];                                                       \
            b += sb[k];                                                       \
            out += so[k];                                                     \
            if (++index[k] < runs[k])                                         \
                break;                                                        \
            a -= sa[k] * runs[k];                                             \
            b -= sb[k] * runs[k];                                             \
            out -= so[k] * runs[k];                                           \
            index[k] = 0;                                                     \
        }                                                                     \
        if (k >= m)                                                           \
            return nan;                                                       \
    }                                                                         \
}

CFP_DEFINE_BINARY_RUN(add_f, float, +)
CFP_DEFINE_BINARY_RUN(add_d, double, +)
CFP_DEFINE_BINARY_RUN(subtract_f, float, -)
CFP_DEFINE_BINARY_RUN(subtract_d, double, -)
CFP_DEFINE_BINARY_RUN(multiply_f, float, *)
CFP_DEFINE_BINARY_RUN(multiply_d, double, *)
CFP_DEFINE_BINARY_RUN(divide_f, float, /)
CFP_DEFINE_BINARY_RUN(divide_d, double, /)

#define CFP_BINARY_DISPATCH(SUFFIX)                                           \
    switch (op) {                                                             \
    case CFP_BINARY_ADD:                                                      \
        return cfp_binary_add_##SUFFIX(a, sa, b, sb, out, so, runs, m);       \
    case CFP_BINARY_SUBTRACT:                                                 \
        return cfp_binary_subtract_##SUFFIX(a, sa, b, sb, out, so, runs, m);  \
    case CFP_BINARY_MULTIPLY:                                                 \
        return cfp_binary_multiply_##SUFFIX(a, sa, b, sb, out, so, runs, m);  \
    default:                                                                  \
        return cfp_binary_divide_##SUFFIX(a, sa, b, sb, out, so, runs, m);    \
    }

/* ``op`` over the broadcast, for float32 (``single``) or float64 items;
 * m >= 1 and runs[k] >= 1. */
static int cfp_binary_broadcast(int op, int single, const char *a,
                                const Py_ssize_t *sa, const char *b,
                                const Py_ssize_t *sb, char *out,
                                const Py_ssize_t *so, const Py_ssize_t *runs,
                                int m)
{
    if (single)
        CFP_BINARY_DISPATCH(f)
    CFP_BINARY_DISPATCH(d)
}

#endif
