"""The stand-in for ``numpy.distutils.system_info`` that Chainer 7.8.1's
import needs: supplied only where NumPy has none (Python 3.12), with what
Chainer uses of it."""
import importlib.util
import subprocess
import sys
import textwrap

import numpy
import pytest

from chainer_fastpath import _numpy_distutils


def _python(code):
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def _numpy_lacks_distutils():
    """Asked in a fresh interpreter: this one may hold the stand-in."""
    res = _python('''
        import importlib.util
        print(importlib.util.find_spec('numpy.distutils') is None)
    ''')
    assert res.returncode == 0, res.stderr
    return res.stdout.strip() == 'True'


def _stand_in(name):
    spec = _numpy_distutils.FINDER.find_spec(name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_chainer_imports_after_chainer_fastpath_stand_in_only_if_missing():
    res = _python('''
        import sys
        import chainer_fastpath
        import chainer
        from chainer_fastpath import _numpy_distutils
        module = sys.modules['numpy.distutils.system_info']
        print(module.__spec__.loader is _numpy_distutils.FINDER)
    ''')
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(_numpy_lacks_distutils())


def test_install_adds_the_finder_once():
    _numpy_distutils.install()
    assert sys.meta_path.count(_numpy_distutils.FINDER) == 1


@pytest.mark.skipif(sys.version_info < (3, 12),
                    reason='NumPy ships numpy.distutils before Python 3.12')
def test_stock_chainer_does_not_import_without_it():
    res = _python('import chainer')
    assert res.returncode == 1
    assert "No module named 'numpy.distutils'" in res.stderr


def test_only_the_names_chainer_imports_are_found():
    finder = _numpy_distutils.FINDER
    assert finder.find_spec('numpy.distutils').submodule_search_locations \
        == []
    assert finder.find_spec('numpy.distutils.system_info') is not None
    assert finder.find_spec('numpy.distutils.misc_util') is None
    assert finder.find_spec('numpy') is None
    assert not hasattr(_stand_in('numpy.distutils'), 'system_info')


@pytest.mark.parametrize('blas, expected', [
    ('openblas64', {}),
    ('accelerate', {'extra_link_args': ['-Wl,-framework',
                                        '-Wl,Accelerate']}),
])
def test_get_info_reports_accelerate_as_chainer_reads_it(
        monkeypatch, blas, expected):
    config = {'Build Dependencies': {'blas': {'name': blas}}}
    monkeypatch.setattr(numpy.__config__, 'CONFIG', config, raising=False)
    system_info = _stand_in('numpy.distutils.system_info')
    assert system_info.get_info('blas_opt') == expected
    assert system_info.get_info('lapack_opt') == {}
