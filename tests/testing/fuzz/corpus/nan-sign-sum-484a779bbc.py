"""A chainer_fastpath fuzz case.

category: optimizer-fpe
signature: values @ Variable
A gradient sum of NaNs of both signs made in place: NumPy's in-place
add on few elements keeps the second term's NaN, stock's F.add the
first's (found at 934ffee)
run.values['v1'][1][3][7]: stock b'\x00\x00\xc0\x7f' | patched
b'\x00\x00\xc0\xff'
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v1 = Variable(arr((), 'float32', 'F', 'special'))
v3 = F.sqrt(v1)
v4 = F.sqrt(v3)
g5 = chainer.grad([F.sum(v3 * v3)], [v1, v3, v4], enable_double_backprop=True)
F.sum(g5[0] * g5[0]).backward()
opt = optimizers.CorrectedMomentumSGD(lr=0.0)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
