"""A chainer_fastpath fuzz case.

category: new
signature: values @
run.values['v10'][1][2][7]: the signs of NaNs differed in the output of
L.BatchNormalization on a convolution's channels-last output holding NaNs:
its kernels multiplied a NaN x_hat by a NaN inv_std (the channel's
statistics NaN) in one operand order, NumPy's loop in the other. The
kernels now run only where no operation can meet two NaNs.
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v6 = arr((2, 2, 4, 3), 'float64', 'C', 'special')
v7 = Variable(arr((2, 2, 3, 1), 'float32'))
v8 = F.convolution_2d(v6, v7)
link9 = L.BatchNormalization(2, dtype=numpy.float64)
with chainer.using_config('train', True):
    v10 = link9(v8)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
