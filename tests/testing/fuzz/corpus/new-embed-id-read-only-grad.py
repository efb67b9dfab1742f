"""A chainer_fastpath fuzz case.

category: new
signature: raised @ v.backward ValueError
embed_id's compiled backward on a read-only output gradient raised
ValueError (buffer source array is read-only) (fixed)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v5 = Parameter(arr((3, 2), 'float32'))
v6 = ints((3,), 3)
v7 = F.embed_id(v6, v5)
v7.grad = arr((3, 2), 'float32', 'readonly')
v7.backward()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
