/*
 * CFP_CLONES: a loop built for AVX-512 and AVX2 as well as the baseline,
 * chosen by the CPU when the module loads (gcc's target_clones, on x86-64
 * Linux; elsewhere nothing). The same IEEE operations in the same order,
 * on wider vectors: setup.py's -ffp-contract=off keeps out FMA.
 */
#ifndef CHAINER_FASTPATH_CLONES_H
#define CHAINER_FASTPATH_CLONES_H

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)            \
    && defined(__has_attribute)
#if __has_attribute(target_clones)
#define CFP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef CFP_CLONES
#define CFP_CLONES
#endif

#endif
