"""The pytest plugin enables the fast path for a whole session."""
import subprocess
import sys


def test_plugin_enables_for_the_session(tmp_path):
    (tmp_path / 'test_inner.py').write_text(
        'import chainer, chainer_fastpath\n'
        'from chainer_fastpath import _patch\n'
        'def test_on():\n'
        '    assert chainer_fastpath.is_enabled()\n'
        '    row = _patch.table()[0]\n'
        '    assert row.owner.__dict__[row.attribute] is row.replacement\n')
    res = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p',
         'chainer_fastpath.testing.pytest_plugin', '-p', 'no:cacheprovider',
         '--fastpath-report', str(tmp_path / 'test_inner.py')],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    assert res.returncode == 0, res.stdout
    assert '1 passed' in res.stdout
    assert 'chainer_fastpath: enabled' in res.stdout


def test_without_plugin_stays_stock(tmp_path):
    (tmp_path / 'test_inner.py').write_text(
        'import chainer_fastpath\n'
        'def test_off():\n'
        '    assert not chainer_fastpath.is_enabled()\n')
    res = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         str(tmp_path / 'test_inner.py')],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    assert res.returncode == 0, res.stdout
