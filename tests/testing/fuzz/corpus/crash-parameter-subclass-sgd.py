"""A chainer_fastpath fuzz case.

category: crash
signature: worker killed by SIGSEGV
a Parameter subclass updated by SGD (issue 16, finding 1)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
model = Model(3, 2, 'float32', MyParameter)
opt = optimizers.SGD(lr=0.1)
opt.setup(model)
v1 = arr((2, 3), 'float32')
loss = F.sum(model(v1))
loss.backward()
with quiet():
    opt.update()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
