"""Command line: ``python -m chainer_fastpath {run,bench,report,doctor}
...``."""
import argparse
import sys


def _cmd_run(args):
    from chainer_fastpath import _profile, _script

    if args.profile:
        def child(status_file):
            argv = [sys.executable, '-m', 'chainer_fastpath', 'run']
            if status_file:
                argv += ['--exit-status-file', status_file]
            if args.report:
                argv.append('--report')
            if args.report_json:
                argv += ['--report-json', args.report_json]
            return argv + [args.script] + args.args
        return _profile.run(child)
    _profile.take_stdout()
    status = None
    try:
        status = _script.run(args.script, args.args, report=args.report,
                             report_json=args.report_json)
    except SystemExit as e:
        status = (0 if e.code is None else e.code
                  if isinstance(e.code, int) else 1)
        raise
    finally:
        if args.exit_status_file and status is not None:
            with open(args.exit_status_file, 'w') as f:
                f.write(str(status))
    return status


def _cmd_bench(options):
    # Imported only here: the benchmark and its workloads stay out of the
    # processes that `run` starts.
    from chainer_fastpath.bench import runner

    return runner.main(options)


def _cmd_report(args):
    import chainer_fastpath

    on = chainer_fastpath.enable()
    print('chainer_fastpath {}: the fast path {} with this Chainer'.format(
        chainer_fastpath.__version__, 'can be enabled' if on else
        'cannot be enabled'))
    from chainer_fastpath import _patch
    from chainer_fastpath._core import _registry
    for row in _patch.table():
        print('  {:<10} {}'.format(row.part, row.name))
    print('compiled functions (for NumPy arrays):')
    for cls, entry in sorted(_registry.registered().items(),
                             key=lambda item: item[0].__name__):
        print('  {:<24} {}'.format(cls.__name__, ', '.join(entry.parts)))
    return 0 if on else 1


def _cmd_doctor(args):
    from chainer_fastpath import _doctor

    return _doctor.main()


def build_parser():
    parser = argparse.ArgumentParser(
        prog='python -m chainer_fastpath',
        description='Run Chainer programs with the compiled fast path.')
    sub = parser.add_subparsers(dest='command', required=True)

    run = sub.add_parser(
        'run', help='run a script unchanged with the fast path enabled')
    run.add_argument('--report', action='store_true',
                     help='print at exit, to stderr, what ran compiled and '
                     'what ran as stock Python, per entry point and per '
                     'FunctionNode class')
    run.add_argument('--report-json', metavar='FILE',
                     help='write the same report to FILE as JSON at exit')
    run.add_argument('--profile', action='store_true',
                     help='sample the program with py-spy and print, at '
                     'exit, the share of its time in arithmetic, the '
                     "compiled fast path, Chainer's Python, the program's "
                     'own Python and the GC')
    run.add_argument('--exit-status-file', help=argparse.SUPPRESS)
    run.add_argument('script')
    run.add_argument('args', nargs=argparse.REMAINDER)
    run.set_defaults(func=_cmd_run)

    # The runner parses bench's options (and -h) itself; see main.
    sub.add_parser(
        'bench', help='time workloads stock vs patched, side by side',
        add_help=False)

    report = sub.add_parser(
        'report', help='say whether the fast path can be enabled, and what '
        'it patches')
    report.set_defaults(func=_cmd_report)

    doctor = sub.add_parser(
        'doctor', help='print the environment for a bug report: versions, '
        'compiled modules, BLAS, MPI')
    doctor.set_defaults(func=_cmd_doctor)
    return parser


def main(argv=None):
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == 'bench':
        return _cmd_bench(rest)
    if rest:
        parser.error('unrecognized arguments: ' + ' '.join(rest))
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
