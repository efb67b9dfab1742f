"""A chainer_fastpath fuzz case.

category: new
F.leaky_relu on float16 with a slope NumPy casts to float16 with an
underflow: the quiet multiply let the cast's error through (found at
b45a20e)
signature: events @
run.events: stock (('fpe', 'underflow'),) | patched (('fpe',
'underflow'), ('fpe', 'underflow'))
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'errstate': 'call'}
PROGRAM = '''\
v1 = Variable(arr((3,), 'float16'))
v3 = F.leaky_relu(v1, slope=1e-40)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
