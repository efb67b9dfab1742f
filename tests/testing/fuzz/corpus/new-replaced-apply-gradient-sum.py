"""A chainer_fastpath fuzz case.

category: new
signature: events @
run.events: stock (('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply')) | patched (('call', 'FunctionNode.apply'),
('call', 'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'), ('call',
'FunctionNode.apply'), ('call', 'FunctionNode.apply'))
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
_p8 = mock.patch.object(chainer.FunctionNode, 'apply', counting(chainer.FunctionNode.apply, 'FunctionNode.apply', EVENTS, 'count'))
_p8.start()
v12 = Variable(arr((3, 1), 'float32'))
v13 = ints((3,), 3)
v14 = F.embed_id(v13, v12)
g15 = chainer.grad([F.sum(v14 * v14)], [v12])
F.sum(g15[0] * g15[0]).backward()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
