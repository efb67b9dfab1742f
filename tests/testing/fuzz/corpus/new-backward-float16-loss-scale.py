"""A chainer_fastpath fuzz case.

category: new
signature: values @ F.leaky_relu
scaling the seeded float16 gradient overflows under an error filter:
stock keeps the grad (fixed)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'warnings': 'error-runtime'}
PROGRAM = '''\
v1 = Variable(arr((), 'float16'))
v2 = F.leaky_relu(v1)
v2.backward(loss_scale=1e+30)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
