"""A chainer_fastpath fuzz case.

category: debug-stack
signature: raised @ opt.update TypeError
run.raised[0][2]: stock 'un_both(lambda: run_once(code, config),
seed=seed)\n  File
"/work/snap1/chainer_fastpath/testing/fuzz/execute.py", line 104, in
run_once\n    exec(code, ns)\n  File "<fuzz>", line 5, in <module>\n
File "/work/snap1/.venv/lib/python3.11/site-
packages/chainer/optimizer.py", line 874, in update\n    loss =
lossfun(*args, **kwds)\n  File "<fuzz>", line 5, in <lambda>\n  File
"/work/snap1/.venv/lib/python3.11/site-packages/chainer/link.py", line
287, in __call__\n    out = forward(*args, **kwargs)\n  File
"/work/snap1/chainer_fastpath/testing/fuzz/runtime.py", line 106, in
forward\n    return sel... | patched 'un_both(lambda: run_once(code,
config), seed=seed)\n  File
"/work/snap1/chainer_fastpath/testing/fuzz/execute.py", line 104, in
run_once\n    exec(code, ns)\n  File "<fuzz>", line 5, in <module>\n
File "<fuzz>", line 5, in <lambda>\n  File
"/work/snap1/.venv/lib/python3.11/site-packages/chainer/link.py", line
287, in __call__\n    out = forward(*args, **kwargs)\n  File
"/work/snap1/chainer_fastpath/testing/fuzz/runtime.py", line 106, in
forward\n    return self.l(x) * self.p\n  File
"/work/snap1/.venv/lib/python3.11/site-
packages/chainer/functions/math/basic_math.py", line 413, in mul\n
r...
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'debug': True, 'type_check': False}
PROGRAM = '''\
model = Model(None, 2, 'float32', Parameter)
opt = optimizers.Adam(beta1=1.0)
opt.setup(model)
v13 = arr((2, 3), 'float64')
opt.update(lambda x: F.sum(model(x)), v13)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
