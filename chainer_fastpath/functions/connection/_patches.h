/*
 * Convolution patches, from an image and back, for convolution_2d.pyx and
 * deconvolution_2d.pyx.
 *
 * The convolution patches ("im2col") of an (n, c, h, w) image, written into
 * a C-ordered (n, out_h, out_w, c, kh, kw) array:
 *
 *   dst[n, oy, ox, c, ky, kx] = src[n, c, oy*sy - ph + ky*dy, ox*sx - pw + kx*dx]
 *
 * and all bits clear (+0.0) where that position lies in the padding. Only
 * copies: the values are the image's, bit for bit. One output row (all ox
 * of one n, oy) is a block of out_w * c*kh*kw items that stays in cache
 * while it is filled source row by source row: the image is read along its
 * rows, the block written kw items at a time.
 *
 * src_strides are in bytes; geometry is {kh, kw, sy, sx, ph, pw, dy, dx,
 * out_h, out_w}.
 */
#ifndef CHAINER_FASTPATH_PATCHES_H
#define CHAINER_FASTPATH_PATCHES_H

#include <stdint.h>
#include <Python.h>

/* The ox whose column ox*sx + x0 lies in [0, w): [*lo, *hi). */
static inline void cfp_inside(Py_ssize_t x0, Py_ssize_t sx, Py_ssize_t w,
                              Py_ssize_t ow, Py_ssize_t *lo, Py_ssize_t *hi)
{
    Py_ssize_t a = x0 >= 0 ? 0 : (-x0 + sx - 1) / sx;
    Py_ssize_t b = x0 >= w ? 0 : (w - x0 + sx - 1) / sx;
    if (a > ow) a = ow;
    if (b > ow) b = ow;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

#define CFP_DEFINE_IM2COL(NAME, T)                                            \
static __attribute__((noinline, unused)) void NAME(                       \
    T *dst, const char *src, const Py_ssize_t *shape,                         \
    const Py_ssize_t *strides, const Py_ssize_t *geometry)                    \
{                                                                             \
    const Py_ssize_t N = shape[0], C = shape[1], H = shape[2], W = shape[3];  \
    const Py_ssize_t kh = geometry[0], kw = geometry[1];                      \
    const Py_ssize_t sy = geometry[2], sx = geometry[3];                      \
    const Py_ssize_t ph = geometry[4], pw = geometry[5];                      \
    const Py_ssize_t dy = geometry[6], dx = geometry[7];                      \
    const Py_ssize_t oh = geometry[8], ow = geometry[9];                      \
    const Py_ssize_t ckk = C * kh * kw;                                       \
    const Py_ssize_t s3 = strides[3], step = dx * strides[3];                 \
    Py_ssize_t n, oy, c, ky, kx, ox, lo, hi, unused;                          \
    /* The ox whose every kx reads inside the row: [lo, hi). */               \
    cfp_inside(-pw, sx, W, ow, &lo, &unused);                                 \
    cfp_inside((kw - 1) * dx - pw, sx, W, ow, &unused, &hi);                  \
    if (hi < lo)                                                              \
        hi = lo;                                                              \
    for (n = 0; n < N; n++) {                                                 \
        for (oy = 0; oy < oh; oy++) {                                         \
            T *block = dst + (n * oh + oy) * ow * ckk;                        \
            for (c = 0; c < C; c++) {                                         \
                const char *plane = src + n * strides[0] + c * strides[1];    \
                for (ky = 0; ky < kh; ky++) {                                 \
                    const Py_ssize_t iy = oy * sy - ph + ky * dy;             \
                    T *d = block + (c * kh + ky) * kw;                        \
                    if (iy < 0 || iy >= H) {                                  \
                        for (ox = 0; ox < ow; ox++, d += ckk)                 \
                            for (kx = 0; kx < kw; kx++)                       \
                                d[kx] = 0;                                    \
                        continue;                                             \
                    }                                                         \
                    const char *row = plane + iy * strides[2];                \
                    for (ox = 0; ox < ow; ox++, d += ckk) {                   \
                        const Py_ssize_t x0 = ox * sx - pw;                   \
                        if (ox >= lo && ox < hi) {                            \
                            const char *s = row + x0 * s3;                    \
                            for (kx = 0; kx < kw; kx++, s += step)            \
                                d[kx] = *(const T *)s;                        \
                        } else {                                              \
                            for (kx = 0; kx < kw; kx++) {                     \
                                const Py_ssize_t ix = x0 + kx * dx;           \
                                d[kx] = (ix >= 0 && ix < W)                   \
                                    ? *(const T *)(row + ix * s3) : 0;        \
                            }                                                 \
                        }                                                     \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
}

CFP_DEFINE_IM2COL(cfp_im2col_2, uint16_t)
CFP_DEFINE_IM2COL(cfp_im2col_4, uint32_t)
CFP_DEFINE_IM2COL(cfp_im2col_8, uint64_t)

/*
 * The image of patches ("col2im"), as stock's col2im_cpu sums it: for each
 * (n, c) plane of the padded (n, c, hp, wp) image, zero (+0.0), then for
 * ky, then kx, in that order,
 *
 *   img[n, c, ky*dy + oy*sy, kx*dx + ox*sx] += col[c, ky, kx, n, oy, ox]
 *
 * for every (oy, ox) of the (ih, iw) patch grid. col is C-ordered (c, kh,
 * kw, n, ih, iw), what tensordot(W, x, (0, 1)) makes; img C-ordered. Every
 * element gets the same additions in the same order as from stock's kh*kw
 * passes over the whole image, one plane at a time while it is in cache.
 * The caller checks that every index lies inside the padded image.
 *
 * geometry is {kh, kw, sy, sx, dy, dx, ih, iw}.
 */
#define CFP_DEFINE_COL2IM(NAME, T)                                            \
static __attribute__((noinline, unused)) void NAME(                       \
    T *img, const T *col, Py_ssize_t N, Py_ssize_t C, Py_ssize_t hp,          \
    Py_ssize_t wp, const Py_ssize_t *geometry)                                \
{                                                                             \
    const Py_ssize_t kh = geometry[0], kw = geometry[1];                      \
    const Py_ssize_t sy = geometry[2], sx = geometry[3];                      \
    const Py_ssize_t dy = geometry[4], dx = geometry[5];                      \
    const Py_ssize_t ih = geometry[6], iw = geometry[7];                      \
    Py_ssize_t n, c, ky, kx, oy, ox, i;                                       \
    for (n = 0; n < N; n++) {                                                 \
        for (c = 0; c < C; c++) {                                             \
            T *plane = img + (n * C + c) * hp * wp;                           \
            for (i = 0; i < hp * wp; i++)                                     \
                plane[i] = 0;                                                 \
            for (ky = 0; ky < kh; ky++) {                                     \
                for (kx = 0; kx < kw; kx++) {                                 \
                    const T *g = col + (((c * kh + ky) * kw + kx) * N + n)    \
                                       * ih * iw;                             \
                    for (oy = 0; oy < ih; oy++, g += iw) {                    \
                        T *row = plane + (ky * dy + oy * sy) * wp + kx * dx;  \
                        for (ox = 0; ox < iw; ox++)                           \
                            row[ox * sx] += g[ox];                            \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
}

CFP_DEFINE_COL2IM(cfp_col2im_f, float)
CFP_DEFINE_COL2IM(cfp_col2im_d, double)

#endif
