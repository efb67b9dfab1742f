"""A chainer_fastpath fuzz case.

category: new
signature: raised @ v = F.softmax_cross_entropy TypeError
run.raised: stock () | patched ((3, 'TypeError', 'Expected str, got
numpy.str_'),)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v2 = arr((2, 3), 'float32')
v3 = ints((2,), 3)
v4 = F.softmax_cross_entropy(v2, v3, normalize=numpy.bool_(True), reduce=numpy.str_('no'))
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
