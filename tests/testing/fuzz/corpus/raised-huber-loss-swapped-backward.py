"""A chainer_fastpath fuzz case.

category: warning-location
signature: raised @ v.backward InvalidType
run.raised: stock's HuberLoss backward multiplied the swapped-order output
gradient by its native clip and raised InvalidType (lhs.dtype ==
rhs.dtype); patched computed a native gradient and raised TypeError at the
gradient's dtype check
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'warnings': 'ignore-chainer'}
PROGRAM = '''\
v1 = Parameter(arr((), 'float32', 'swapped'))
v9 = F.huber_loss(v1, v1, 1.0, reduce='no')
v9.backward(retain_grad=True)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
