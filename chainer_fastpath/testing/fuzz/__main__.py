"""``python -m chainer_fastpath.testing.fuzz``: a fuzz campaign, or the
replay of reproducer files."""
import argparse
import sys


def main(argv=None):
    from chainer_fastpath.testing.fuzz import known

    parser = argparse.ArgumentParser(
        prog='python -m chainer_fastpath.testing.fuzz',
        description='Differential fuzzing of chainer_fastpath: generated '
                    'Chainer programs, stock vs patched.')
    parser.add_argument('--programs', type=int, default=None,
                        help='stop after this many programs')
    parser.add_argument('--seconds', type=float, default=None,
                        help='stop after this many seconds (checked '
                             'between chunks)')
    parser.add_argument('--chunk', type=int, default=1000,
                        help='programs per Hypothesis run (default 1000)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--skip', default='none',
                        help="categories to leave out: 'unfixed', 'none' "
                             "or names separated by commas; known: " +
                             ', '.join(known.CATEGORIES))
    parser.add_argument('--corpus', default=None,
                        help='folder to write reproducers to')
    parser.add_argument('--replay', nargs='+', metavar='FILE',
                        help='replay reproducer files instead')
    args = parser.parse_args(argv)
    skip = known.parse_skip(args.skip)

    if args.replay:
        from chainer_fastpath.testing.fuzz import program
        from chainer_fastpath.testing.fuzz.worker import Worker

        failed = 0
        with Worker() as worker:
            for path in args.replay:
                with open(path) as f:
                    finding = worker.check(program.load(f.read()), skip)
                print('{}: {}'.format(path, 'agree' if finding is None else
                                      ' | '.join(finding[:2])))
                failed += finding is not None
        return 1 if failed else 0

    from chainer_fastpath.testing.fuzz.campaign import Campaign

    if args.programs is None and args.seconds is None:
        args.seconds = 600.0
    print('skipping: {}'.format(', '.join(sorted(skip)) or 'nothing'),
          flush=True)
    campaign = Campaign(skip=skip, corpus=args.corpus)
    try:
        campaign.run(programs=args.programs, seconds=args.seconds,
                     chunk=args.chunk, seed=args.seed)
    finally:
        campaign.worker.close()
    print('findings seen, by kind:')
    for line in campaign.summary():
        print(line)
    return 1 if campaign.findings else 0


if __name__ == '__main__':
    sys.exit(main())
