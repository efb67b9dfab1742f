"""A chainer_fastpath fuzz case.

category: warning-location
signature: warnings @ DeprecationWarning In future, it will be an error for 'np.b
run.warnings: stock (('DeprecationWarning', "In future, it will be an
error for 'np.bool_' scalars to be interpreted as an index",
'/work/main/.venv/lib/python3.11/site-packages/numpy/core/_methods.py',
118), ('RuntimeWarning', 'invalid value encountered in reduce',
'/work/main/.venv/lib/python3.11/site-packages/numpy/core/_methods.py',
118)) | patched (('DeprecationWarning', "In future, it will be an error
for 'np.bool_' scalars to be interpreted as an index",
'/work/main/.venv/lib/python3.11/site-packages/numpy/core/_methods.py',
118), ('DeprecationWarning', "In future, it will be an error for
'np.bool_' scalars to be interpreted as an index",
'/work/main/.venv/lib/python3.11/site-packages/numpy/core/_methods.py',
118), ('RuntimeWarning', 'invalid value encountered in reduce',
'/work/main/.venv/lib/python3.11/site-packages/numpy/core/_methods.py',
118))
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v1 = Parameter(arr((4,), 'float32'))
v2 = Parameter(arr((2, 3), 'float32', 'readonly', 'special'))
v5 = -v2
v8 = F.mean(v5, keepdims=numpy.bool_(False))
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
