"""Command line: ``python -m chainer_fastpath {run,bench,report,doctor}
...``."""
import argparse
import sys


def _cmd_run(args):
    from chainer_fastpath import _script

    return _script.run(args.script, args.args, report=args.report,
                       report_json=args.report_json)


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
