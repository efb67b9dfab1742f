"""A chainer_fastpath fuzz case.

category: warning-location
signature: warnings @ RuntimeWarning invalid value encountered in subtract
run.warnings[0][2]: stock '/work/main/.venv/lib/python3.11/site-
packages/chainer/functions/math/basic_math.py' | patched '<fuzz>'
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v1 = Variable(arr((2, 1, 3), 'float32', 'F', 'special'))
v8 = v1 - v1
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
