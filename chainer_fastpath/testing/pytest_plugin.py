"""pytest plugin: ``pytest -p chainer_fastpath.testing.pytest_plugin``.

Enables the fast path for the whole test session, so any suite runs against
the patch. ``--fastpath-report`` prints the counters at the end.
"""


def pytest_addoption(parser):
    parser.addoption('--fastpath-report', action='store_true',
                     help='print chainer_fastpath counters at the end')


def pytest_configure(config):
    import chainer_fastpath

    chainer_fastpath.enable()
    config._chainer_fastpath_enabled = chainer_fastpath.is_enabled()


def pytest_report_header(config):
    on = getattr(config, '_chainer_fastpath_enabled', False)
    return 'chainer_fastpath: ' + ('enabled' if on else 'NOT enabled')


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if config.getoption('--fastpath-report'):
        import io

        import chainer_fastpath
        buf = io.StringIO()
        chainer_fastpath.report(file=buf)
        terminalreporter.write_sep('-', 'chainer_fastpath')
        terminalreporter.write(buf.getvalue())


def pytest_unconfigure(config):
    import chainer_fastpath

    chainer_fastpath.disable()
