"""A chainer_fastpath fuzz case.

category: new
signature: warnings @ RuntimeWarning overflow encountered in add
run.warnings: stock (('RuntimeWarning', 'overflow encountered in
multiply', '/work/main/.venv/lib/python3.11/site-
packages/chainer/variable.py', 1571),) | patched (('RuntimeWarning',
'overflow encountered in multiply',
'/work/main/.venv/lib/python3.11/site-packages/chainer/variable.py',
1571), ('RuntimeWarning', 'overflow encountered in add',
'/work/main/.venv/lib/python3.11/site-
packages/chainer/functions/math/basic_math.py', 180))
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v1 = Variable(arr((0,), 'float16'))
v1.grad = arr((0,), 'float16')
v4 = F.sum(v1)
v4.backward(loss_scale=1e+30)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
