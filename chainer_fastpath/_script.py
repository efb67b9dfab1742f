"""``python -m chainer_fastpath run SCRIPT ARGS``: run a script as ``python
SCRIPT ARGS`` would, with the fast path enabled."""
import builtins
import io
import os
import sys
import types


def _strip_runner_frames(tb, code):
    """Drops the traceback entries above the script's own module frame."""
    head = tb
    while head is not None and head.tb_frame.f_code is not code:
        head = head.tb_next
    return head if head is not None else tb


def run(path, argv, report=False, report_json=None):
    """Runs the file at ``path`` as ``__main__``; returns its exit status.
    ``report``: print the report to stderr at the end; ``report_json``:
    write it as JSON to that path."""
    import chainer_fastpath

    try:
        with open(path, 'rb') as f:
            source = f.read()
    except OSError as e:
        print('chainer_fastpath: cannot open script {!r}: {}'.format(
            path, e.strerror), file=sys.stderr)
        return 2

    code = compile(source, path, 'exec', dont_inherit=True)
    main = types.ModuleType('__main__')
    main.__file__ = path
    main.__builtins__ = builtins
    main.__loader__ = None
    main.__spec__ = None
    sys.modules['__main__'] = main
    sys.argv = [path] + list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(path))

    chainer_fastpath.enable()
    try:
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException:
        etype, value, tb = sys.exc_info()
        tb = _strip_runner_frames(tb, code)
        sys.excepthook(etype, value.with_traceback(tb), tb)
        return 1
    finally:
        if report or report_json:
            chainer_fastpath.report(
                file=sys.stderr if report else io.StringIO(),
                json_file=report_json)
    return 0
