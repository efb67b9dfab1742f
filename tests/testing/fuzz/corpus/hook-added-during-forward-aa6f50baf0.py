"""A chainer_fastpath fuzz case.

category: hook-added-during-forward
signature: events @
run.events: stock (('forward_pre', 'Sum', ((3,),)), ('forward_post',
'Sum', ((3,),)), ('forward_post', 'Sum', ((3,),))) | patched
(('forward_pre', 'Sum', ((3,),)), ('forward_post', 'Sum', ((3,),)))
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'function_hook': 'adding'}
PROGRAM = '''\
v1 = Variable(arr((3,), 'float32'))
v2 = F.sum(v1)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
