"""A chainer_fastpath fuzz case.

category: new
signature: raised @ v.backward ValueError
F.linear with no output units on float16: the bias gradient's overflow
check took the maximum of an empty array (found at 6c5ef4a)
run.raised: stock () | patched ((6, 'ValueError', 'zero-size array to
reduction operation maximum which has no identity'),)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v5 = arr((2, 3), 'float16')
v6 = Variable(arr((0, 3), 'float16'))
v7 = Parameter(arr((0,), 'float16'))
v8 = F.linear(v5, v6, v7)
v8.grad = arr((2, 0), 'float16')
v8.backward(retain_grad=True)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
