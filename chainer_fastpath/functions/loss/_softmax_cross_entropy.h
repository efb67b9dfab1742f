/*
 * The passes of softmax_cross_entropy.pyx's kernels over (rows, cols)
 * C-contiguous arrays: stock's NumPy expressions of
 * SoftmaxCrossEntropy.forward_cpu and of its gradient's forward_cpu,
 * operand by operand, in its order (constants of the array's type; no FMA,
 * setup.py). exp and log stay NumPy's. `valid` holds C ints, 1 where a
 * row's label is not the ignore label; `index` that label's column (0 for
 * an ignored row).
 */
#ifndef CHAINER_FASTPATH_SOFTMAX_CROSS_ENTROPY_H
#define CHAINER_FASTPATH_SOFTMAX_CROSS_ENTROPY_H

#include <Python.h>

#include "_clones.h"

/* m = x.max(axis=1); e = x - m, for an x without NaN (a NaN reaches its
 * row's sum of exp(e), where the caller finds it). Four running maxima
 * free of branches let the compiler use max instructions. Where zeros of
 * both signs tie for a row's maximum, which one NumPy keeps depends on the
 * vector width its loop was dispatched to: returns whether a row's maximum
 * is a zero, for the caller to take NumPy's (cfp_sce_zero_maxima). */
#define CFP_DEFINE_SCE_SHIFTED(SUFFIX, T)                                     \
static CFP_CLONES __attribute__((noinline, unused)) int                      \
cfp_sce_shifted_##SUFFIX(const T *x, T *e, T *m, Py_ssize_t rows,             \
                         Py_ssize_t cols)                                     \
{                                                                             \
    Py_ssize_t i, j;                                                          \
    int zero = 0;                                                             \
    for (i = 0; i < rows; i++, x += cols, e += cols) {                        \
        T t0 = x[0], t1 = x[0], t2 = x[0], t3 = x[0];                         \
        for (j = 0; j + 4 <= cols; j += 4) {                                  \
            t0 = x[j] > t0 ? x[j] : t0;                                       \
            t1 = x[j + 1] > t1 ? x[j + 1] : t1;                               \
            t2 = x[j + 2] > t2 ? x[j + 2] : t2;                               \
            t3 = x[j + 3] > t3 ? x[j + 3] : t3;                               \
        }                                                                     \
        for (; j < cols; j++)                                                 \
            t0 = x[j] > t0 ? x[j] : t0;                                       \
        t0 = t1 > t0 ? t1 : t0;                                               \
        t2 = t3 > t2 ? t3 : t2;                                               \
        t0 = t2 > t0 ? t2 : t0;                                               \
        for (j = 0; j < cols; j++)                                            \
            e[j] = x[j] - t0;                                                 \
        m[i] = t0;                                                            \
        zero |= t0 == 0;                                                      \
    }                                                                         \
    return zero;                                                              \
}

/* Rows whose maximum is a zero take NumPy's, numpy_m, and e = x - m
 * again. */
#define CFP_DEFINE_SCE_ZERO_MAXIMA(SUFFIX, T)                                 \
static __attribute__((noinline, unused)) void cfp_sce_zero_maxima_##SUFFIX(  \
    const T *x, T *e, T *m, const T *numpy_m, Py_ssize_t rows,                \
    Py_ssize_t cols)                                                          \
{                                                                             \
    Py_ssize_t i, j;                                                          \
    for (i = 0; i < rows; i++, x += cols, e += cols) {                        \
        if (m[i] != 0)                                                        \
            continue;                                                         \
        m[i] = numpy_m[i];                                                    \
        for (j = 0; j < cols; j++)                                            \
            e[j] = x[j] - m[i];                                               \
    }                                                                         \
}

/* log_y = x - (m + log_s), row by row; then
 * log_p = log_y[arange, index] * valid, valid as the array's 1 or 0. */
#define CFP_DEFINE_SCE_LOG_SOFTMAX(SUFFIX, T)                                 \
static CFP_CLONES __attribute__((noinline, unused)) void                     \
cfp_sce_log_softmax_##SUFFIX(const T *x, const T *m, const T *log_s,          \
                             T *log_y, const Py_ssize_t *index,               \
                             const int *valid, T *log_p, Py_ssize_t rows,     \
                             Py_ssize_t cols)                                 \
{                                                                             \
    const T one = 1, zero = 0;                                                \
    Py_ssize_t i, j;                                                          \
    for (i = 0; i < rows; i++) {                                              \
        const T z = m[i] + log_s[i];                                          \
        for (j = 0; j < cols; j++)                                            \
            log_y[i * cols + j] = x[i * cols + j] - z;                        \
    }                                                                         \
    for (i = 0; i < rows; i++)                                                \
        log_p[i] = log_y[i * cols + index[i]] * (valid[i] ? one : zero);      \
}

/* gx = y.copy(); gx[arange, index] -= 1; gx *= valid[:, None];
 * gx *= g, g one scalar (step 0) or gloss[:, None] (step 1). The row is
 * computed as if no column were the label's, a loop the compiler
 * vectorises, then the label's column again. The first value of that
 * column may raise a flag stock's would not (0 * inf, an underflow); the
 * caller then only takes the NumPy calls. */
#define CFP_DEFINE_SCE_GRAD_ROWS(SUFFIX, T)                                   \
static CFP_CLONES __attribute__((noinline, unused)) void                     \
cfp_sce_grad_rows_##SUFFIX(const T *y, T *gx, const Py_ssize_t *index,        \
                           const int *valid, const T *gloss,                  \
                           Py_ssize_t step, Py_ssize_t rows, Py_ssize_t cols) \
{                                                                             \
    const T one = 1, zero = 0;                                                \
    Py_ssize_t i, j, k;                                                       \
    for (i = 0; i < rows; i++, y += cols, gx += cols) {                       \
        const T w = valid[i] ? one : zero;                                    \
        const T g = gloss[i * step];                                          \
        for (j = 0; j < cols; j++)                                            \
            gx[j] = y[j] * w * g;                                             \
        k = index[i];                                                         \
        gx[k] = (y[k] - one) * w * g;                                         \
    }                                                                         \
}

CFP_DEFINE_SCE_SHIFTED(f, float)
CFP_DEFINE_SCE_SHIFTED(d, double)
CFP_DEFINE_SCE_ZERO_MAXIMA(f, float)
CFP_DEFINE_SCE_ZERO_MAXIMA(d, double)
CFP_DEFINE_SCE_LOG_SOFTMAX(f, float)
CFP_DEFINE_SCE_LOG_SOFTMAX(d, double)
CFP_DEFINE_SCE_GRAD_ROWS(f, float)
CFP_DEFINE_SCE_GRAD_ROWS(d, double)

#endif
