/*
 * The row moves of the embeddings and the losses over their rows
 * (embed_id.pyx, hierarchical_softmax.pyx, negative_sampling.pyx) and the
 * reductions over one axis (_reductions.pyx), declared for Cython by
 * _rows.pxd: stock's gather ``W[rows]``, its row store ``gx[i] = row``, its
 * scatter-adds ``gW[ix] += igy`` and ``gW[ik] += ig * x``, one product
 * then one sum per item as NumPy's two loops round them (no contraction:
 * setup.py builds with -ffp-contract=off). Rows of unit stride take a loop
 * the compiler vectorises; the names start with cfp_ so that a profile
 * counts them as the arithmetic they replace (but the index checks, which
 * bench/floor.py counts as bookkeeping).
 */
#ifndef CHAINER_FASTPATH_ROWS_H
#define CHAINER_FASTPATH_ROWS_H

#include <string.h>
#include <Python.h>

#include "_clones.h"

/* The bytes (a multiple of 4, at most CFP_SHORT_COPY) at s to d, in moves
 * of constant sizes the compiler makes inline: for a short row, the call
 * to memcpy would cost more than the copy. */
#define CFP_SHORT_COPY 92
static inline void cfp_copy_short(char *d, const char *s, size_t bytes)
{
    size_t off = 0;
#define CFP_COPY_STEP(N)                                                      \
    if (bytes - off >= N) {                                                   \
        memcpy(d + off, s + off, N);                                          \
        off += N;                                                             \
    }
    CFP_COPY_STEP(32) CFP_COPY_STEP(32) CFP_COPY_STEP(16) CFP_COPY_STEP(8)
    CFP_COPY_STEP(4)
#undef CFP_COPY_STEP
}

/* out[k] = W[rows[k]] for k < n: rows of the 2-d array at W (byte strides
 * s0, s1) into C-contiguous out; every row in range. */
#define CFP_DEFINE_GATHER_ROWS(SUFFIX, T, INDEX)                              \
static __attribute__((noinline, unused)) void cfp_gather_rows_##SUFFIX(      \
    const char *W, Py_ssize_t s0, Py_ssize_t s1, const INDEX *rows,           \
    Py_ssize_t n, Py_ssize_t units, T *out)                                   \
{                                                                             \
    Py_ssize_t k, j;                                                          \
    const size_t bytes = units * sizeof(T);                                   \
    if (s1 == (Py_ssize_t)sizeof(T) && bytes <= CFP_SHORT_COPY) {             \
        for (k = 0; k < n; k++)                                               \
            cfp_copy_short((char *)(out + k * units), W + rows[k] * s0,       \
                           bytes);                                            \
        return;                                                               \
    }                                                                         \
    for (k = 0; k < n; k++) {                                                 \
        const char *row = W + rows[k] * s0;                                   \
        if (s1 == (Py_ssize_t)sizeof(T)) {                                    \
            memcpy(out + k * units, row, bytes);                              \
        } else {                                                              \
            for (j = 0; j < units; j++)                                       \
                out[k * units + j] = *(const T *)(row + j * s1);              \
        }                                                                     \
    }                                                                         \
}

/* gW[rows[k]] += g[k] * x for each k in order (a row may come twice). */
#define CFP_DEFINE_ADD_OUTER_ROWS(SUFFIX, T, INDEX)                           \
static CFP_CLONES __attribute__((noinline, unused)) void                     \
cfp_add_outer_rows_##SUFFIX(                                                  \
    char *gW, Py_ssize_t s0, Py_ssize_t s1, const INDEX *rows, const T *g,    \
    Py_ssize_t n, const char *x, Py_ssize_t xs, Py_ssize_t units)             \
{                                                                             \
    Py_ssize_t k, j;                                                          \
    for (k = 0; k < n; k++) {                                                 \
        char *row = gW + rows[k] * s0;                                        \
        const T gk = g[k];                                                    \
        if (s1 == (Py_ssize_t)sizeof(T) && xs == (Py_ssize_t)sizeof(T)) {     \
            T *restrict target = (T *)row;                                    \
            const T *restrict source = (const T *)x;                          \
            for (j = 0; j < units; j++)                                       \
                target[j] = target[j] + gk * source[j];                       \
        } else {                                                              \
            for (j = 0; j < units; j++) {                                     \
                T *target = (T *)(row + j * s1);                              \
                *target = *target + gk * *(const T *)(x + j * xs);            \
            }                                                                 \
        }                                                                     \
    }                                                                         \
}

/* out[j] = row[j]: out a 1-d run of units items stride bytes apart. */
#define CFP_DEFINE_STORE_ROW(SUFFIX, T)                                       \
static __attribute__((noinline, unused)) void cfp_store_row_##SUFFIX(        \
    char *out, Py_ssize_t stride, const T *row, Py_ssize_t units)             \
{                                                                             \
    Py_ssize_t j;                                                             \
    if (stride == (Py_ssize_t)sizeof(T)) {                                    \
        memcpy(out, row, units * sizeof(T));                                  \
        return;                                                               \
    }                                                                         \
    for (j = 0; j < units; j++)                                               \
        *(T *)(out + j * stride) = row[j];                                    \
}

/* gW[x[i]] += gy[i] for each i < n in order (a row may come twice),
 * skipping the label ignore where has_ignore, a negative index counted from
 * the end; gW (rows, cols) C-contiguous, every index in range. gy's rows
 * are its items over nd leading axes (dims, byte strides; their product
 * n) in C order, each row cols items col_stride bytes apart: a broadcast
 * gradient is read where it lies. Returns whether a sum is a NaN. */
#define CFP_DEFINE_SCATTER_ADD_ROWS(SUFFIX, T)                                \
static CFP_CLONES __attribute__((noinline, unused)) int                      \
cfp_scatter_add_rows_##SUFFIX(                                                \
    T *gW, Py_ssize_t rows, Py_ssize_t cols, const long long *x,              \
    Py_ssize_t n, const char *gy, int nd, const Py_ssize_t *dims,             \
    const Py_ssize_t *strides, Py_ssize_t col_stride, int has_ignore,         \
    long long ignore)                                                         \
{                                                                             \
    Py_ssize_t i, j, index[32] = {0};                                         \
    const char *row = gy;                                                     \
    int d, nan = 0;                                                           \
    for (i = 0; i < n; i++) {                                                 \
        if (!(has_ignore && x[i] == ignore)) {                                \
            T *restrict target = gW + (x[i] < 0 ? x[i] + rows : x[i]) * cols; \
            if (col_stride == (Py_ssize_t)sizeof(T)) {                        \
                const T *restrict source = (const T *)row;                    \
                for (j = 0; j < cols; j++) {                                  \
                    T v = target[j] + source[j];                              \
                    nan |= v != v;                                            \
                    target[j] = v;                                            \
                }                                                             \
            } else {                                                          \
                for (j = 0; j < cols; j++) {                                  \
                    T v = target[j] + *(const T *)(row + j * col_stride);     \
                    nan |= v != v;                                            \
                    target[j] = v;                                            \
                }                                                             \
            }                                                                 \
        }                                                                     \
        for (d = nd - 1; d >= 0; d--) {     /* the next row in C order */     \
            row += strides[d];                                                \
            if (++index[d] < dims[d])                                         \
                break;                                                        \
            row -= strides[d] * dims[d];                                      \
            index[d] = 0;                                                     \
        }                                                                     \
    }                                                                         \
    return nan;                                                               \
}

/* out[o, :] = ((0 + x[o, 0, :]) + x[o, 1, :]) + ... + x[o, n - 1, :] for
 * o < outer, x (outer, n, inner) and out (outer, inner) C-contiguous: the
 * sum over a middle axis in NumPy's order, one IEEE add per item and row.
 * Returns whether a sum is a NaN. */
#define CFP_DEFINE_SUM_MIDDLE(SUFFIX, T)                                      \
static CFP_CLONES __attribute__((noinline, unused)) int                      \
cfp_sum_middle_##SUFFIX(                                                      \
    T *restrict out, const T *restrict x, Py_ssize_t outer, Py_ssize_t n,     \
    Py_ssize_t inner)                                                         \
{                                                                             \
    Py_ssize_t o, k, j;                                                       \
    int nan = 0;                                                              \
    for (o = 0; o < outer; o++) {                                             \
        T *restrict acc = out + o * inner;                                    \
        const T *restrict rows = x + o * n * inner;                           \
        for (j = 0; j < inner; j++)                                           \
            acc[j] = (T)0 + rows[j];                                          \
        for (k = 1; k < n; k++)                                               \
            for (j = 0; j < inner; j++)                                       \
                acc[j] = acc[j] + rows[k * inner + j];                        \
        for (j = 0; j < inner; j++)                                           \
            nan |= acc[j] != acc[j];                                          \
    }                                                                         \
    return nan;                                                               \
}

/* NumPy's pairwise sum of x[0:n] (``@TYPE@_pairwise_sum`` of its
 * loops_utils.h.src, 1.x): a plain loop under 8 items, eight running sums
 * combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)) and then
 * the rest up to 128 (PW_BLOCKSIZE), else the halves, each a multiple of 8
 * where it can be, summed apart. */
#define CFP_DEFINE_PAIRWISE_SUM(SUFFIX, T)                                    \
static T cfp_pairwise_sum_##SUFFIX(const T *restrict x, Py_ssize_t n)         \
{                                                                             \
    Py_ssize_t i, j;                                                          \
    if (n < 8) {                                                              \
        T res = 0.;                                                           \
        for (i = 0; i < n; i++)                                               \
            res += x[i];                                                      \
        return res;                                                           \
    }                                                                         \
    if (n <= 128) {                                                           \
        T r[8], res;                                                          \
        for (j = 0; j < 8; j++)                                               \
            r[j] = x[j];                                                      \
        for (i = 8; i < n - (n % 8); i += 8)                                  \
            for (j = 0; j < 8; j++)                                           \
                r[j] += x[i + j];                                             \
        res = ((r[0] + r[1]) + (r[2] + r[3])) +                               \
              ((r[4] + r[5]) + (r[6] + r[7]));                                \
        for (; i < n; i++)                                                    \
            res += x[i];                                                      \
        return res;                                                           \
    }                                                                         \
    Py_ssize_t n2 = n / 2;                                                    \
    n2 -= n2 % 8;                                                             \
    return cfp_pairwise_sum_##SUFFIX(x, n2) +                                 \
           cfp_pairwise_sum_##SUFFIX(x + n2, n - n2);                         \
}

/* The elementwise steps of the losses' per-sample NumPy calls
 * (hierarchical_softmax.pyx, negative_sampling.pyx), each one of stock's
 * loops over a tree path or a sample's rows, n items:
 * cfp_times v = v * c (``w.dot(x) * codes``), cfp_neg_times
 * v = -(v * c), cfp_negate v = -v, and cfp_over_one_plus
 * v = (a * c) / (1 + e), or a / (1 + e) where c is NULL
 * (``-gloss * codes / (1.0 + exp(...))``, ``gloss / (1 + exp(-f))``). */
#define CFP_DEFINE_LOSS_STEPS(SUFFIX, T)                                      \
static __attribute__((noinline, unused)) void cfp_times_##SUFFIX(            \
    T *restrict v, const T *restrict c, Py_ssize_t n)                         \
{                                                                             \
    for (Py_ssize_t k = 0; k < n; k++)                                        \
        v[k] = v[k] * c[k];                                                   \
}                                                                             \
                                                                              \
static __attribute__((noinline, unused)) void cfp_neg_times_##SUFFIX(        \
    T *restrict v, const T *restrict c, Py_ssize_t n)                         \
{                                                                             \
    for (Py_ssize_t k = 0; k < n; k++)                                        \
        v[k] = -(v[k] * c[k]);                                                \
}                                                                             \
                                                                              \
static __attribute__((noinline, unused)) void cfp_negate_##SUFFIX(           \
    T *restrict v, Py_ssize_t n)                                              \
{                                                                             \
    for (Py_ssize_t k = 0; k < n; k++)                                        \
        v[k] = -v[k];                                                         \
}                                                                             \
                                                                              \
static __attribute__((noinline, unused)) void cfp_over_one_plus_##SUFFIX(    \
    T *restrict v, T a, const T *restrict c, const T *restrict e,             \
    Py_ssize_t n)                                                             \
{                                                                             \
    if (c == NULL) {                                                          \
        for (Py_ssize_t k = 0; k < n; k++)                                    \
            v[k] = a / ((T)1 + e[k]);                                         \
    } else {                                                                  \
        for (Py_ssize_t k = 0; k < n; k++)                                    \
            v[k] = (a * c[k]) / ((T)1 + e[k]);                                \
    }                                                                         \
}

/* out[o] = 0 + pairwise(x[o, :]) for x (outer, n) and out (outer,)
 * C-contiguous: NumPy's sum over the last axis, its add loop called once a
 * row on the zero it starts from. Returns whether a sum is a NaN. */
#define CFP_DEFINE_SUM_LAST(SUFFIX, T)                                        \
static CFP_CLONES __attribute__((noinline, unused)) int                      \
cfp_sum_last_##SUFFIX(T *restrict out, const T *restrict x,                  \
                      Py_ssize_t outer, Py_ssize_t n)                         \
{                                                                             \
    Py_ssize_t o;                                                             \
    int nan = 0;                                                              \
    for (o = 0; o < outer; o++) {                                             \
        T v = (T)0 + cfp_pairwise_sum_##SUFFIX(x + o * n, n);                 \
        nan |= v != v;                                                        \
        out[o] = v;                                                           \
    }                                                                         \
    return nan;                                                               \
}

/* out[o, j] = the largest (smallest, where largest is 0) of x[o, :, j] for
 * x (outer, n, inner) and out (outer, inner) C-contiguous, n >= 1; where
 * index is not NULL, index[o, j] = the first k at which it lies, as
 * NumPy's argmax and argmin find it. Returns CFP_SELECT_NAN where an item
 * is a NaN (NumPy's loops choose its payload and index) and
 * CFP_SELECT_ZERO where a result is a zero (they choose its sign); no
 * comparison here raises a floating-point flag. */
#define CFP_SELECT_NAN 1
#define CFP_SELECT_ZERO 2
#define CFP_DEFINE_SELECT_MIDDLE(SUFFIX, T)                                   \
static CFP_CLONES __attribute__((noinline, unused)) int                      \
cfp_select_middle_##SUFFIX(                                                   \
    T *restrict out, int *restrict index, const T *restrict x,                \
    Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner, int largest)            \
{                                                                             \
    Py_ssize_t o, k, j;                                                       \
    int nan = 0, zero = 0;                                                    \
    if (inner == 1) {   /* along each contiguous row: one running best */     \
        for (o = 0; o < outer; o++) {                                         \
            const T *restrict row = x + o * n;                                \
            T b = row[0];                                                     \
            int found = 0;                                                    \
            nan |= b != b;                                                    \
            for (k = 1; k < n; k++) {                                         \
                T v = row[k];                                                 \
                int better = largest ? v > b : v < b;                         \
                b = better ? v : b;                                           \
                found = better ? (int)k : found;                              \
                nan |= v != v;                                                \
            }                                                                 \
            out[o] = b;                                                       \
            if (index)                                                        \
                index[o] = found;                                             \
            zero |= b == 0;                                                   \
        }                                                                     \
        return (nan ? CFP_SELECT_NAN : 0) | (zero ? CFP_SELECT_ZERO : 0);     \
    }                                                                         \
    for (o = 0; o < outer; o++) {                                             \
        T *restrict best = out + o * inner;                                   \
        int *restrict at = index ? index + o * inner : NULL;                  \
        const T *restrict rows = x + o * n * inner;                           \
        for (j = 0; j < inner; j++) {                                         \
            best[j] = rows[j];                                                \
            nan |= rows[j] != rows[j];                                        \
        }                                                                     \
        if (at)                                                               \
            for (j = 0; j < inner; j++)                                       \
                at[j] = 0;                                                    \
        for (k = 1; k < n; k++) {                                             \
            const T *restrict row = rows + k * inner;                         \
            if (at) {                                                         \
                for (j = 0; j < inner; j++) {                                 \
                    int better = largest ? row[j] > best[j]                   \
                                         : row[j] < best[j];                  \
                    best[j] = better ? row[j] : best[j];                      \
                    at[j] = better ? (int)k : at[j];                          \
                    nan |= row[j] != row[j];                                  \
                }                                                             \
            } else if (largest) {                                             \
                for (j = 0; j < inner; j++) {                                 \
                    best[j] = row[j] > best[j] ? row[j] : best[j];            \
                    nan |= row[j] != row[j];                                  \
                }                                                             \
            } else {                                                          \
                for (j = 0; j < inner; j++) {                                 \
                    best[j] = row[j] < best[j] ? row[j] : best[j];            \
                    nan |= row[j] != row[j];                                  \
                }                                                             \
            }                                                                 \
        }                                                                     \
        for (j = 0; j < inner; j++)                                           \
            zero |= best[j] == 0;                                             \
    }                                                                         \
    return (nan ? CFP_SELECT_NAN : 0) | (zero ? CFP_SELECT_ZERO : 0);         \
}

/* Suffixes: f float, d double; i int rows, p Py_ssize_t rows. */
/* Whether each x[i] (i < n) but the label ignore (where has_ignore) lies
 * in [-rows, rows), for 0 <= rows < 2**62: shifted by rows and read
 * unsigned, an index in range is below 2 * rows and any other above it. No
 * early exit, so that the loop is vector instructions. */
static CFP_CLONES __attribute__((noinline, unused)) int
cfp_indices_in_range(const long long *x, Py_ssize_t n, long long rows,
                     int has_ignore, long long ignore)
{
    const unsigned long long shift = (unsigned long long)rows;
    const unsigned long long span = 2 * shift;
    unsigned long long outside = 0;
    Py_ssize_t i;
    if (has_ignore) {
        for (i = 0; i < n; i++)
            outside |= ((unsigned long long)x[i] + shift >= span)
                & (x[i] != ignore);
    } else {
        for (i = 0; i < n; i++)
            outside |= (unsigned long long)x[i] + shift >= span;
    }
    return !outside;
}

/* The largest of x[:n] read unsigned, 0 for n 0: a negative index reads
 * above any row count of its type, so this one maximum, compared with the
 * row count, decides whether every index is a row (indices_within in
 * _rows.pxd). A loop of vector instructions, built for the wider ones. */
static CFP_CLONES __attribute__((noinline, unused)) unsigned int
cfp_indices_top_i(const int *x, Py_ssize_t n)
{
    unsigned int top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned int v = (unsigned int)x[i];
        top = v > top ? v : top;
    }
    return top;
}

static CFP_CLONES __attribute__((noinline, unused)) unsigned long long
cfp_indices_top_p(const long long *x, Py_ssize_t n)
{
    unsigned long long top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned long long v = (unsigned long long)x[i];
        top = v > top ? v : top;
    }
    return top;
}

CFP_DEFINE_GATHER_ROWS(fi, float, int)
CFP_DEFINE_GATHER_ROWS(fp, float, Py_ssize_t)
CFP_DEFINE_GATHER_ROWS(di, double, int)
CFP_DEFINE_GATHER_ROWS(dp, double, Py_ssize_t)
CFP_DEFINE_ADD_OUTER_ROWS(fi, float, int)
CFP_DEFINE_ADD_OUTER_ROWS(fp, float, Py_ssize_t)
CFP_DEFINE_ADD_OUTER_ROWS(di, double, int)
CFP_DEFINE_ADD_OUTER_ROWS(dp, double, Py_ssize_t)
CFP_DEFINE_STORE_ROW(f, float)
CFP_DEFINE_STORE_ROW(d, double)
CFP_DEFINE_SCATTER_ADD_ROWS(f, float)
CFP_DEFINE_SCATTER_ADD_ROWS(d, double)
CFP_DEFINE_SUM_MIDDLE(f, float)
CFP_DEFINE_SUM_MIDDLE(d, double)
CFP_DEFINE_LOSS_STEPS(f, float)
CFP_DEFINE_LOSS_STEPS(d, double)
CFP_DEFINE_PAIRWISE_SUM(f, float)
CFP_DEFINE_PAIRWISE_SUM(d, double)
CFP_DEFINE_SUM_LAST(f, float)
CFP_DEFINE_SUM_LAST(d, double)
CFP_DEFINE_SELECT_MIDDLE(f, float)
CFP_DEFINE_SELECT_MIDDLE(d, double)

#endif
