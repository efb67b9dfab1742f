"""A chainer_fastpath fuzz case.

category: warning-location
signature: warnings @ DeprecationWarning NumPy will stop allowing conversion of o
run.warnings: stock warned NumPy's DeprecationWarning for -1 converted to
uint8 once, from basic_math.py line 39 (_preprocess_const) | patched twice
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'type_check': False}
PROGRAM = '''\
v3 = Variable(arr((3,), 'uint8'))
v4 = -1 / v3
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
