"""A chainer_fastpath fuzz case.

category: debug-stack
signature: raised @ g12 = chainer.grad
run.raised[0][2]: stock 'tial.run_both(lambda: run_once(code, config),
seed=seed)
  File "/work/wt-fuzz/chainer_fastpath/testing/fuzz/execute.py", line
104, in run_once
    exec(code, ns)
  File "<fuzz>", line 4, in <module>
  File "/work/main/.venv/lib/python3.11/site-
packages/chainer/functions/math/basic_math.py", line 413, in mul
    return Mul().apply((self, rhs))[0]
' | patched 'tial.run_both(lambda: run_once(code, config), seed=seed)
  File "/work/wt-fuzz/chainer_fastpath/testing/fuzz/execute.py", line
104, in run_once
    exec(code, ns)
  File "<fuzz>", line 4, in <module>
'
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'debug': True}
PROGRAM = '''\
v9 = Variable(arr((3, 1), 'float32', 'swapped'))
v10 = ints((2, 2), 3)
v11 = F.embed_id(v10, v9)
g12 = chainer.grad([F.sum(v11 * v11)], [v9])
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
