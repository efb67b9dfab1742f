"""A chainer_fastpath fuzz case.

category: new
signature: values @ MyVariable
A gradient sum made in place kept the first term's Fortran layout
where stock's F.add makes a new C-ordered array (found at 6c5ef4a)
run.values['v2'][1][3][3][1]: stock 8 | patched 24
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'train': False}
PROGRAM = '''\
v2 = MyVariable(arr((2, 1, 3), 'float32', 'F'))
v3 = F.dropout(v2, 0.99)
v4 = F.sum(v2)
v4.backward(loss_scale=0.5)
g5 = chainer.grad([F.sum(v3 * v3)], [v2, v3, v4], enable_double_backprop=True)
F.sum(g5[0] * g5[0]).backward()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
