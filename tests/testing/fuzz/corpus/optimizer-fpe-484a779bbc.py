"""A chainer_fastpath fuzz case.

category: optimizer-fpe
signature: warnings @ RuntimeWarning invalid value encountered in divide
run.warnings: stock (('RuntimeWarning', 'invalid value encountered in
divide', '/work/main/.venv/lib/python3.11/site-
packages/chainer/optimizers/rmsprop_graves.py', 84),) | patched ()
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
model = Model(3, 2, 'float32', Parameter)
opt = optimizers.RMSpropGraves(lr=1e+30, eps=0.0)
opt.setup(model)
opt.update()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
