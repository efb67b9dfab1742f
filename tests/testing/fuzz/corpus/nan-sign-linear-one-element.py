"""A chainer_fastpath fuzz case.

category: optimizer-fpe
signature: values @ F.sum
F.linear of one row and one column whose input and bias are NaNs of
both signs: the compiled bias add called NumPy's loop with the row's
strides where NumPy's iterator gives a one-element loop strides 0 (and
keeps the bias's NaN) (found at 7ce8bd9)
run.values['loss'][1][2][7]: stock b'\\x00\\x00\\xc0\\xff' | patched
b'\\x00\\x00\\xc0\\x7f'
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v2 = Variable(arr((2, 3), 'float32'))
model = Model(None, 1, 'float32', Parameter)
opt = optimizers.RMSprop(alpha=0.0, eps=0.0)
opt.setup(model)
v6 = arr((1, 3), 'float32', 'C', 'special')
model.cleargrads()
with quiet():
    opt.update()
loss = F.sum(model(v6))
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
