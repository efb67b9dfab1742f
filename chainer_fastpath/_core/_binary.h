/*
 * NumPy's add, subtract, multiply and divide over one run of a broadcast
 * (_ufunc_loop.pyx's ``Binary.call_broadcast``): out[i] = a[i] OP b[i],
 * the operands ``sa`` and ``sb`` bytes apart (0: one item repeated), one
 * IEEE operation per item as NumPy's loops do it (setup.py builds with
 * -ffp-contract=off). Which NaN two NaNs give is the loop's choice, so
 * each returns whether a result is a NaN and the caller leaves those to
 * NumPy. Named cfp_ so that a profile counts them as the arithmetic they
 * replace.
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

/* The run in the four layouts: both contiguous, either one repeated, any
 * strides; contiguous rows the compiler vectorises. */
#define CFP_DEFINE_BINARY_RUN(NAME, T, OP)                                    \
static CFP_CLONES __attribute__((noinline)) int                              \
cfp_binary_##NAME(const char *a, Py_ssize_t sa, const char *b,                \
                  Py_ssize_t sb, T *restrict out, Py_ssize_t n)               \
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
}

CFP_DEFINE_BINARY_RUN(add_f, float, +)
CFP_DEFINE_BINARY_RUN(add_d, double, +)
CFP_DEFINE_BINARY_RUN(subtract_f, float, -)
CFP_DEFINE_BINARY_RUN(subtract_d, double, -)
CFP_DEFINE_BINARY_RUN(multiply_f, float, *)
CFP_DEFINE_BINARY_RUN(multiply_d, double, *)
CFP_DEFINE_BINARY_RUN(divide_f, float, /)
CFP_DEFINE_BINARY_RUN(divide_d, double, /)

#define CFP_BINARY_DISPATCH(SUFFIX, T)                                        \
    switch (op) {                                                             \
    case CFP_BINARY_ADD:                                                      \
        return cfp_binary_add_##SUFFIX(a, sa, b, sb, (T *)out, n);            \
    case CFP_BINARY_SUBTRACT:                                                 \
        return cfp_binary_subtract_##SUFFIX(a, sa, b, sb, (T *)out, n);       \
    case CFP_BINARY_MULTIPLY:                                                 \
        return cfp_binary_multiply_##SUFFIX(a, sa, b, sb, (T *)out, n);       \
    default:                                                                  \
        return cfp_binary_divide_##SUFFIX(a, sa, b, sb, (T *)out, n);         \
    }

/* ``op``'s run for float32 (``single``) or float64 items. */
static int cfp_binary_run(int op, int single, const char *a, Py_ssize_t sa,
                          const char *b, Py_ssize_t sb, char *out,
                          Py_ssize_t n)
{
    if (single)
        CFP_BINARY_DISPATCH(f, float)
    CFP_BINARY_DISPATCH(d, double)
}

#endif
