"""A chainer_fastpath fuzz case.

category: new
signature: values @ Variable
Negative sampling's gradient of a NaN input: stock's NaN is +NaN,
the compiled kernel's was -NaN (0x7fc00000 vs 0xffc00000).
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v5 = Variable(arr((3, 2), 'float32'))
v6 = F.log(v5)
v8 = ints((3,), 3)
v9 = L.NegativeSampling(2, [3, 2, 1], 2)
v10 = v9(v6, v8)
F.sum(v10).backward()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
