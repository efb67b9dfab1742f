"""A chainer_fastpath fuzz case.

category: new
signature: values @ MyParameter
EmbedIDGrad's compiled forward summed NaNs of both signs to another NaN
than NumPy's add (fixed: a NaN sum is left to stock)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v2 = Parameter(arr((2, 1, 3), 'float32'))
v5 = MyParameter(arr((1, 2), 'float32'))
v6 = ints((3,), 1)
v7 = F.embed_id(v6, v5)
v7.grad = arr((3, 2), 'float32', 'C', 'special')
v7.backward(enable_double_backprop=True)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
