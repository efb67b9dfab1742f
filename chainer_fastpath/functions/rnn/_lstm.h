/*
 * The elementwise passes of lstm.pyx's kernels: stock's NumPy expressions
 * of LSTM.forward and LSTMGrad.forward, operand by operand, in the order
 * its loops apply them (constants of the array's type; no FMA, setup.py).
 *
 * Where the gates lie: x is (batch, 4 * units, *rest) and each of its
 * `blocks` (batch * units) blocks holds R (`rest`) values of gate a, then
 * i, f and o (lstm._extract_gates). u holds tanh of stock's tanh arguments
 * in x's layout, so sigmoid(i) is u_i * 0.5 + 0.5 (lstm._sigmoid). Each
 * pass has a loop for R == 1 (an LSTM link's gates, one value each), where
 * the compiler sees a constant R and no inner loop is left.
 */
#ifndef CHAINER_FASTPATH_LSTM_H
#define CHAINER_FASTPATH_LSTM_H

#include <Python.h>

#include "_clones.h"

/* What stock passes to tanh: gate a as is, i, f and o halved. 0 on a NaN,
 * whose signaling kind tanh would warn about per call; the test sets a
 * flag rather than branching, so that the loops stay straight. */
#define CFP_DEFINE_LSTM_TANH_ARGS(SUFFIX, T)                                  \
static CFP_CLONES __attribute__((noinline, unused)) int                       \
cfp_lstm_tanh_args_##SUFFIX(                                                  \
    const T *x, T *t, Py_ssize_t blocks, Py_ssize_t R)                        \
{                                                                             \
    const T half = 0.5;                                                       \
    Py_ssize_t b, r;                                                          \
    int nan = 0;                                                              \
    if (R == 1) {                                                             \
        for (b = 0; b < blocks; b++, x += 4, t += 4) {                        \
            nan |= (x[0] != x[0]) | (x[1] != x[1]) | (x[2] != x[2])           \
                | (x[3] != x[3]);                                             \
            t[0] = x[0];                                                      \
            t[1] = x[1] * half;                                               \
            t[2] = x[2] * half;                                               \
            t[3] = x[3] * half;                                               \
        }                                                                     \
        return !nan;                                                          \
    }                                                                         \
    for (b = 0; b < blocks; b++, x += 4 * R, t += 4 * R) {                    \
        for (r = 0; r < 4 * R; r++)                                           \
            nan |= x[r] != x[r];                                              \
        for (r = 0; r < R; r++)                                               \
            t[r] = x[r];                                                      \
        for (r = R; r < 4 * R; r++)                                           \
            t[r] = x[r] * half;                                               \
    }                                                                         \
    return !nan;                                                              \
}

/* c_next = tanh(a) * sigmoid(i) + sigmoid(f) * c_prev */
#define CFP_LSTM_CELL_AT(T, u, c_prev, c_next, r, R)                          \
    do {                                                                      \
        const T half_ = 0.5;                                                  \
        const T ai_ = (u)[(R) + (r)] * half_ + half_;                         \
        const T af_ = (u)[2 * (R) + (r)] * half_ + half_;                     \
        (c_next)[r] = (u)[r] * ai_ + af_ * (c_prev)[r];                       \
    } while (0)

#define CFP_DEFINE_LSTM_CELL(SUFFIX, T)                                       \
static CFP_CLONES __attribute__((noinline, unused)) void                      \
cfp_lstm_cell_##SUFFIX(                                                       \
    const T *u, const T *c_prev, T *c_next, Py_ssize_t blocks, Py_ssize_t R)  \
{                                                                             \
    Py_ssize_t b, r;                                                          \
    if (R == 1) {                                                             \
        for (b = 0; b < blocks; b++)                                          \
            CFP_LSTM_CELL_AT(T, u + 4 * b, c_prev + b, c_next + b, 0, 1);     \
        return;                                                               \
    }                                                                         \
    for (b = 0; b < blocks; b++, u += 4 * R, c_prev += R, c_next += R)        \
        for (r = 0; r < R; r++)                                               \
            CFP_LSTM_CELL_AT(T, u, c_prev, c_next, r, R);                     \
}

/* h = sigmoid(o) * tanh(c_next), h holding tanh(c_next) on entry. */
#define CFP_DEFINE_LSTM_OUTPUT(SUFFIX, T)                                     \
static CFP_CLONES __attribute__((noinline, unused)) void                      \
cfp_lstm_output_##SUFFIX(                                                     \
    const T *u, T *h, Py_ssize_t blocks, Py_ssize_t R)                        \
{                                                                             \
    const T half = 0.5;                                                       \
    Py_ssize_t b, r;                                                          \
    if (R == 1) {                                                             \
        for (b = 0; b < blocks; b++)                                          \
            h[b] = (u[4 * b + 3] * half + half) * h[b];                       \
        return;                                                               \
    }                                                                         \
    for (b = 0; b < blocks; b++, u += 4 * R, h += R)                          \
        for (r = 0; r < R; r++)                                               \
            h[r] = (u[3 * R + r] * half + half) * h[r];                       \
}

/* LSTMGrad.forward's expressions for the value at r of a block whose gate
 * values u and gradient gx start there, e its index in the cell; co holds
 * tanh(c_next). A missing gc or gh (NULL) is stock's integer 0, which
 * NumPy makes a 0 of the dtype. */
#define CFP_LSTM_GRAD_AT(T, u, co, c_prev, gc, gh, gc_prev, gx, r, R, e)      \
    do {                                                                      \
        const T half_ = 0.5, one_ = 1, zero_ = 0;                             \
        const T aa_ = (u)[r];                                                 \
        const T ai_ = (u)[(R) + (r)] * half_ + half_;                         \
        const T af_ = (u)[2 * (R) + (r)] * half_ + half_;                     \
        const T ao_ = (u)[3 * (R) + (r)] * half_ + half_;                     \
        const T c_ = (co)[e];                                                 \
        const T h_ = (gh) != NULL ? (gh)[e] : zero_;                          \
        T temp_ = h_ * ao_ * (one_ - c_ * c_);                                \
        temp_ = temp_ + ((gc) != NULL ? (gc)[e] : zero_);                     \
        (gx)[r] = temp_ * ai_ * (one_ - aa_ * aa_);                           \
        (gx)[(R) + (r)] = temp_ * aa_ * (ai_ * (one_ - ai_));                 \
        (gx)[2 * (R) + (r)] = temp_ * (c_prev)[e] * (af_ * (one_ - af_));     \
        (gx)[3 * (R) + (r)] = h_ * c_ * (ao_ * (one_ - ao_));                 \
        (gc_prev)[e] = temp_ * af_;                                           \
    } while (0)

#define CFP_DEFINE_LSTM_GRAD(SUFFIX, T)                                       \
static CFP_CLONES __attribute__((noinline, unused)) void                      \
cfp_lstm_grad_##SUFFIX(                                                       \
    const T *u, const T *co, const T *c_prev, const T *gc, const T *gh,       \
    T *gc_prev, T *gx, Py_ssize_t blocks, Py_ssize_t R)                       \
{                                                                             \
    Py_ssize_t b, r, e = 0;                                                   \
    if (R == 1) {                                                             \
        for (b = 0; b < blocks; b++)                                          \
            CFP_LSTM_GRAD_AT(T, u + 4 * b, co, c_prev, gc, gh, gc_prev,       \
                             gx + 4 * b, 0, 1, b);                            \
        return;                                                               \
    }                                                                         \
    for (b = 0; b < blocks; b++, u += 4 * R, gx += 4 * R)                     \
        for (r = 0; r < R; r++, e++)                                          \
            CFP_LSTM_GRAD_AT(T, u, co, c_prev, gc, gh, gc_prev, gx, r, R, e); \
}

CFP_DEFINE_LSTM_TANH_ARGS(f, float)
CFP_DEFINE_LSTM_TANH_ARGS(d, double)
CFP_DEFINE_LSTM_CELL(f, float)
CFP_DEFINE_LSTM_CELL(d, double)
CFP_DEFINE_LSTM_OUTPUT(f, float)
CFP_DEFINE_LSTM_OUTPUT(d, double)
CFP_DEFINE_LSTM_GRAD(f, float)
CFP_DEFINE_LSTM_GRAD(d, double)

#endif
