"""A chainer_fastpath fuzz case.

category: new
signature: events @ fpe overflow (errstate 'call')
Squared error of two int8 0-d arrays, type_check off: NumPy's scalar
arithmetic on the 0-d difference reports the integer overflow in stock;
the compiled forward's ufunc loop did not.
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'errstate': 'call', 'type_check': False}
PROGRAM = '''\
v1 = Variable(arr((1, 3), 'float32'))
v2 = Parameter(arr((1, 3), 'float32'))
v3 = Parameter(arr((2, 1), 'float32'))
v4 = arr((), 'int8', 'misaligned', 'big')
v5 = Parameter(arr((), 'int8', 'swapped', 'special'))
v6 = F.squared_error(v4, v5)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
