"""A chainer_fastpath fuzz case.

category: optimizer-fpe
signature: values @ optimizers.Adam
Adam(alpha=0.0, adabound=True): both raise ZeroDivisionError inside the
update; stock has already updated the state m and v, patched has not
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
model = Model(3, 2, 'float32', Parameter)
opt = optimizers.Adam(alpha=0.0, adabound=True)
opt.setup(model)
v2 = arr((2, 3), 'float32')
loss = F.sum(model(v2))
loss.backward()
with quiet():
    opt.update()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
