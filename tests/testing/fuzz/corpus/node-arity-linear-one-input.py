"""A chainer_fastpath fuzz case.

category: node-arity
signature: raised @ v =
chainer.functions.connection.linear.LinearFunction
LinearFunction applied to one input: Cython's unpacking message, not
stock's
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'type_check': False}
PROGRAM = '''\
v1 = Variable(arr((2, 3)))
v2 = chainer.functions.connection.linear.LinearFunction().apply([v1])[0]
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
