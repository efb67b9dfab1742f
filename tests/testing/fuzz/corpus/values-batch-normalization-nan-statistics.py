"""A chainer_fastpath fuzz case.

category: new
signature: values @ F.batch_normalization
run.values['v9'][1][2][7]: the signs of NaNs differed in
F.batch_normalization's output for a C-contiguous x holding NaNs of both
signs: the kernels' operations met two NaNs (x's and its channel's NaN
statistics) and kept the other one than NumPy's loops.
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v5 = arr((2, 2, 4, 3), 'float32', 'C', 'special')
v8 = Variable(arr((2,), 'float32'))
v9 = F.batch_normalization(v5, v8, v8)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
