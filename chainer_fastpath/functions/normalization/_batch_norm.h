/*
 * Batch normalization's passes over x and gy, for batch_normalization.pyx:
 * what stock's NumPy calls compute, for C-contiguous arrays of one float
 * type laid out (n, c, hw) with the statistics per channel c.
 *
 * The sums are NumPy's own: ``add.reduce(a, axis=(0, 2, ...))`` of such an
 * array (c >= 2, hw no longer than NumPy's buffer) runs the add loop over
 * one row of hw items at a time, n outermost, into an accumulator that
 * starts at +0.0: ``acc[k] += pairwise_sum(row)`` (or, hw == 1, the
 * elementwise ``acc[k] = acc[k] + a[i, k]`` over the c channels). The
 * kernels call that same loop, ``add`` with its ``data``, on the same rows
 * in the same order. A sum of computed values (the squared deviations of
 * the variance, the products of ggamma) is NumPy's sum of the array stock
 * materializes: each block of c*hw values is written to ``scratch`` with
 * the operations stock's ufuncs apply, one rounding each, then summed.
 *
 * The elementwise formulas are stock's, operation by operation:
 *
 *   x_hat = (x - mean) * inv_std
 *   y     = x_hat * gamma + beta
 *   gx    = (gamma * inv_std) * (gy - (x_hat * ggamma + gbeta) * inv_m)
 *
 * The file is compiled with -ffp-contract=off: no product is fused into a
 * sum, so every operation rounds as NumPy's does.
 */
#ifndef CHAINER_FASTPATH_BATCH_NORM_H
#define CHAINER_FASTPATH_BATCH_NORM_H

#include <string.h>
#include <Python.h>

typedef void (*cfp_bn_loop)(char **, const Py_ssize_t *, const Py_ssize_t *,
                            void *);

/* acc[k] += add.reduce(block[k, :]) for the c rows of hw items of one
 * n-block, as NumPy's reduction runs it. */
static inline void cfp_bn_add_block(cfp_bn_loop add, void *data, char *acc,
                                    const char *block, Py_ssize_t c,
                                    Py_ssize_t hw, Py_ssize_t itemsize)
{
    char *args[3];
    Py_ssize_t steps[3];
    Py_ssize_t k;
    if (hw == 1) {
        /* NumPy drops the unit axes: one elementwise loop over c. */
        args[0] = args[2] = acc;
        args[1] = (char *)block;
        steps[0] = steps[1] = steps[2] = itemsize;
        add(args, &c, steps, data);
        return;
    }
    steps[0] = steps[2] = 0;
    steps[1] = itemsize;
    for (k = 0; k < c; k++) {
        args[0] = args[2] = acc + k * itemsize;
        args[1] = (char *)block + k * hw * itemsize;
        add(args, &hw, steps, data);
    }
}

#define CFP_DEFINE_BATCH_NORM(SUFFIX, T)                                      \
/* sums = add.reduce(x, axis=(0, 2, ...)) */                                  \
static __attribute__((noinline, unused)) void cfp_bn_sums_##SUFFIX(          \
    cfp_bn_loop add, void *data, const T *x, Py_ssize_t n, Py_ssize_t c,      \
    Py_ssize_t hw, T *sums)                                                   \
{                                                                             \
    Py_ssize_t i;                                                             \
    memset(sums, 0, c * sizeof(T));                                           \
    for (i = 0; i < n; i++)                                                   \
        cfp_bn_add_block(add, data, (char *)sums,                             \
                         (const char *)(x + i * c * hw), c, hw, sizeof(T));   \
}                                                                             \
                                                                              \
/* sums = add.reduce(d * d, axis) where d = x - mean */                       \
static __attribute__((noinline, unused)) void cfp_bn_sq_dev_sums_##SUFFIX(   \
    cfp_bn_loop add, void *data, const T *x, const T *mean, Py_ssize_t n,     \
    Py_ssize_t c, Py_ssize_t hw, T *sums, T *scratch)                         \
{                                                                             \
    Py_ssize_t i, k, j;                                                       \
    memset(sums, 0, c * sizeof(T));                                           \
    for (i = 0; i < n; i++) {                                                 \
        const T *block = x + i * c * hw;                                      \
        for (k = 0; k < c; k++) {                                             \
            const T m = mean[k];                                              \
            for (j = 0; j < hw; j++) {                                        \
                const T d = block[k * hw + j] - m;                            \
                scratch[k * hw + j] = d * d;                                  \
            }                                                                 \
        }                                                                     \
        cfp_bn_add_block(add, data, (char *)sums, (const char *)scratch, c,   \
                         hw, sizeof(T));                                      \
    }                                                                         \
}                                                                             \
                                                                              \
/* y = x_hat * gamma + beta */                                                \
static __attribute__((noinline, unused)) void cfp_bn_apply_##SUFFIX(         \
    const T *x, const T *mean, const T *inv_std, const T *gamma,              \
    const T *beta, Py_ssize_t n, Py_ssize_t c, Py_ssize_t hw, T *y)           \
{                                                                             \
    Py_ssize_t i, k, j;                                                       \
    for (i = 0; i < n; i++) {                                                 \
        for (k = 0; k < c; k++) {                                             \
            const T m = mean[k], s = inv_std[k], g = gamma[k], b = beta[k];   \
            const T *row = x + (i * c + k) * hw;                              \
            T *out = y + (i * c + k) * hw;                                    \
            for (j = 0; j < hw; j++) {                                        \
                const T x_hat = (row[j] - m) * s;                             \
                out[j] = x_hat * g + b;                                       \
            }                                                                 \
        }                                                                     \
    }                                                                         \
}                                                                             \
                                                                              \
/* gbeta = add.reduce(gy, axis), ggamma = add.reduce(gy * x_hat, axis) */     \
static __attribute__((noinline, unused)) void cfp_bn_grad_sums_##SUFFIX(     \
    cfp_bn_loop add, void *data, const T *x, const T *gy, const T *mean,      \
    const T *inv_std, Py_ssize_t n, Py_ssize_t c, Py_ssize_t hw, T *ggamma,   \
    T *gbeta, T *scratch)                                                     \
{                                                                             \
    Py_ssize_t i, k, j;                                                       \
    memset(ggamma, 0, c * sizeof(T));                                         \
    memset(gbeta, 0, c * sizeof(T));                                          \
    for (i = 0; i < n; i++) {                                                 \
        const T *xb = x + i * c * hw, *gb = gy + i * c * hw;                  \
        cfp_bn_add_block(add, data, (char *)gbeta, (const char *)gb, c, hw,   \
                         sizeof(T));                                          \
        for (k = 0; k < c; k++) {                                             \
            const T m = mean[k], s = inv_std[k];                              \
            for (j = 0; j < hw; j++) {                                        \
                const T x_hat = (xb[k * hw + j] - m) * s;                     \
                scratch[k * hw + j] = gb[k * hw + j] * x_hat;                 \
            }                                                                 \
        }                                                                     \
        cfp_bn_add_block(add, data, (char *)ggamma, (const char *)scratch,    \
                         c, hw, sizeof(T));                                   \
    }                                                                         \
}                                                                             \
                                                                              \
/* gx = (gamma * inv_std) * (gy - (x_hat * ggamma + gbeta) * inv_m) */        \
static __attribute__((noinline, unused)) void cfp_bn_grad_x_##SUFFIX(        \
    const T *x, const T *gy, const T *mean, const T *inv_std,                 \
    const T *gamma, const T *ggamma, const T *gbeta, T inv_m, Py_ssize_t n,   \
    Py_ssize_t c, Py_ssize_t hw, T *gx)                                       \
{                                                                             \
    Py_ssize_t i, k, j;                                                       \
    for (i = 0; i < n; i++) {                                                 \
        for (k = 0; k < c; k++) {                                             \
            const T m = mean[k], s = inv_std[k], coef = gamma[k] * s;         \
            const T gg = ggamma[k], gb = gbeta[k];                            \
            const Py_ssize_t at = (i * c + k) * hw;                           \
            for (j = 0; j < hw; j++) {                                        \
                const T x_hat = (x[at + j] - m) * s;                          \
                const T t = (x_hat * gg + gb) * inv_m;                        \
                gx[at + j] = coef * (gy[at + j] - t);                         \
            }                                                                 \
        }                                                                     \
    }                                                                         \
}

CFP_DEFINE_BATCH_NORM(f, float)
CFP_DEFINE_BATCH_NORM(d, double)

#endif
