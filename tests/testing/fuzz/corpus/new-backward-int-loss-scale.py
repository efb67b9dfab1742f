"""A chainer_fastpath fuzz case.

category: new
signature: values @ F.sum
a loss whose gradient cannot be scaled (integers): stock keeps the ones
it set (fixed)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'type_check': False}
PROGRAM = '''\
v1 = Parameter(arr((3,), 'int32'))
v2 = F.sum(v1)
v2.backward(retain_grad=True, loss_scale=1e+30)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
