/*
 * The predictions accuracy.pyx counts: for each sample i (of n) and each
 * position r (of rest) the first class c (of classes) whose score is the
 * largest, y[i, c, r] (what y.argmax(axis=1) gives, NumPy's argmax: the
 * first maximum, or the first NaN), compared with the label t[i*rest + r].
 *
 * y is read through its byte strides ys {sample, class, position}; t, of
 * 32- or 64-bit labels, through its byte stride ts. Labels equal to
 * ignore (where has_ignore) are counted in *ignored and not as correct.
 * NaNs are tested with quiet compares, and numbers alone are ordered, so
 * that no floating-point flag is raised but for a signaling NaN (which the
 * caller clears). Returns the count of correct predictions.
 */
#ifndef CHAINER_FASTPATH_ACCURACY_H
#define CHAINER_FASTPATH_ACCURACY_H

#include <stdint.h>
#include <Python.h>

/* Half bits ordered as their values (NaNs excluded): both zeros are 0. */
#define CFP_ACC_HALF_KEY(h) (((h) & 0x8000u) ? -(int)((h) & 0x7fffu)        \
                                             : (int)((h) & 0x7fffu))
#define CFP_ACC_HALF_NAN(h) (((h) & 0x7fffu) > 0x7c00u)
#define CFP_ACC_REAL_KEY(v) (v)
#define CFP_ACC_REAL_NAN(v) ((v) != (v))

#define CFP_DEFINE_ACCURACY(NAME, S, KEY, ISNAN)                              \
static __attribute__((noinline, unused)) int64_t NAME(                        \
    const char *y, const Py_ssize_t *ys, Py_ssize_t n, Py_ssize_t classes,    \
    Py_ssize_t rest, const char *t, Py_ssize_t ts, int wide,                  \
    int has_ignore, int64_t ignore, int64_t *ignored)                         \
{                                                                             \
    int64_t correct = 0, skipped = 0;                                         \
    Py_ssize_t i, r, c;                                                       \
    for (i = 0; i < n; i++) {                                                 \
        for (r = 0; r < rest; r++, t += ts) {                                 \
            const int64_t label = wide ? *(const int64_t *)t                  \
                                       : *(const int32_t *)t;                 \
            const char *p = y + i * ys[0] + r * ys[2];                        \
            S best = *(const S *)p;                                           \
            int64_t at = 0;                                                   \
            if (has_ignore && label == ignore) {                              \
                skipped++;                                                    \
                continue;                                                     \
            }                                                                 \
            if (!ISNAN(best)) {                                               \
                for (c = 1; c < classes; c++) {                               \
                    const S v = *(const S *)(p + c * ys[1]);                  \
                    if (ISNAN(v) || KEY(v) > KEY(best)) {                     \
                        best = v;                                             \
                        at = c;                                               \
                        if (ISNAN(v))                                         \
                            break;                                            \
                    }                                                         \
                }                                                             \
            }                                                                 \
            correct += at == label;                                           \
        }                                                                     \
    }                                                                         \
    *ignored = skipped;                                                       \
    return correct;                                                           \
}

CFP_DEFINE_ACCURACY(cfp_accuracy_h, uint16_t, CFP_ACC_HALF_KEY,
                    CFP_ACC_HALF_NAN)
CFP_DEFINE_ACCURACY(cfp_accuracy_f, float, CFP_ACC_REAL_KEY, CFP_ACC_REAL_NAN)
CFP_DEFINE_ACCURACY(cfp_accuracy_d, double, CFP_ACC_REAL_KEY,
                    CFP_ACC_REAL_NAN)

#endif
