/*
 * ReLU's gradient, for relu.pyx: stock's ``gy * (y > 0)``, whose multiply
 * casts the mask to gy's float type, 1.0 or 0.0, so each item is
 * ``gy * 1.0`` or ``gy * 0.0`` (-0.0 for a negative gy, NaN for an infinite
 * or NaN one), one rounding as NumPy's loop. The test is quiet, as NumPy's
 * comparison loops are: a NaN in y compares false and raises no flag. It is
 * made on the bits, without a branch (the signs of a layer's outputs are
 * as good as random): y > 0 exactly where the bits, unsigned, lie in
 * [1, bits of +inf], the positive numbers.
 */
#ifndef CHAINER_FASTPATH_RELU_H
#define CHAINER_FASTPATH_RELU_H

#include <stdint.h>
#include <string.h>
#include <Python.h>

/* 1.0 where v > 0, else 0.0 */
static inline float cfp_relu_mask_f(float v)
{
    uint32_t bits, one;
    float mask;
    memcpy(&bits, &v, sizeof bits);
    one = (0u - (uint32_t)(bits - 1u < 0x7f800000u)) & 0x3f800000u;
    memcpy(&mask, &one, sizeof mask);
    return mask;
}

static inline double cfp_relu_mask_d(double v)
{
    uint64_t bits, one;
    double mask;
    memcpy(&bits, &v, sizeof bits);
    one = (0u - (uint64_t)(bits - 1u < 0x7ff0000000000000u))
        & 0x3ff0000000000000u;
    memcpy(&mask, &one, sizeof mask);
    return mask;
}

#define CFP_DEFINE_RELU_GRAD(SUFFIX, T)                                       \
static __attribute__((noinline, unused)) void cfp_relu_grad_##SUFFIX(        \
    const T *gy, const T *y, Py_ssize_t n, T *gx)                             \
{                                                                             \
    Py_ssize_t i;                                                             \
    for (i = 0; i < n; i++)                                                   \
        gx[i] = gy[i] * cfp_relu_mask_##SUFFIX(y[i]);                         \
}

/* The same over arrays of any strides (in bytes): nd axes of lengths
 * dims, the last one innermost. */
#define CFP_DEFINE_RELU_GRAD_STRIDED(SUFFIX, T)                               \
static __attribute__((noinline, unused)) void                                 \
cfp_relu_grad_strided_##SUFFIX(                                               \
    int nd, const Py_ssize_t *dims, const char *gy, const Py_ssize_t *sgy,    \
    const char *y, const Py_ssize_t *sy, char *gx, const Py_ssize_t *sgx)     \
{                                                                             \
    Py_ssize_t index[32] = {0};                                               \
    const Py_ssize_t n = dims[nd - 1];                                        \
    const Py_ssize_t a = sgy[nd - 1], b = sy[nd - 1], c = sgx[nd - 1];        \
    Py_ssize_t i;                                                             \
    int k;                                                                    \
    for (;;) {                                                                \
        for (i = 0; i < n; i++) {                                             \
            *(T *)(gx + i * c) = *(const T *)(gy + i * a)                     \
                * cfp_relu_mask_##SUFFIX(*(const T *)(y + i * b));            \
        }                                                                     \
        for (k = nd - 2; k >= 0; k--) {                                       \
            gy += sgy[k];                                                     \
            y += sy[k];                                                       \
            gx += sgx[k];                                                     \
            if (++index[k] < dims[k])                                         \
                break;                                                        \
            gy -= sgy[k] * dims[k];                                           \
            y -= sy[k] * dims[k];                                             \
            gx -= sgx[k] * dims[k];                                           \
            index[k] = 0;                                                     \
        }                                                                     \
        if (k < 0)                                                            \
            return;                                                           \
    }                                                                         \
}

CFP_DEFINE_RELU_GRAD(f, float)
CFP_DEFINE_RELU_GRAD(d, double)
CFP_DEFINE_RELU_GRAD_STRIDED(f, float)
CFP_DEFINE_RELU_GRAD_STRIDED(d, double)

#endif
