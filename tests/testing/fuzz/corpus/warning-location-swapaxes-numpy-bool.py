"""A chainer_fastpath fuzz case.

category: warning-location
signature: warnings @ DeprecationWarning In future, it will be an error for 'np.b
run.warnings[0][3]: stock 21 | patched 54
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v1 = Variable(arr((3,), 'float32'))
v6 = F.swapaxes(v1, numpy.bool_(False), -2)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
