"""A chainer_fastpath fuzz case.

category: new
signature: events @
run.events: stock (('call', 'FunctionNode.apply'),) | patched (('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'))
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'debug': True}
PROGRAM = '''\
v1 = Variable(arr((3,), 'float32'))
_p3 = mock.patch.object(chainer.FunctionNode, 'apply', counting(chainer.FunctionNode.apply, 'FunctionNode.apply', EVENTS, 'count'))
_p3.start()
v4 = F.relu(v1)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
