"""``python -m chainer_fastpath run SCRIPT ARGS`` behaves like ``python
SCRIPT ARGS``, with the fast path on."""
import subprocess
import sys
import textwrap

import pytest


def _run(args, cwd):
    return subprocess.run([sys.executable, '-m', 'chainer_fastpath'] + args,
                          cwd=str(cwd), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def _python(args, cwd):
    return subprocess.run([sys.executable] + args, cwd=str(cwd),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


@pytest.fixture
def script(tmp_path):
    (tmp_path / 'helper_mod.py').write_text('VALUE = 42\n')
    path = tmp_path / 'prog.py'
    path.write_text(textwrap.dedent('''
        import sys
        # First, as on Python 3.12 it is what lets Chainer import there.
        import chainer_fastpath
        import chainer
        import helper_mod

        def main():
            print('name', __name__)
            print('argv', sys.argv[1:])
            print('file', __file__.endswith('prog.py'))
            print('helper', helper_mod.VALUE)
            print('enabled', chainer_fastpath.is_enabled())
            if '--fail' in sys.argv:
                raise ValueError('deliberate failure')
            sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)

        if __name__ == '__main__':
            main()
    '''))
    return path


def test_run_sets_name_argv_and_script_folder(script, tmp_path):
    res = _run(['run', str(script), '0', '--x', 'y'], tmp_path.parent)
    assert res.returncode == 0, res.stderr
    assert 'name __main__' in res.stdout
    assert "argv ['0', '--x', 'y']" in res.stdout
    assert 'file True' in res.stdout
    assert 'helper 42' in res.stdout
    assert 'enabled True' in res.stdout


def test_run_keeps_exit_code(script, tmp_path):
    assert _run(['run', str(script), '3'], tmp_path).returncode == 3
    assert _python([str(script), '3'], tmp_path).returncode == 3


def test_run_exception_traceback_matches_python(script, tmp_path):
    ours = _run(['run', str(script), '0', '--fail'], tmp_path)
    plain = _python([str(script), '0', '--fail'], tmp_path)
    assert ours.returncode == plain.returncode == 1
    assert ours.stderr == plain.stderr
    assert 'ValueError: deliberate failure' in ours.stderr


def test_run_missing_script_is_one_clear_line(tmp_path):
    res = _run(['run', str(tmp_path / 'nope.py')], tmp_path)
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    assert 'nope.py' in lines[0]


def test_run_report_goes_to_stderr(script, tmp_path):
    res = _run(['run', '--report', str(script), '0'], tmp_path)
    assert res.returncode == 0
    assert 'chainer_fastpath: enabled' in res.stderr
    assert 'nothing ran through the patched entry points' in res.stderr
    assert 'chainer_fastpath: enabled' not in res.stdout


def test_run_respects_env_switch(script, tmp_path, monkeypatch):
    monkeypatch.setenv('CHAINER_FASTPATH', '0')
    res = _run(['run', str(script), '0'], tmp_path)
    assert res.returncode == 0
    assert 'enabled False' in res.stdout


@pytest.mark.parametrize('options', [[], ['--report']])
def test_run_does_not_import_the_benchmark(tmp_path, options):
    path = tmp_path / 'probe.py'
    # Checked at exit, after the report too.
    path.write_text(textwrap.dedent('''
        import atexit
        import sys

        def bench_modules():
            print('bench modules', sorted(
                m for m in sys.modules if m == 'chainer_fastpath.bench'
                or m.startswith('chainer_fastpath.bench.')))

        atexit.register(bench_modules)
    '''))
    res = _run(['run'] + options + [str(path)], tmp_path)
    assert res.returncode == 0, res.stderr
    assert 'bench modules []' in res.stdout.splitlines()


def test_report_lists_the_patch_table_and_the_compiled_functions(tmp_path):
    res = _run(['report'], tmp_path)
    assert res.returncode == 0, res.stderr
    lines = [line.split() for line in res.stdout.splitlines()]
    assert ['forward', 'FunctionNode.apply'] in lines
    assert ['backward', 'Variable.backward'] in lines
    assert ['LinearFunction', 'forward,', 'nodeless,', 'backward,',
            'type_check'] in lines
    assert ['EmbedIDFunction', 'forward,', 'backward,', 'backward_into,',
            'type_check'] in lines
    assert ['Reshape', 'forward,', 'backward,', 'type_check'] in lines
    assert ['Transpose', 'forward,', 'backward,', 'type_check'] in lines
    assert ['ArgMax', 'forward,', 'type_check'] in lines
