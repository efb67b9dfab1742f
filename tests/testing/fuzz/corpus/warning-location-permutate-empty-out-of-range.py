"""A chainer_fastpath fuzz case.

category: warning-location
signature: warnings @ DeprecationWarning Out of bound index found. This was previ
run.warnings[0][3]: stock 61 | patched 133
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v2 = Parameter(arr((2, 0), 'float32'))
v3 = F.permutate(v2, numpy.array([2, 0], numpy.int32))
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
