"""``python -m chainer_fastpath doctor``: every section, a module that does
not load reported as such, and the OpenBLAS core-type advice."""
import io
import subprocess
import sys

import pytest

import chainer_fastpath
from chainer_fastpath import _doctor
from chainer_fastpath import functions

SECTIONS = ['Python', 'Packages', 'Compiled modules', 'Fast path', 'BLAS',
            'MPI']
AVX512 = {'sse3', 'avx', 'avx2', 'fma', 'avx512f', 'avx512cd', 'avx512bw',
          'avx512dq', 'avx512vl'}


def test_cli_prints_every_section():
    res = subprocess.run([sys.executable, '-m', 'chainer_fastpath', 'doctor'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    titles = [line for line in res.stdout.splitlines()
              if not line.startswith(' ')]
    assert titles == SECTIONS
    assert 'FAILED' not in res.stdout


def test_every_module_is_listed_and_loaded():
    modules = dict(dict(_doctor.sections())['Compiled modules'])
    for name in functions.MODULES:
        assert (modules['chainer_fastpath.functions.' + name]
                == 'ok (compiled)')
    assert modules['chainer_fastpath._fast_call'] == 'ok (compiled)'
    assert modules['chainer_fastpath.optimizers._kernels'] == 'ok (compiled)'


def test_a_module_that_fails_to_load_is_reported(monkeypatch):
    # None in sys.modules makes the import fail as a missing .so would.
    monkeypatch.setitem(sys.modules, 'chainer_fastpath._unchain', None)
    out = io.StringIO()
    assert _doctor.main(file=out) == 1
    line, = [line for line in out.getvalue().splitlines()
             if 'chainer_fastpath._unchain' in line]
    assert 'FAILED: ModuleNotFoundError' in line
    assert 'ok (compiled)' in out.getvalue()


def test_fast_path_section_shows_the_enabled_parts():
    def enabled_now():
        return dict(dict(_doctor.sections())['Fast path'])['enabled now']

    assert enabled_now() == 'none'
    with chainer_fastpath.enabled(optimizers=False):
        assert enabled_now() == 'forward, backward'


@pytest.mark.parametrize('corename, flags, core', [
    ('Prescott', AVX512, 'SkylakeX'),
    ('Haswell', AVX512, 'SkylakeX'),
    ('Prescott', {'avx', 'avx2', 'fma'}, 'Haswell'),
    ('Nehalem', {'avx'}, 'Sandybridge'),
])
def test_advice_names_the_core_type_the_cpu_allows(corename, flags, core):
    advice = _doctor.coretype_advice(corename, flags, 'DYNAMIC_ARCH')
    assert 'OPENBLAS_CORETYPE={}`'.format(core) in advice


@pytest.mark.parametrize('corename, flags', [
    ('SkylakeX', AVX512),
    ('Cooperlake', AVX512),
    ('Zen', {'avx', 'avx2', 'fma'}),
    ('Prescott', {'sse3'}),
])
def test_no_advice_when_the_core_type_fits_the_cpu(corename, flags):
    assert _doctor.coretype_advice(corename, flags, 'DYNAMIC_ARCH') is None


def test_advice_without_dynamic_arch_does_not_suggest_the_variable():
    advice = _doctor.coretype_advice('Prescott', AVX512, 'OpenBLAS Prescott')
    assert 'OPENBLAS_CORETYPE' not in advice
    assert 'AVX-512' in advice
