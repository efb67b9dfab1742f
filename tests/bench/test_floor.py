"""The arithmetic floor: which profiled functions count as arithmetic."""
import pytest

from chainer_fastpath.bench import floor

UMATH = '_multiarray_umath.cpython-311-x86_64-linux-gnu.so'
ARITHMETIC = [
    ('libopenblas64_p-r0-0cf96a72.3.23.dev.so', 'sgemm_kernel_PRESCOTT'),
    ('libm.so.6', '__ieee754_log_fma'),
    (UMATH, 'FLOAT_add_FMA3__AVX2'),
    (UMATH, 'simd_exp_FLOAT'),
    (UMATH, 'DOUBLE_pairwise_sum'),
    (UMATH, '_aligned_contig_cast_double_to_float'),
    (UMATH, '_contig_to_contig'),
    (UMATH, 'PyArray_Where'),
    (UMATH, 'PyUFunc_ff_f'),
    (UMATH, 'PyUFunc_ff_f_As_dd_d'),
    (UMATH, 'npy_logaddexpf'),
    (UMATH, 'npy_log1p'),
    (UMATH, 'mapiter_get'),
    (UMATH, 'mapiter_trivial_set'),
    ('libc.so.6', '__memmove_avx512_unaligned_erms'),
    ('mtrand.cpython-311-x86_64-linux-gnu.so', 'legacy_gauss.part.0'),
    ('_kernels.cpython-311-x86_64-linux-gnu.so', 'cfp_entry_adam_f32'),
    ('sum.cpython-311-x86_64-linux-gnu.so', 'cfp_sum_middle_f'),
    ('lstm.cpython-311-x86_64-linux-gnu.so', 'cfp_lstm_grad_f.avx2'),
    ('softmax_cross_entropy.cpython-311-x86_64-linux-gnu.so',
     'cfp_sce_shifted_d.avx512f'),
]
OVERHEAD = [
    ('libpython3.11.so.1.0', '_PyEval_EvalFrameDefault'),
    ('libpython3.11.so.1.0', 'gc_collect_main'),
    (UMATH, 'ufunc_generic_fastcall'),
    (UMATH, 'PyArray_NewFromDescr_int'),
    (UMATH, 'LONG_setitem'),
    (UMATH, 'PyUFunc_GenericFunction'),
    (UMATH, 'PyUFunc_Reduce'),
    (UMATH, 'PyUFunc_OO_O'),
    (UMATH, 'npy_alloc_cache_dim'),
    (UMATH, 'npy_clear_floatstatus_barrier'),
    (UMATH, 'npyiter_buffered_iternext'),
    ('libc.so.6', '_int_malloc'),
    ('_fast_call.cpython-311-x86_64-linux-gnu.so',
     '__pyx_pw_16chainer_fastpath_10_fast_call_5apply'),
    ('[kernel.kallsyms]', 'exc_page_fault'),
    ('libm.so.6', 'fetestexcept'),
    ('libm.so.6', 'feclearexcept'),
    ('sum.cpython-311-x86_64-linux-gnu.so', 'cfp_getattr_slow'),
    ('linear.cpython-311-x86_64-linux-gnu.so', 'cfp_setattr_slow.constprop.0'),
    ('_ndarray.cpython-311-x86_64-linux-gnu.so', 'cfp_new_shaped'),
    ('_kernels.cpython-311-x86_64-linux-gnu.so', 'cfp_has_nan.avx2'),
    ('embed_id.cpython-311-x86_64-linux-gnu.so',
     'cfp_indices_in_range.avx2'),
    ('lstm.cpython-311-x86_64-linux-gnu.so',
     '__pyx_f_16chainer_fastpath_9functions_3rnn_4lstm_fused_grad'),
]


@pytest.mark.parametrize('dso,symbol', ARITHMETIC)
def test_arithmetic(dso, symbol):
    assert floor.is_arithmetic(dso, symbol)


@pytest.mark.parametrize('dso,symbol', OVERHEAD)
def test_overhead(dso, symbol):
    assert not floor.is_arithmetic(dso, symbol)


def test_floors_are_skipped_with_the_reason(monkeypatch):
    from chainer_fastpath.bench import runner
    monkeypatch.setattr(floor, 'available', lambda: 'perf is not installed')
    results = {'dqn': {'stock': [1.0], 'patched': [1.0]},
               'vae': {'skipped': 'no'}}
    runner.measure_floors(['dqn', 'vae'], results)
    assert results['dqn']['floor_skipped'] == 'perf is not installed'
    assert 'floor_skipped' not in results['vae']


def test_share_of_a_real_program():
    if floor.available():
        pytest.skip(floor.available())
    from chainer_fastpath.bench import runner
    results = {'dqn': {'stock': [1.0], 'patched': [1.0]}}
    runner.measure_floors(['dqn'], results)
    assert 0 < results['dqn']['arithmetic'] < 1
    assert results['dqn']['samples'] > 0
