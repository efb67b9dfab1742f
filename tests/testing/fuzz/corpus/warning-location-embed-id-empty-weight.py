"""A chainer_fastpath fuzz case.

category: warning-location
signature: warnings @ DeprecationWarning Out of bound index found.
EmbedID on an empty weight: NumPy's warning about out-of-bound indices
came from the caller's line, not embed_id.py's.
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v1 = Parameter(arr((), 'float32'))
v2 = Variable(arr((1, 1), 'float32'))
v4 = Variable(arr((2, 0), 'float32'))
v5 = F.elu(v4)
v6 = arr((2, 1), 'int64', 'misaligned', 'special')
v7 = chainer.functions.connection.embed_id.EmbedIDFunction().apply([v6, v5])[0]
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
