"""A chainer_fastpath fuzz case.

category: node-arity
signature: values @ _summary6.make_statistics
Not a difference of the patch: stock's own Summary.add, adding nan with
weight 2 to a sum of -nan (0 * inf), leaves +nan the first time it runs in
a process and -nan from then on (CPython 3.11's specializing interpreter),
so the stock run and the patched run after it gave b.std NaNs of opposite
signs; NumPy scalars now compare NaNs as NaNs (found at 0eae071, seed
3403)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
_summary6 = chainer.reporter.DictSummary()
_summary6.add({'a': float("inf"), 'b': (float("inf"), 0)})
_summary6.add({'a': numpy.nan, 'b': (numpy.nan, 2)})
v8 = _summary6.make_statistics()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
