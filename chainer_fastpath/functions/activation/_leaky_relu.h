/*
 * LeakyReLU's scaling, for leaky_relu.pyx: ``a[cond <= 0] *= s`` in one
 * pass without a branch (the signs of a layer's outputs are as good as
 * random: a branch mispredicts on every other element). Each element is
 * multiplied by s where selected and by 1.0 elsewhere, which is exact and
 * raises no flag but on a signaling NaN; the product is kept where
 * selected, the element's own bits elsewhere. ``cond <= 0`` is read from
 * the bits: no flag, as NumPy's comparison loops raise none. The caller
 * redoes the work the gathered way where a flag was raised.
 */
#ifndef CHAINER_FASTPATH_LEAKY_RELU_H
#define CHAINER_FASTPATH_LEAKY_RELU_H

#include <stdint.h>
#include <string.h>
#include <Python.h>

#define CFP_DEFINE_LEAKY_RELU(SUFFIX, T, U, SIGN, INF, ONE)                   \
static __attribute__((noinline, unused)) void cfp_leaky_relu_blend_##SUFFIX( \
    T *a, const T *cond, Py_ssize_t n, T s)                                   \
{                                                                             \
    Py_ssize_t i;                                                             \
    U s_bits;                                                                 \
    memcpy(&s_bits, &s, sizeof s_bits);                                      \
    for (i = 0; i < n; i++) {                                                 \
        U u, magnitude, selected, factor, product, kept;                      \
        T f, p;                                                               \
        memcpy(&u, &cond[i], sizeof u);                                       \
        magnitude = u & ~(U)SIGN;                                             \
        selected = (U)0 - (U)((magnitude <= (U)INF)                           \
                              & (((u & (U)SIGN) != 0) | (magnitude == 0)));   \
        factor = (s_bits & selected) | ((U)ONE & ~selected);                  \
        memcpy(&f, &factor, sizeof f);                                        \
        p = a[i] * f;                                                         \
        memcpy(&product, &p, sizeof product);                                 \
        memcpy(&kept, &a[i], sizeof kept);                                    \
        kept = (product & selected) | (kept & ~selected);                     \
        memcpy(&a[i], &kept, sizeof kept);                                    \
    }                                                                         \
}

CFP_DEFINE_LEAKY_RELU(f, float, uint32_t, 0x80000000u, 0x7f800000u,
                      0x3f800000u)
CFP_DEFINE_LEAKY_RELU(d, double, uint64_t, 0x8000000000000000u,
                      0x7ff0000000000000u, 0x3ff0000000000000u)

#endif
