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
 * copies: the values are the image's, bit for bit. The output is written
 * in order; a window that lies inside the image is read through
 * ``offsets``, the byte offsets of its kh*kw positions from its corner
 * (ky*dy*strides[2] + kx*dx*strides[3]), one load per item whatever the
 * image's layout (channels first, or a transposed view with channels
 * last); only the windows that overlap the padding test each position.
 *
 * strides are in bytes; geometry is {kh, kw, sy, sx, ph, pw, dy, dx,
 * out_h, out_w}.
 */
#ifndef CHAINER_FASTPATH_PATCHES_H
#define CHAINER_FASTPATH_PATCHES_H

#include <stdint.h>
#include <Python.h>

#define CFP_DEFINE_IM2COL(NAME, T)                                            \
static __attribute__((noinline, unused)) void NAME(                           \
    T *dst, const char *src, const Py_ssize_t *shape,                         \
    const Py_ssize_t *strides, const Py_ssize_t *geometry,                    \
    const Py_ssize_t *offsets)                                                \
{                                                                             \
    const Py_ssize_t N = shape[0], C = shape[1], H = shape[2], W = shape[3];  \
    const Py_ssize_t kh = geometry[0], kw = geometry[1];                      \
    const Py_ssize_t sy = geometry[2], sx = geometry[3];                      \
    const Py_ssize_t ph = geometry[4], pw = geometry[5];                      \
    const Py_ssize_t dy = geometry[6], dx = geometry[7];                      \
    const Py_ssize_t oh = geometry[8], ow = geometry[9];                      \
    const Py_ssize_t kk = kh * kw;                                            \
    Py_ssize_t n, oy, ox, c, ky, kx, k;                                       \
    for (n = 0; n < N; n++) {                                                 \
        for (oy = 0; oy < oh; oy++) {                                         \
            const Py_ssize_t iy0 = oy * sy - ph;                              \
            const int rows = iy0 >= 0 && iy0 + (kh - 1) * dy < H;             \
            for (ox = 0; ox < ow; ox++) {                                     \
                const Py_ssize_t ix0 = ox * sx - pw;                          \
                if (rows && ix0 >= 0 && ix0 + (kw - 1) * dx < W) {            \
                    /* The window lies inside the image. */                   \
                    const char *base = src + n * strides[0]                   \
                        + iy0 * strides[2] + ix0 * strides[3];                \
                    for (c = 0; c < C; c++, base += strides[1])               \
                        for (k = 0; k < kk; k++)                              \
                            *dst++ = *(const T *)(base + offsets[k]);         \
                    continue;                                                 \
                }                                                             \
                for (c = 0; c < C; c++) {                                     \
                    const char *plane = src + n * strides[0]                  \
                        + c * strides[1];                                     \
                    for (ky = 0; ky < kh; ky++) {                             \
                        const Py_ssize_t iy = iy0 + ky * dy;                  \
                        for (kx = 0; kx < kw; kx++) {                         \
                            const Py_ssize_t ix = ix0 + kx * dx;              \
                            *dst++ = (iy >= 0 && iy < H && ix >= 0 && ix < W) \
                                ? *(const T *)(plane + iy * strides[2]        \
                                               + ix * strides[3])             \
                                : 0;                                          \
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
 * Returns 1 where the image holds a NaN: of two NaNs an add keeps the one
 * of its first operand, and the compiler may order a commutative add's
 * operands as it likes, so which NaN is kept is left to stock's loop.
 *
 * geometry is {kh, kw, sy, sx, dy, dx, ih, iw}.
 */
#define CFP_DEFINE_COL2IM(NAME, T)                                            \
static __attribute__((noinline, unused)) int NAME(                            \
    T *img, const T *col, Py_ssize_t N, Py_ssize_t C, Py_ssize_t hp,          \
    Py_ssize_t wp, const Py_ssize_t *geometry)                                \
{                                                                             \
    const Py_ssize_t kh = geometry[0], kw = geometry[1];                      \
    const Py_ssize_t sy = geometry[2], sx = geometry[3];                      \
    const Py_ssize_t dy = geometry[4], dx = geometry[5];                      \
    const Py_ssize_t ih = geometry[6], iw = geometry[7];                      \
    Py_ssize_t n, c, ky, kx, oy, ox, i;                                       \
    int nan = 0;                                                              \
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
            for (i = 0; i < hp * wp; i++)   /* quiet compares */              \
                nan |= plane[i] != plane[i];                                  \
        }                                                                     \
    }                                                                         \
    return nan;                                                               \
}

CFP_DEFINE_COL2IM(cfp_col2im_f, float)
CFP_DEFINE_COL2IM(cfp_col2im_d, double)

#endif
