"""A chainer_fastpath fuzz case.

category: new
signature: values @ F.lstm
run.values['lstm6'][1][1][2][3][1]: stock 12 | patched 4
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v2 = Variable(arr((1, 3), 'float32', 'strided'))
v4 = F.transpose(v2, (1, 0))
v5 = arr((1, 4), 'float32')
lstm6 = F.lstm(v4, v5)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
