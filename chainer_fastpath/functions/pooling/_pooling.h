/*
 * Pooling windows of an (n, c, h, w) image, for max_pooling_nd.pyx and
 * average_pooling_2d.pyx: what stock computes from im2col_cpu's or
 * im2col_nd_cpu's patches, without the padded copy of the image.
 *
 * Window (oy, ox) covers image rows oy*sy - ph + ky and columns
 * ox*sx - pw + kx (ky < kh, kx < kw); a position outside the image is
 * stock's padding (-inf for max pooling, +0.0 for average pooling), and
 * every position is range-tested before it is read. k = ky*kw + kx is a
 * position's index in its window, as in stock's argmax.
 *
 * src strides are in bytes; geometry is {kh, kw, sy, sx, ph, pw, oh, ow}.
 * The callers check that every value is a plain int in [0, 2**31) (kernels
 * and strides >= 1): no product of two of them overflows Py_ssize_t.
 */
#ifndef CHAINER_FASTPATH_POOLING_H
#define CHAINER_FASTPATH_POOLING_H

#include <math.h>
#include <stdint.h>
#include <Python.h>

#define CFP_POOL_GEOMETRY                                                     \
    const Py_ssize_t N = shape[0], C = shape[1], H = shape[2], W = shape[3];  \
    const Py_ssize_t kh = geometry[0], kw = geometry[1];                      \
    const Py_ssize_t sy = geometry[2], sx = geometry[3];                      \
    const Py_ssize_t ph = geometry[4], pw = geometry[5];                      \
    const Py_ssize_t oh = geometry[6], ow = geometry[7];                      \
    (void)N; (void)C; (void)H; (void)W; (void)kh; (void)kw; (void)sy;         \
    (void)sx; (void)ph; (void)pw; (void)oh; (void)ow;

/* Half bits ordered as their values (NaNs excluded): both zeros are 0. */
#define CFP_HALF_KEY(h) (((h) & 0x8000u) ? -(int)((h) & 0x7fffu)            \
                                         : (int)((h) & 0x7fffu))
#define CFP_HALF_NAN(h) (((h) & 0x7fffu) > 0x7c00u)
#define CFP_HALF_SIGN(h) ((h) >> 15)
#define CFP_REAL_KEY(v) (v)
#define CFP_REAL_NAN(v) ((v) != (v))          /* a quiet compare */
#define CFP_REAL_SIGN(v) signbit(v)

/*
 * Max pooling (MaxPoolingND.forward_cpu for two spatial axes): y, the
 * largest item of each window, and idx, the first k at which it is (what
 * col.max(axis=2) and col.argmax(axis=2) give), both C-ordered
 * (n, c, oh, ow). Only comparisons, on numbers: a window with a NaN, or
 * whose maximum is a zero that occurs with both signs (which of them
 * NumPy's max keeps is its loop's), returns 1 before anything else is
 * read, and the caller leaves the work to stock. Returns 0 otherwise.
 */
#define CFP_DEFINE_MAX_POOL(NAME, S, KEY, ISNAN, SIGN, NEG_INF)               \
static __attribute__((noinline, unused)) int NAME(                            \
    S *y, int64_t *idx, const char *src, const Py_ssize_t *shape,             \
    const Py_ssize_t *strides, const Py_ssize_t *geometry)                    \
{                                                                             \
    CFP_POOL_GEOMETRY                                                         \
    Py_ssize_t n, c, oy, ox, ky, kx;                                          \
    for (n = 0; n < N; n++) {                                                 \
        for (c = 0; c < C; c++) {                                             \
            const char *plane = src + n * strides[0] + c * strides[1];        \
            for (oy = 0; oy < oh; oy++) {                                     \
                for (ox = 0; ox < ow; ox++) {                                 \
                    S best = NEG_INF;                                         \
                    int64_t at = 0, k = 0;                                    \
                    int tie = 0;                                              \
                    for (ky = 0; ky < kh; ky++) {                             \
                        const Py_ssize_t iy = oy * sy - ph + ky;              \
                        const int row = iy >= 0 && iy < H;                    \
                        for (kx = 0; kx < kw; kx++, k++) {                    \
                            const Py_ssize_t ix = ox * sx - pw + kx;          \
                            const S v = (row && ix >= 0 && ix < W)            \
                                ? *(const S *)(plane + iy * strides[2]        \
                                               + ix * strides[3])             \
                                : NEG_INF;                                    \
                            if (ISNAN(v))                                     \
                                return 1;                                     \
                            if (k == 0 || KEY(v) > KEY(best)) {               \
                                best = v;                                     \
                                at = k;                                       \
                                tie = 0;                                      \
                            } else if (KEY(v) == KEY(best)                    \
                                       && SIGN(v) != SIGN(best)) {            \
                                tie = 1;                                      \
                            }                                                 \
                        }                                                     \
                    }                                                         \
                    if (tie)                                                  \
                        return 1;                                             \
                    *y++ = best;                                              \
                    *idx++ = at;                                              \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    return 0;                                                                 \
}

CFP_DEFINE_MAX_POOL(cfp_max_pool_h, uint16_t, CFP_HALF_KEY, CFP_HALF_NAN,
                    CFP_HALF_SIGN, 0xfc00u)
CFP_DEFINE_MAX_POOL(cfp_max_pool_f, float, CFP_REAL_KEY, CFP_REAL_NAN,
                    CFP_REAL_SIGN, -INFINITY)
CFP_DEFINE_MAX_POOL(cfp_max_pool_d, double, CFP_REAL_KEY, CFP_REAL_NAN,
                    CFP_REAL_SIGN, -INFINITY)

/*
 * The item of each window at idx (MaxPoolingNDWithIndexes.forward_cpu for
 * two spatial axes): y[n, c, oy, ox] = window[idx[n, c, oy, ox]], -inf in
 * the padding; copies, bit for bit. idx is read through its byte strides
 * istr; returns 1, before any read by it, at an index outside [0, kh*kw)
 * (stock's fancy index wraps or raises), else 0.
 */
#define CFP_DEFINE_MAX_GATHER(NAME, S, NEG_INF)                               \
static __attribute__((noinline, unused)) int NAME(                            \
    S *y, const char *idx, const Py_ssize_t *istr, const char *src,           \
    const Py_ssize_t *shape, const Py_ssize_t *strides,                       \
    const Py_ssize_t *geometry)                                               \
{                                                                             \
    CFP_POOL_GEOMETRY                                                         \
    Py_ssize_t n, c, oy, ox;                                                  \
    for (n = 0; n < N; n++) {                                                 \
        for (c = 0; c < C; c++) {                                             \
            const char *plane = src + n * strides[0] + c * strides[1];        \
            for (oy = 0; oy < oh; oy++) {                                     \
                const char *irow = idx + n * istr[0] + c * istr[1]            \
                    + oy * istr[2];                                           \
                for (ox = 0; ox < ow; ox++) {                                 \
                    const int64_t k = *(const int64_t *)(irow + ox * istr[3]);\
                    if (k < 0 || k >= kh * kw)                                \
                        return 1;                                             \
                    const Py_ssize_t iy = oy * sy - ph + k / kw;              \
                    const Py_ssize_t ix = ox * sx - pw + k % kw;              \
                    *y++ = (iy >= 0 && iy < H && ix >= 0 && ix < W)           \
                        ? *(const S *)(plane + iy * strides[2]                \
                                       + ix * strides[3])                     \
                        : NEG_INF;                                            \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    return 0;                                                                 \
}

CFP_DEFINE_MAX_GATHER(cfp_max_gather_h, uint16_t, 0xfc00u)
CFP_DEFINE_MAX_GATHER(cfp_max_gather_f, float, -INFINITY)
CFP_DEFINE_MAX_GATHER(cfp_max_gather_d, double, -INFINITY)

/*
 * The max pooling gradient (MaxPoolingNDGrad.forward_cpu for two spatial
 * axes) into the padded image img, C-ordered (N, C, hp, wp): each (n, c)
 * plane zeroed (+0.0), then gy[n, c, oy, ox] added at its window's
 * position idx[n, c, oy, ox]. Stock adds its whole patch array, zeros
 * included, for ky, then kx; an element's additions other than of +0.0
 * come from windows in descending (oy, ox), which is the order here, and
 * adding +0.0 to a sum that started at +0.0 changes no bit. shape is
 * gy's {N, C, oh, ow}; gy and idx are read through their byte strides.
 * Returns 2, before any write by it, at an index outside [0, kh*kw); 1
 * where the image holds a NaN (which of two NaNs an add keeps is left to
 * stock's loop); else 0. The caller checks that every position lies in
 * the padded image.
 *
 * geometry is {kh, kw, sy, sx}.
 */
#define CFP_DEFINE_MAX_SCATTER(NAME, T)                                       \
static __attribute__((noinline, unused)) int NAME(                            \
    T *img, Py_ssize_t hp, Py_ssize_t wp, const char *gy,                     \
    const Py_ssize_t *gstr, const char *idx, const Py_ssize_t *istr,          \
    const Py_ssize_t *shape, const Py_ssize_t *geometry)                      \
{                                                                             \
    const Py_ssize_t N = shape[0], C = shape[1];                              \
    const Py_ssize_t oh = shape[2], ow = shape[3];                            \
    const Py_ssize_t kh = geometry[0], kw = geometry[1];                      \
    const Py_ssize_t sy = geometry[2], sx = geometry[3];                      \
    Py_ssize_t n, c, oy, ox, i;                                               \
    int nan = 0;                                                              \
    for (n = 0; n < N; n++) {                                                 \
        for (c = 0; c < C; c++) {                                             \
            T *plane = img + (n * C + c) * hp * wp;                           \
            for (i = 0; i < hp * wp; i++)                                     \
                plane[i] = 0;                                                 \
            for (oy = oh - 1; oy >= 0; oy--) {                                \
                const char *grow = gy + n * gstr[0] + c * gstr[1]             \
                    + oy * gstr[2];                                           \
                const char *irow = idx + n * istr[0] + c * istr[1]            \
                    + oy * istr[2];                                           \
                for (ox = ow - 1; ox >= 0; ox--) {                            \
                    const int64_t k = *(const int64_t *)(irow + ox * istr[3]);\
                    if (k < 0 || k >= kh * kw)                                \
                        return 2;                                             \
                    plane[(oy * sy + k / kw) * wp + ox * sx + k % kw] +=      \
                        *(const T *)(grow + ox * gstr[3]);                    \
                }                                                             \
            }                                                                 \
            for (i = 0; i < hp * wp; i++)   /* quiet compares */              \
                nan |= plane[i] != plane[i];                                  \
        }                                                                     \
    }                                                                         \
    return nan;                                                               \
}

CFP_DEFINE_MAX_SCATTER(cfp_max_scatter_f, float)
CFP_DEFINE_MAX_SCATTER(cfp_max_scatter_d, double)

/*
 * The same for float16 where windows do not overlap (sy >= kh, sx >= kw):
 * each position gets at most one addition, +0.0 + g, which NumPy makes in
 * float (exact) and rounds back to g, or to +0.0 for -0.0. Returns as
 * above (a NaN item of gy, 1).
 */
static __attribute__((noinline, unused)) int cfp_max_scatter_h(
    uint16_t *img, Py_ssize_t hp, Py_ssize_t wp, const char *gy,
    const Py_ssize_t *gstr, const char *idx, const Py_ssize_t *istr,
    const Py_ssize_t *shape, const Py_ssize_t *geometry)
{
    const Py_ssize_t N = shape[0], C = shape[1];
    const Py_ssize_t oh = shape[2], ow = shape[3];
    const Py_ssize_t kh = geometry[0], kw = geometry[1];
    const Py_ssize_t sy = geometry[2], sx = geometry[3];
    Py_ssize_t n, c, oy, ox, i;
    int nan = 0;
    for (n = 0; n < N; n++) {
        for (c = 0; c < C; c++) {
            uint16_t *plane = img + (n * C + c) * hp * wp;
            for (i = 0; i < hp * wp; i++)
                plane[i] = 0;
            for (oy = 0; oy < oh; oy++) {
                const char *grow = gy + n * gstr[0] + c * gstr[1]
                    + oy * gstr[2];
                const char *irow = idx + n * istr[0] + c * istr[1]
                    + oy * istr[2];
                for (ox = 0; ox < ow; ox++) {
                    const int64_t k = *(const int64_t *)(irow + ox * istr[3]);
                    const uint16_t g = *(const uint16_t *)(grow
                                                          + ox * gstr[3]);
                    if (k < 0 || k >= kh * kw)
                        return 2;
                    nan |= CFP_HALF_NAN(g);
                    plane[(oy * sy + k / kw) * wp + ox * sx + k % kw] =
                        (g & 0x7fffu) ? g : 0;
                }
            }
        }
    }
    return nan;
}

/*
 * Average pooling's patches as im2col_cpu lays them out, C-ordered
 * (n, c, kh, kw, oh, ow), +0.0 (all bits clear) in the padding: copies, bit
 * for bit, for the caller to take stock's mean of.
 */
#define CFP_DEFINE_AVG_PATCHES(NAME, S)                                       \
static __attribute__((noinline, unused)) void NAME(                           \
    S *dst, const char *src, const Py_ssize_t *shape,                         \
    const Py_ssize_t *strides, const Py_ssize_t *geometry)                    \
{                                                                             \
    CFP_POOL_GEOMETRY                                                         \
    Py_ssize_t n, c, ky, kx, oy, ox;                                          \
    for (n = 0; n < N; n++) {                                                 \
        for (c = 0; c < C; c++) {                                             \
            const char *plane = src + n * strides[0] + c * strides[1];        \
            for (ky = 0; ky < kh; ky++) {                                     \
                for (kx = 0; kx < kw; kx++) {                                 \
                    for (oy = 0; oy < oh; oy++) {                             \
                        const Py_ssize_t iy = oy * sy - ph + ky;              \
                        const int row = iy >= 0 && iy < H;                    \
                        for (ox = 0; ox < ow; ox++) {                         \
                            const Py_ssize_t ix = ox * sx - pw + kx;          \
                            *dst++ = (row && ix >= 0 && ix < W)               \
                                ? *(const S *)(plane + iy * strides[2]        \
                                               + ix * strides[3])             \
                                : 0;                                          \
                        }                                                     \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
}

CFP_DEFINE_AVG_PATCHES(cfp_avg_patches_2, uint16_t)
CFP_DEFINE_AVG_PATCHES(cfp_avg_patches_4, uint32_t)
CFP_DEFINE_AVG_PATCHES(cfp_avg_patches_8, uint64_t)

/*
 * The average pooling gradient (AveragePooling2DGrad.forward_cpu) into the
 * padded image img, C-ordered (N, C, hp, wp): as stock's col2im_cpu of
 * gy tiled over the kernel, each plane zeroed (+0.0), then for ky, then kx,
 *
 *   img[n, c, ky + oy*sy, kx + ox*sx] += gy[n, c, oy, ox]
 *
 * (the same additions in the same order, element by element), then the
 * image's (h, w) interior at (ph, pw) divided by kh*kw, as stock's
 * ``gx /= kh * kw`` divides its view. shape is gy's {N, C, oh, ow}, read
 * through its byte strides gstr. Returns 1 where the image holds a NaN
 * (see above), else 0. The caller checks that every position lies in the
 * padded image.
 *
 * geometry is {kh, kw, sy, sx, ph, pw, h, w}.
 */
#define CFP_DEFINE_AVG_SCATTER(NAME, T)                                       \
static __attribute__((noinline, unused)) int NAME(                            \
    T *img, Py_ssize_t hp, Py_ssize_t wp, const char *gy,                     \
    const Py_ssize_t *gstr, const Py_ssize_t *shape,                          \
    const Py_ssize_t *geometry)                                               \
{                                                                             \
    const Py_ssize_t N = shape[0], C = shape[1];                              \
    const Py_ssize_t oh = shape[2], ow = shape[3];                            \
    const Py_ssize_t kh = geometry[0], kw = geometry[1];                      \
    const Py_ssize_t sy = geometry[2], sx = geometry[3];                      \
    const Py_ssize_t ph = geometry[4], pw = geometry[5];                      \
    const Py_ssize_t h = geometry[6], w = geometry[7];                        \
    const T kk = (T)(kh * kw);                                                \
    Py_ssize_t n, c, ky, kx, oy, ox, i;                                       \
    int nan = 0;                                                              \
    for (n = 0; n < N; n++) {                                                 \
        for (c = 0; c < C; c++) {                                             \
            T *plane = img + (n * C + c) * hp * wp;                           \
            const char *g = gy + n * gstr[0] + c * gstr[1];                   \
            for (i = 0; i < hp * wp; i++)                                     \
                plane[i] = 0;                                                 \
            for (ky = 0; ky < kh; ky++) {                                     \
                for (kx = 0; kx < kw; kx++) {                                 \
                    for (oy = 0; oy < oh; oy++) {                             \
                        T *row = plane + (ky + oy * sy) * wp + kx;            \
                        const char *grow = g + oy * gstr[2];                  \
                        for (ox = 0; ox < ow; ox++)                           \
                            row[ox * sx] +=                                   \
                                *(const T *)(grow + ox * gstr[3]);            \
                    }                                                         \
                }                                                             \
            }                                                                 \
            for (oy = ph; oy < ph + h; oy++)                                  \
                for (ox = pw; ox < pw + w; ox++)                              \
                    plane[oy * wp + ox] /= kk;                                \
            for (i = 0; i < hp * wp; i++)   /* quiet compares */              \
                nan |= plane[i] != plane[i];                                  \
        }                                                                     \
    }                                                                         \
    return nan;                                                               \
}

CFP_DEFINE_AVG_SCATTER(cfp_avg_scatter_f, float)
CFP_DEFINE_AVG_SCATTER(cfp_avg_scatter_d, double)

#endif
