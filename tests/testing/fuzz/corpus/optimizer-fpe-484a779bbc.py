"""A chainer_fastpath fuzz case.

category: optimizer-fpe
signature: values @ Variable
The same in-place gradient sum as new-d59a221d0c (its layout); the
optimizer line is what names the category (found at 6c5ef4a)
run.values['v2'][1][3][3][1]: stock 8 | patched 24
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'train': False}
PROGRAM = '''\
v2 = Variable(arr((2, 1, 3), 'float32', 'F'))
v3 = F.dropout(v2, 0.5)
v4 = F.sum(v2)
v4.backward(retain_grad=True)
g5 = chainer.grad([F.sum(v3 * v3)], [v2, v3, v4], enable_double_backprop=True)
F.sum(g5[0] * g5[0]).backward()
opt = optimizers.NesterovAG(lr=1e+30)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
