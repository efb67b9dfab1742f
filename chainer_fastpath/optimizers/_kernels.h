/*
 * Fused CPU update kernels, one pass per parameter, no temporaries.
 *
 * Each kernel performs, element by element, exactly the NumPy operations of
 * stock Chainer 7.8.1's update_core_cpu, in the same order and with the
 * same dtype rounding (NumPy 1.26):
 *   - float32 / float64: every operation in that dtype (scalars were cast
 *     to it beforehand, as NumPy's value-based casting does);
 *   - float16: NumPy computes each float16 ufunc as
 *     half(float(a) op float(b)); we keep float16 values in float variables
 *     and round with rh() after every float16 operation. Where stock mixes
 *     float16 with float32 arrays (Adam), the operation is float32 and only
 *     the store into a float16 array rounds.
 * Compile with -ffp-contract=off (no FMA): each product is rounded.
 */
#ifndef CHAINER_FASTPATH_KERNELS_H
#define CHAINER_FASTPATH_KERNELS_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <Python.h>

#include "_fpe.h"

/* ---- float16 <-> float32, NumPy's own algorithms (halffloat.c) ---- */

static inline float cfp_h2f(uint16_t h)
{
    uint32_t h_exp = (h & 0x7c00u);
    uint32_t f_sgn = ((uint32_t)h & 0x8000u) << 16;
    uint32_t bits;
    float f;
    switch (h_exp) {
        case 0x0000u: { /* 0 or subnormal */
            uint32_t h_sig = (h & 0x03ffu);
            if (h_sig == 0) {
                bits = f_sgn;
                break;
            }
            h_sig <<= 1;
            while ((h_sig & 0x0400u) == 0) {
                h_sig <<= 1;
                h_exp++;
            }
            {
                uint32_t f_exp = ((uint32_t)(127 - 15 - h_exp)) << 23;
                uint32_t f_sig = ((uint32_t)(h_sig & 0x03ffu)) << 13;
                bits = f_sgn + f_exp + f_sig;
            }
            break;
        }
        case 0x7c00u: /* inf or NaN */
            bits = f_sgn + 0x7f800000u + (((uint32_t)(h & 0x03ffu)) << 13);
            break;
        default: /* normalized: just add the exponent bias */
            bits = f_sgn + (((uint32_t)(h & 0x7fffu) + 0x1c000u) << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

/* NumPy's conversions raise overflow and underflow where these do; these
 * raise them where the kernels' driver tests (_fpe.h). */
static void cfp_raise_overflow(void) { cfp_raise_sse_flags(FE_OVERFLOW); }
static void cfp_raise_underflow(void) { cfp_raise_sse_flags(FE_UNDERFLOW); }

static inline uint16_t cfp_f2h(float fl)
{
    uint32_t f, f_exp, f_sig;
    uint16_t h_sgn, h_exp, h_sig;
    memcpy(&f, &fl, 4);

    h_sgn = (uint16_t)((f & 0x80000000u) >> 16);
    f_exp = (f & 0x7f800000u);

    if (f_exp >= 0x47800000u) {
        if (f_exp == 0x7f800000u) {
            f_sig = (f & 0x007fffffu);
            if (f_sig != 0) {
                uint16_t ret = (uint16_t)(0x7c00u + (f_sig >> 13));
                if (ret == 0x7c00u) {
                    ret++;
                }
                return (uint16_t)(h_sgn + ret);
            }
            return (uint16_t)(h_sgn + 0x7c00u);
        }
        cfp_raise_overflow();
        return (uint16_t)(h_sgn + 0x7c00u);
    }
    if (f_exp <= 0x38000000u) {
        if (f_exp < 0x33000000u) {
            if ((f & 0x7fffffffu) != 0) {
                cfp_raise_underflow();
            }
            return h_sgn;
        }
        f_exp >>= 23;
        f_sig = (0x00800000u + (f & 0x007fffffu));
        if ((f_sig & ((1u << (126 - f_exp)) - 1)) != 0) {
            cfp_raise_underflow();      /* not exactly representable */
        }
        f_sig >>= (113 - f_exp);
        /* round half to even */
        if (((f_sig & 0x00003fffu) != 0x00001000u) || (f & 0x000007ffu)) {
            f_sig += 0x00001000u;
        }
        h_sig = (uint16_t)(f_sig >> 13);
        return (uint16_t)(h_sgn + h_sig);
    }
    h_exp = (uint16_t)((f_exp - 0x38000000u) >> 13);
    f_sig = (f & 0x007fffffu);
    if ((f_sig & 0x00003fffu) != 0x00001000u) {
        f_sig += 0x00001000u;
    }
    h_sig = (uint16_t)(f_sig >> 13);
    h_sig = (uint16_t)(h_sig + h_exp);
    if (h_sig == 0x7c00u) {
        cfp_raise_overflow();           /* rounded up to infinity */
    }
    return (uint16_t)(h_sgn + h_sig);
}

/* A double as NumPy casts it to float16 (npy_doublebits_to_halfbits),
 * without raising flags; *under is set when NumPy's cast would raise
 * underflow. Callers keep |d| below 65504 (no overflow). */
static inline uint16_t cfp_d2h(double dl, int *under)
{
    uint64_t d, d_exp, d_sig;
    uint16_t h_sgn, h_exp, h_sig;
    memcpy(&d, &dl, 8);
    h_sgn = (uint16_t)((d & 0x8000000000000000ULL) >> 48);
    d_exp = (d & 0x7ff0000000000000ULL);
    *under = 0;
    if (d_exp >= 0x40f0000000000000ULL) {
        if (d_exp == 0x7ff0000000000000ULL) {
            d_sig = (d & 0x000fffffffffffffULL);
            if (d_sig != 0) {
                uint16_t ret = (uint16_t)(0x7c00u + (d_sig >> 42));
                if (ret == 0x7c00u) {
                    ret++;
                }
                return (uint16_t)(h_sgn + ret);
            }
        }
        return (uint16_t)(h_sgn + 0x7c00u);
    }
    if (d_exp <= 0x3f00000000000000ULL) {
        if (d_exp < 0x3e60000000000000ULL) {
            *under = (d & 0x7fffffffffffffffULL) != 0;
            return h_sgn;
        }
        d_exp >>= 52;
        d_sig = (0x0010000000000000ULL + (d & 0x000fffffffffffffULL));
        *under = (d_sig & ((1ULL << (1051 - d_exp)) - 1)) != 0;
        d_sig <<= (d_exp - 998);
        if ((d_sig & 0x003fffffffffffffULL) != 0x0010000000000000ULL) {
            d_sig += 0x0010000000000000ULL;
        }
        h_sig = (uint16_t)(d_sig >> 53);
        return (uint16_t)(h_sgn + h_sig);
    }
    h_exp = (uint16_t)((d_exp - 0x3f00000000000000ULL) >> 42);
    d_sig = (d & 0x000fffffffffffffULL);
    if ((d_sig & 0x000007ffffffffffULL) != 0x0000020000000000ULL) {
        d_sig += 0x0000020000000000ULL;
    }
    h_sig = (uint16_t)(d_sig >> 42);
    h_sig = (uint16_t)(h_sig + h_exp);
    return (uint16_t)(h_sgn + h_sig);
}

/* A float32 result rounded to float16 and widened back (exact). */
static inline float cfp_rh(float x) { return cfp_h2f(cfp_f2h(x)); }

/* NumPy's maximum/minimum (NaN-propagating), clip (clip.cpp) */
#define CFP_MAXIMUM(a, b) (((a) >= (b) || (a) != (a)) ? (a) : (b))
#define CFP_MINIMUM(a, b) (((a) <= (b) || (a) != (a)) ? (a) : (b))
/* _NPY_MAX(a, b) = isnan(a) ? a : (a > b ? a : b), likewise MIN */
#define CFP_NMAX(a, b) (((a) != (a)) ? (a) : ((a) > (b) ? (a) : (b)))
#define CFP_NMIN(a, b) (((a) != (a)) ? (a) : ((a) < (b) ? (a) : (b)))
/* float16 flavour: npy_half_ge / npy_half_le (equal compares as float) */
#define CFP_HMAX(a, b) (((a) != (a) || (a) >= (b)) ? (a) : (b))
#define CFP_HMIN(a, b) (((a) != (a) || (a) <= (b)) ? (a) : (b))

/* Kernels are inlined into their table entries; the float32 and float64
 * entries are compiled for AVX2 as well, chosen when the CPU has it (the
 * same IEEE operations, in the same order, on wider vectors; no FMA). */
#define CFP_KERNEL static inline __attribute__((always_inline)) void
#include "_clones.h"

/* ---- generic definitions: every operation in the parameter dtype ----
 * S: storage type, C: compute type, LD/ST: load/store, R: rounding after an
 * operation (identity for float32/float64), SQ: square root in C.
 *
 * Every array a kernel updates, `x`, comes with an output `x_o`. W names
 * where its new values go: W_IN, into `x` (in place; `x_o` is unused),
 * W_OUT, into `x_o` (the old values stay in `x`). */

#define CFP_ID(x) (x)
#define CFP_W_IN(x) x
#define CFP_W_OUT(x) x##_o
#define CFP_OUT(S, x) S *restrict x##_o
#define CFP_LD_N(p, i) ((p)[i])
#define CFP_ST_N(p, i, x) ((p)[i] = (x))
#define CFP_LD_H(p, i) (cfp_h2f((p)[i]))
#define CFP_ST_H(p, i, x) ((p)[i] = cfp_f2h(x))

#define CFP_DEFINE_ALL(SUF, S, C, LD, ST, W, R, SQ, MAXF, MINF, UMIN)         \
                                                                              \
CFP_KERNEL cfp_sgd_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),          \
                         const S *restrict g, C lr)                           \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C t = R(lr * LD(g, i));                                               \
        ST(W(p), i, R(LD(p, i) - t));                                         \
    }                                                                         \
}                                                                             \
                                                                              \
/* WeightDecay, an optimizer hook: g += rate * p. */                          \
CFP_KERNEL cfp_wdecay_##SUF(Py_ssize_t n, S *restrict g, CFP_OUT(S, g),       \
                            const S *restrict p, C rate)                      \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C t = R(rate * LD(p, i));                                             \
        ST(W(g), i, R(LD(g, i) + t));                                         \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_momentum_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),     \
                              const S *restrict g, S *restrict v,             \
                              CFP_OUT(S, v), C lr, C mom)                     \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C vi = R(LD(v, i) * mom);                                             \
        vi = R(vi - R(lr * LD(g, i)));                                        \
        ST(W(v), i, vi);                                                      \
        ST(W(p), i, R(LD(p, i) + vi));                                        \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_nesterov_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),     \
                              const S *restrict g, S *restrict v,             \
                              CFP_OUT(S, v), C lr, C mom, C mm, C c)          \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C gi = LD(g, i);                                                      \
        C vi = R(LD(v, i) * mom);                                             \
        vi = R(vi - R(lr * gi));                                              \
        ST(W(v), i, vi);                                                      \
        C pi = R(LD(p, i) + R(mm * vi));                                      \
        ST(W(p), i, R(pi - R(c * gi)));                                       \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_corrected_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),    \
                               const S *restrict g, S *restrict v,            \
                               CFP_OUT(S, v), C lr, C mom)                    \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C vi = R(LD(v, i) * mom);                                             \
        vi = R(vi - LD(g, i));                                                \
        ST(W(v), i, vi);                                                      \
        ST(W(p), i, R(LD(p, i) + R(lr * vi)));                                \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_rmsprop_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),      \
                             const S *restrict g, S *restrict ms,             \
                             CFP_OUT(S, ms), C alpha, C one_m_alpha, C eps,   \
                             C lr, int inside)                                \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C gi = LD(g, i);                                                      \
        C m = R(LD(ms, i) * alpha);                                           \
        m = R(m + R(R(one_m_alpha * gi) * gi));                               \
        ST(W(ms), i, m);                                                      \
        C denom = inside ? R(SQ(R(m + eps))) : R(R(SQ(m)) + eps);             \
        ST(W(p), i, R(LD(p, i) - R(R(lr * gi) / denom)));                     \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_graves_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),       \
                            const S *restrict g, S *restrict nn,              \
                            CFP_OUT(S, nn), S *restrict gg, CFP_OUT(S, gg),   \
                            S *restrict delta, CFP_OUT(S, delta), C alpha,    \
                            C one_m_alpha, C mom, C lr, C eps)                \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C gi = LD(g, i);                                                      \
        C ni = R(LD(nn, i) * alpha);                                          \
        ni = R(ni + R(R(one_m_alpha * gi) * gi));                             \
        ST(W(nn), i, ni);                                                     \
        C gs = R(LD(gg, i) * alpha);                                          \
        gs = R(gs + R(one_m_alpha * gi));                                     \
        ST(W(gg), i, gs);                                                     \
        C d = R(LD(delta, i) * mom);                                          \
        C den = R(SQ(R(R(ni - R(gs * gs)) + eps)));                           \
        d = R(d - R(R(lr * gi) / den));                                       \
        ST(W(delta), i, d);                                                   \
        ST(W(p), i, R(LD(p, i) + d));                                         \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_adagrad_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),      \
                             const S *restrict g, S *restrict h,              \
                             CFP_OUT(S, h), C lr, C eps)                      \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C gi = LD(g, i);                                                      \
        C hi = R(LD(h, i) + R(gi * gi));                                      \
        ST(W(h), i, hi);                                                      \
        ST(W(p), i, R(LD(p, i) - R(R(lr * gi) / R(R(SQ(hi)) + eps))));        \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_adadelta_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),     \
                              const S *restrict g, S *restrict msg,           \
                              CFP_OUT(S, msg), S *restrict msdx,              \
                              CFP_OUT(S, msdx), C rho, C one_m_rho, C eps)    \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C gi = LD(g, i);                                                      \
        C a = R(LD(msg, i) * rho);                                            \
        a = R(a + R(R(one_m_rho * gi) * gi));                                 \
        ST(W(msg), i, a);                                                     \
        C b = LD(msdx, i);                                                    \
        C dx = R(R(SQ(R(R(b + eps) / R(a + eps)))) * gi);                     \
        b = R(b * rho);                                                       \
        b = R(b + R(R(one_m_rho * dx) * dx));                                 \
        ST(W(msdx), i, b);                                                    \
        ST(W(p), i, R(LD(p, i) - dx));                                        \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_smorms3_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),      \
                             const S *restrict g, const S *restrict mem,      \
                             const S *restrict gs, const S *restrict g2s,     \
                             S *restrict mem_n, S *restrict gs_n,             \
                             S *restrict g2s_n, C lr, C eps)                  \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C gi = LD(g, i);                                                      \
        C me = LD(mem, i);                                                    \
        C r = R((C)1 / R(me + (C)1));                                         \
        C omr = R((C)1 - r);                                                  \
        C gn = R(R(omr * LD(gs, i)) + R(r * gi));                             \
        C g2n = R(R(omr * LD(g2s, i)) + R(R(r * gi) * gi));                   \
        C x = R(R(gn * gn) / R(g2n + eps));                                   \
        C mn = UMIN(x, lr);                                                   \
        ST(W(p), i, R(LD(p, i) - R(R(gi * mn) / R(R(SQ(g2n)) + eps))));       \
        ST(mem_n, i, R((C)1 + R(me * R((C)1 - x))));                          \
        ST(gs_n, i, gn);                                                      \
        ST(g2s_n, i, g2n);                                                    \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_msvag_##SUF(Py_ssize_t n, S *restrict p, CFP_OUT(S, p),        \
                           const S *restrict g, S *restrict m, CFP_OUT(S, m), \
                           S *restrict v, CFP_OUT(S, v), C omb, C ombp,       \
                           C omrho, C rho, C eta, C lr, C wdr)                \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        C gi = LD(g, i);                                                      \
        C mi = LD(m, i);                                                      \
        mi = R(mi + R(omb * R(gi - mi)));                                     \
        ST(W(m), i, mi);                                                      \
        C vi = LD(v, i);                                                      \
        vi = R(vi + R(omb * R(R(gi * gi) - vi)));                             \
        ST(W(v), i, vi);                                                      \
        C mt = R(mi / ombp);                                                  \
        C vt = R(vi / ombp);                                                  \
        C mt2 = R(mt * mt);                                                   \
        C s = R(R(vt - mt2) / omrho);                                         \
        C f = R(mt2 / R(mt2 + R(rho * s)));                                   \
        f = MAXF(f, (C)0);                                                    \
        f = MINF(f, (C)1);                                                    \
        if (f != f) f = (C)0;                                                 \
        C pi = LD(p, i);                                                      \
        C u = R(R(R(lr * mt) * f) + R(wdr * pi));                             \
        ST(W(p), i, R(pi - R(eta * u)));                                      \
    }                                                                         \
}

#define CFP_SQRTF(x) sqrtf(x)
#define CFP_SQRT(x) sqrt(x)

/* MAXF/MINF: numpy.clip's comparisons (msvag); UMIN: numpy.minimum
 * (smorms3). For float16 both are the npy_half flavours. */
#define CFP_DEFINE_DTYPES(V, W)                                               \
CFP_DEFINE_ALL(f32##V, float, float, CFP_LD_N, CFP_ST_N, W, CFP_ID,           \
               CFP_SQRTF, CFP_NMAX, CFP_NMIN, CFP_MINIMUM)                    \
CFP_DEFINE_ALL(f64##V, double, double, CFP_LD_N, CFP_ST_N, W, CFP_ID,         \
               CFP_SQRT, CFP_NMAX, CFP_NMIN, CFP_MINIMUM)                     \
CFP_DEFINE_ALL(f16##V, uint16_t, float, CFP_LD_H, CFP_ST_H, W, cfp_rh,        \
               CFP_SQRTF, CFP_HMAX, CFP_HMIN, CFP_HMIN)

CFP_DEFINE_DTYPES(, CFP_W_IN)
CFP_DEFINE_DTYPES(_out, CFP_W_OUT)

/* ---- Adam ----
 * m += b1 * (g - m); v += b2 * (g * g - v); [vhat = maximum(vhat, v)]
 * step = alpha_t / (sqrt(vhat) + eps); [step = clip(step, lower, upper)]
 * a == 1: p += b * (step * m)  else: p[...] = a * p + b * (step * m)   */

/* The body specialised for the flags has_vhat H, bound B, a_is_one A. */
#define CFP_ADAM_CASE(SUF, H, B, A)                                           \
    case H * 4 + B * 2 + A:                                                   \
        cfp_adam_body_##SUF(n, p, p_o, g, m, m_o, v, v_o, vhat, vhat_o, b1,   \
                            b2, alpha_t, eps, lower, upper, a, b, H, B, A);   \
        break;

#define CFP_DEFINE_ADAM(SUF, T, SQ, W)                                        \
static inline __attribute__((always_inline)) void                             \
cfp_adam_body_##SUF(Py_ssize_t n, T *restrict p, CFP_OUT(T, p),               \
                    const T *restrict g, T *restrict m, CFP_OUT(T, m),        \
                    T *restrict v, CFP_OUT(T, v), T *restrict vhat,           \
                    CFP_OUT(T, vhat), T b1, T b2, T alpha_t, T eps, T lower,  \
                    T upper, T a, T b, const int has_vhat, const int bound,   \
                    const int a_is_one)                                       \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        T gi = g[i];                                                          \
        T mi = m[i];                                                          \
        mi = mi + b1 * (gi - mi);                                             \
        W(m)[i] = mi;                                                         \
        T vi = v[i];                                                          \
        vi = vi + b2 * (gi * gi - vi);                                        \
        W(v)[i] = vi;                                                         \
        T vh = vi;                                                            \
        if (has_vhat) {                                                       \
            T old = vhat[i];                                                  \
            vh = CFP_MAXIMUM(old, vi);                                        \
            W(vhat)[i] = vh;                                                  \
        }                                                                     \
        T step = alpha_t / (SQ(vh) + eps);                                    \
        if (bound) {                                                          \
            step = CFP_NMAX(step, lower);                                     \
            step = CFP_NMIN(step, upper);                                     \
        }                                                                     \
        T y = b * (step * mi);                                                \
        if (a_is_one) {                                                       \
            W(p)[i] = p[i] + y;                                               \
        } else {                                                              \
            W(p)[i] = a * p[i] + y;                                           \
        }                                                                     \
    }                                                                         \
}                                                                             \
                                                                              \
CFP_KERNEL cfp_adam_##SUF(Py_ssize_t n, T *restrict p, CFP_OUT(T, p),         \
                          const T *restrict g, T *restrict m, CFP_OUT(T, m),  \
                          T *restrict v, CFP_OUT(T, v), T *restrict vhat,     \
                          CFP_OUT(T, vhat), T b1, T b2, T alpha_t, T eps,     \
                          int bound, T lower, T upper, int a_is_one, T a,     \
                          T b)                                                \
{                                                                             \
    int k = (vhat != NULL) * 4 + (bound != 0) * 2 + (a_is_one != 0);          \
    switch (k) {                                                              \
    CFP_ADAM_CASE(SUF, 0, 0, 0)                                               \
    CFP_ADAM_CASE(SUF, 0, 0, 1)                                               \
    CFP_ADAM_CASE(SUF, 0, 1, 0)                                               \
    CFP_ADAM_CASE(SUF, 0, 1, 1)                                               \
    CFP_ADAM_CASE(SUF, 1, 0, 0)                                               \
    CFP_ADAM_CASE(SUF, 1, 0, 1)                                               \
    CFP_ADAM_CASE(SUF, 1, 1, 0)                                               \
    CFP_ADAM_CASE(SUF, 1, 1, 1)                                               \
    }                                                                         \
}

CFP_DEFINE_ADAM(f32, float, sqrtf, CFP_W_IN)
CFP_DEFINE_ADAM(f64, double, sqrt, CFP_W_IN)
CFP_DEFINE_ADAM(f32_out, float, sqrtf, CFP_W_OUT)
CFP_DEFINE_ADAM(f64_out, double, sqrt, CFP_W_OUT)

/* float16 parameter: grad is cast to float32, the states are float16, the
 * arithmetic is float32; a float16 array op float32 array is a float32
 * operation, rounded to float16 when stored into a float16 array. The one
 * float16 operation is `a * param` (a Python float with a float16 array),
 * with `a16` the scalar as float16. */
#define CFP_DEFINE_ADAM_F16(SUF, W)                                           \
static void cfp_adam_##SUF(Py_ssize_t n, uint16_t *restrict p,                \
                           CFP_OUT(uint16_t, p), const uint16_t *restrict g,  \
                           uint16_t *restrict m, CFP_OUT(uint16_t, m),        \
                           uint16_t *restrict v, CFP_OUT(uint16_t, v),        \
                           uint16_t *restrict vhat, CFP_OUT(uint16_t, vhat),  \
                           float b1, float b2, float alpha_t, float eps,      \
                           int bound, float lower, float upper, int a_is_one, \
                           float a16, float b)                                \
{                                                                             \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        float gi = cfp_h2f(g[i]);                                             \
        float mi = cfp_h2f(m[i]);                                             \
        mi = cfp_rh(mi + b1 * (gi - mi));                                     \
        W(m)[i] = cfp_f2h(mi);                                                \
        float vi = cfp_h2f(v[i]);                                             \
        vi = cfp_rh(vi + b2 * (gi * gi - vi));                                \
        W(v)[i] = cfp_f2h(vi);                                                \
        float vh = vi;                                                        \
        if (vhat) {                                                           \
            float old = cfp_h2f(vhat[i]);                                     \
            vh = CFP_HMAX(old, vi);                                           \
            W(vhat)[i] = cfp_f2h(vh);                                         \
        }                                                                     \
        float step = alpha_t / (sqrtf(vh) + eps);                             \
        if (bound) {                                                          \
            step = CFP_NMAX(step, lower);                                     \
            step = CFP_NMIN(step, upper);                                     \
        }                                                                     \
        float y = b * (step * mi);                                            \
        float pi = cfp_h2f(p[i]);                                             \
        if (a_is_one) {                                                       \
            W(p)[i] = cfp_f2h(pi + y);                                        \
        } else {                                                              \
            W(p)[i] = cfp_f2h(cfp_rh(a16 * pi) + y);                          \
        }                                                                     \
    }                                                                         \
}

CFP_DEFINE_ADAM_F16(f16, CFP_W_IN)
CFP_DEFINE_ADAM_F16(f16_out, CFP_W_OUT)

/* ---- the kernel table: one entry per rule and dtype ----
 * Every entry takes the same arguments: p, the arrays in the order the
 * rule registers them (parameter, gradient, states, then any outputs; for
 * WeightDecay, the gradient it updates, then the parameter); s,
 * the scalars, already rounded to values of the compute type; f, the
 * flags. An entry converts them to its kernel's own arguments. */

typedef void (*cfp_kernel)(Py_ssize_t n, char *const *p, char *const *o,
                           const double *s, const int *f);

enum { CFP_F16, CFP_F32, CFP_F64, CFP_N_DTYPES };

enum { CFP_SGD, CFP_MOMENTUM, CFP_CORRECTED, CFP_NESTEROV, CFP_RMSPROP,
       CFP_GRAVES, CFP_ADAGRAD, CFP_ADADELTA, CFP_SMORMS3, CFP_MSVAG,
       CFP_ADAM, CFP_WDECAY, CFP_N_RULES };

#define CFP_ENTRY(ATTR, NAME, SUF, ...)                                       \
ATTR static void cfp_entry_##NAME##_##SUF(Py_ssize_t n, char *const *p,       \
                                     char *const *o, const double *s,         \
                                     const int *f)                            \
{                                                                             \
    (void)o;                                                                  \
    (void)s;                                                                  \
    (void)f;                                                                  \
    cfp_##NAME##_##SUF(n, __VA_ARGS__);                                       \
}

/* S: storage type, C: compute type (as in CFP_DEFINE_ALL). Each array the
 * kernel updates is followed by its output: o[0] the parameter's, then the
 * states' in order. */
#define CFP_DEFINE_ENTRIES(A, SUF, S, C)                                      \
CFP_ENTRY(A, sgd, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (C)s[0])              \
CFP_ENTRY(A, wdecay, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (C)s[0])           \
CFP_ENTRY(A, momentum, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],       \
          (S *)o[1], (C)s[0], (C)s[1])                                        \
CFP_ENTRY(A, corrected, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],      \
          (S *)o[1], (C)s[0], (C)s[1])                                        \
CFP_ENTRY(A, nesterov, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],       \
          (S *)o[1], (C)s[0], (C)s[1], (C)s[2], (C)s[3])                      \
CFP_ENTRY(A, rmsprop, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],        \
          (S *)o[1], (C)s[0], (C)s[1], (C)s[2], (C)s[3], f[0])                \
CFP_ENTRY(A, graves, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],         \
          (S *)o[1], (S *)p[3], (S *)o[2], (S *)p[4], (S *)o[3], (C)s[0],     \
          (C)s[1], (C)s[2], (C)s[3], (C)s[4])                                 \
CFP_ENTRY(A, adagrad, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],        \
          (S *)o[1], (C)s[0], (C)s[1])                                        \
CFP_ENTRY(A, adadelta, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],       \
          (S *)o[1], (S *)p[3], (S *)o[2], (C)s[0], (C)s[1], (C)s[2])         \
CFP_ENTRY(A, smorms3, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],        \
          (S *)p[3], (S *)p[4], (S *)p[5], (S *)p[6], (S *)p[7], (C)s[0],     \
          (C)s[1])                                                            \
CFP_ENTRY(A, msvag, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],          \
          (S *)o[1], (S *)p[3], (S *)o[2], (C)s[0], (C)s[1], (C)s[2],         \
          (C)s[3], (C)s[4], (C)s[5], (C)s[6])                                 \
CFP_ENTRY(A, adam, SUF, (S *)p[0], (S *)o[0], (S *)p[1], (S *)p[2],           \
          (S *)o[1], (S *)p[3], (S *)o[2], (S *)p[4], (S *)o[3], (C)s[0],     \
          (C)s[1], (C)s[2], (C)s[3], f[0], (C)s[4], (C)s[5], f[1], (C)s[6],   \
          (C)s[7])

CFP_DEFINE_ENTRIES(, f16, uint16_t, float)
CFP_DEFINE_ENTRIES(CFP_CLONES, f32, float, float)
CFP_DEFINE_ENTRIES(CFP_CLONES, f64, double, double)
CFP_DEFINE_ENTRIES(, f16_out, uint16_t, float)
CFP_DEFINE_ENTRIES(CFP_CLONES, f32_out, float, float)
CFP_DEFINE_ENTRIES(CFP_CLONES, f64_out, double, double)

#define CFP_ROW(RULE, NAME, V)                                                \
    [RULE] = {[CFP_F16] = cfp_entry_##NAME##_f16##V,                          \
              [CFP_F32] = cfp_entry_##NAME##_f32##V,                          \
              [CFP_F64] = cfp_entry_##NAME##_f64##V}

#define CFP_TABLE(V)                                                          \
    {                                                                         \
        CFP_ROW(CFP_SGD, sgd, V),                                             \
        CFP_ROW(CFP_MOMENTUM, momentum, V),                                   \
        CFP_ROW(CFP_CORRECTED, corrected, V),                                 \
        CFP_ROW(CFP_NESTEROV, nesterov, V),                                   \
        CFP_ROW(CFP_RMSPROP, rmsprop, V),                                     \
        CFP_ROW(CFP_GRAVES, graves, V),                                       \
        CFP_ROW(CFP_ADAGRAD, adagrad, V),                                     \
        CFP_ROW(CFP_ADADELTA, adadelta, V),                                   \
        CFP_ROW(CFP_SMORMS3, smorms3, V),                                     \
        CFP_ROW(CFP_MSVAG, msvag, V),                                         \
        CFP_ROW(CFP_ADAM, adam, V),                                           \
        CFP_ROW(CFP_WDECAY, wdecay, V),                                       \
    }

/* In place, and into the outputs o (the old values untouched). */
static const cfp_kernel cfp_kernels[CFP_N_RULES][CFP_N_DTYPES] =
    CFP_TABLE();
static const cfp_kernel cfp_kernels_out[CFP_N_RULES][CFP_N_DTYPES] =
    CFP_TABLE(_out);

/* ---- giving the update back to stock ----
 * Stock's NumPy calls warn, raise or call back on floating-point
 * exceptions as errstate says, partway through an update; which NaN a
 * NumPy operation keeps when both operands are NaN depends on its loop's
 * operand order. So where the kernel raises a watched flag, or leaves a
 * NaN in the parameter (every NaN in a state reaches the parameter), the
 * update is stock's to redo, from the old values: small updates run on a
 * saved copy of them (cfp_run); large ones compute each chunk's new values
 * into a scratch buffer first, the old values staying in place until the
 * chunk is known to be clean (cfp_check, cfp_run_chunks). */

/* Plain loops: a memcpy here would be a `rep movsb` that callgrind counts
 * byte by byte. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) CFP_CLONES
static void cfp_copy(char *restrict dst, const char *restrict src,
                     Py_ssize_t nbytes)
{
    Py_ssize_t i, n8 = nbytes / 8;
    for (i = 0; i < n8; i++) {
        uint64_t x;
        memcpy(&x, src + 8 * i, 8);
        memcpy(dst + 8 * i, &x, 8);
    }
    for (i = 8 * n8; i < nbytes; i++) {
        dst[i] = src[i];
    }
}

CFP_CLONES static int cfp_has_nan(int dtype, const char *p, Py_ssize_t n)
{
    Py_ssize_t i;
    int acc = 0;
    if (dtype == CFP_F16) {
        const uint16_t *h = (const uint16_t *)p;
        for (i = 0; i < n; i++) {
            acc |= (h[i] & 0x7fffu) > 0x7c00u;
        }
    } else if (dtype == CFP_F32) {
        const uint32_t *u = (const uint32_t *)p;
        for (i = 0; i < n; i++) {
            acc |= (u[i] & 0x7fffffffu) > 0x7f800000u;
        }
    } else {
        const uint64_t *u = (const uint64_t *)p;
        for (i = 0; i < n; i++) {
            acc |= (u[i] & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL;
        }
    }
    return acc;
}

enum { CFP_DONE = 0, CFP_RAISED = 1, CFP_NAN = 2 };

/* For the in-place kernels, whose outputs are unused. */
static char *const cfp_no_out[8];

/* Runs kernel `rule` for dtype `dtype` on the operands `p`, first saving
 * the `nw` arrays it writes in place, `w`, of `nbytes` each, to `save`.
 * Returns CFP_DONE, or CFP_RAISED / CFP_NAN with the old values back. */
static int cfp_run(int rule, int dtype, Py_ssize_t n, char *const *p,
                   const double *s, const int *f, int nw, char *const *w,
                   Py_ssize_t nbytes, char *save, int watch)
{
    int k, r = CFP_DONE;
    for (k = 0; k < nw; k++) {
        cfp_copy(save + k * nbytes, w[k], nbytes);
    }
    if (watch) {
        cfp_clear_sse_flags(watch);
    }
    cfp_kernels[rule][dtype](n, p, cfp_no_out, s, f);
    if (watch && cfp_sse_flags(watch)) {
        r = CFP_RAISED;
    } else if (cfp_has_nan(dtype, p[0], n)) {
        r = CFP_NAN;
    }
    if (r != CFP_DONE) {
        for (k = 0; k < nw; k++) {
            cfp_copy(w[k], save + k * nbytes, nbytes);
        }
    }
    return r;
}

/* The kernel in place, after cfp_check found nothing for stock. */
static void cfp_run_in_place(int rule, int dtype, Py_ssize_t n,
                             char *const *p, const double *s, const int *f)
{
    cfp_kernels[rule][dtype](n, p, cfp_no_out, s, f);
}

/* Elements per chunk of cfp_check and cfp_run_chunks: the chunk of every
 * stream and its new values stay in L1. */
#ifndef CFP_CHUNK_ELEMENTS
#define CFP_CHUNK_ELEMENTS 256
#endif
enum { CFP_CHUNK = CFP_CHUNK_ELEMENTS, CFP_MAX_OPERANDS = 8 };
/* The scratch outputs are this many bytes further apart than a chunk, so
 * that they are not a multiple of 4 KiB apart (loads from one would wait
 * on stores to another whose address matches in the low 12 bits). */
enum { CFP_SKEW = 320 };

/* Bytes of scratch that cfp_check and cfp_run_chunks take for `nw`
 * outputs of `itemsize` bytes. */
static inline Py_ssize_t cfp_scratch_bytes(int nw, int itemsize)
{
    return (Py_ssize_t)nw * ((Py_ssize_t)CFP_CHUNK * itemsize + CFP_SKEW);
}

/* Runs the kernel on the chunk of `m` elements at `off`, its new values of
 * the `nw` arrays it updates going to `o` (in `scratch`). Returns what
 * stock must redo for the chunk: CFP_DONE, CFP_RAISED (a watched flag
 * raised) or CFP_NAN (a NaN in the new parameter). */
static inline int cfp_chunk_out(int rule, int dtype, Py_ssize_t off,
                                Py_ssize_t m, char *const *p,
                                const double *s, const int *f, int nw,
                                int itemsize, char *scratch, char **o,
                                int watch)
{
    char *q[CFP_MAX_OPERANDS];
    int i;
    for (i = 0; i < CFP_MAX_OPERANDS; i++) {
        q[i] = p[i] ? p[i] + off * itemsize : NULL;
        o[i] = i < nw ? scratch + i * ((Py_ssize_t)CFP_CHUNK * itemsize
                                       + CFP_SKEW) : NULL;
    }
    cfp_kernels_out[rule][dtype](m, q, o, s, f);
    if (watch && cfp_sse_flags(watch)) {
        return CFP_RAISED;
    }
    return cfp_has_nan(dtype, o[0], m) ? CFP_NAN : CFP_DONE;
}

/* What cfp_run would return for the same arguments, found without
 * writing the `nw` arrays it updates in place: the kernel runs chunk by
 * chunk, their new values going to `scratch` (cfp_scratch_bytes); other
 * arrays it writes are fresh outputs, which the run in place writes
 * again. The kernels are elementwise, so each element's bits
 * are those of the run in place. `p` has CFP_MAX_OPERANDS entries, NULL
 * where unused. */
static int cfp_check(int rule, int dtype, Py_ssize_t n, char *const *p,
                     const double *s, const int *f, int nw, int itemsize,
                     char *scratch, int watch)
{
    char *o[CFP_MAX_OPERANDS];
    Py_ssize_t off, m;
    if (watch) {
        cfp_clear_sse_flags(watch);
    }
    for (off = 0; off < n; off += CFP_CHUNK) {
        m = n - off < CFP_CHUNK ? n - off : CFP_CHUNK;
        if (cfp_chunk_out(rule, dtype, off, m, p, s, f, nw, itemsize,
                          scratch, o, 0) == CFP_NAN) {
            return CFP_NAN;
        }
    }
    if (watch && cfp_sse_flags(watch)) {
        return CFP_RAISED;
    }
    return CFP_DONE;
}

/* The one pass, where no watched flag can raise or call back (the caller
 * decides): chunk by chunk, the new values go to `scratch`
 * (cfp_scratch_bytes) and, where the chunk raised no watched flag and
 * left no NaN in the parameter, are copied into the `nw` arrays `w`, so
 * that each array is read and written once. Returns CFP_DONE, or
 * CFP_RAISED / CFP_NAN for the first chunk that did: that chunk and the
 * ones after it hold their old values, the ones before it are final (the
 * kernels are elementwise: their bits are stock's), and *done is the
 * number of elements they hold. */
static int cfp_run_chunks(int rule, int dtype, Py_ssize_t n, char *const *p,
                          const double *s, const int *f, int nw,
                          char *const *w, int itemsize, char *scratch,
                          int watch, Py_ssize_t *done)
{
    char *o[CFP_MAX_OPERANDS];
    Py_ssize_t off, m;
    int i, r;
    /* Each chunk that passes leaves the watched flags clear for the
     * next: cleared once. */
    if (watch) {
        cfp_clear_sse_flags(watch);
    }
    for (off = 0; off < n; off += CFP_CHUNK) {
        m = n - off < CFP_CHUNK ? n - off : CFP_CHUNK;
        r = cfp_chunk_out(rule, dtype, off, m, p, s, f, nw, itemsize,
                          scratch, o, watch);
        if (r != CFP_DONE) {
            *done = off;
            return r;
        }
        for (i = 0; i < nw; i++) {
            cfp_copy(w[i] + off * itemsize, o[i], m * itemsize);
        }
    }
    *done = n;
    return CFP_DONE;
}

#endif
