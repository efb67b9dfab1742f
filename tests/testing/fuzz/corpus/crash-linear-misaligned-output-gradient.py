"""A chainer_fastpath fuzz case.

category: crash
signature: worker killed by SIGABRT
UBSan under `make test-asan`: a misaligned float32 output gradient of a
LinearFunction node read as C floats (linear._sums_quietly's _bounded,
checking the bias gradient's sum is quiet); now left to stock.
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'errstate': 'warn', 'warnings': 'default'}
PROGRAM = '''\
v1 = MyParameter(arr((3, 2), 'int64', 'readonly', 'special'))
v2 = MyVariable(arr((2, 1), 'int32', 'C', 'big'))
v3 = MyParameter(arr((4,), 'float16', 'readonly'))
v4 = arr((2, 3), 'float32', 'readonly', 'special')
v5 = Recursive(3, 'nested', 'float32')
with recursion_limit(3700, EVENTS), FunctionRecorder(EVENTS, 'outer'), LinkRecorder(EVENTS, 'outer'):
    v6 = v5(v4, 300)
F.sum(v6).backward()
v6.grad = arr((2, 3), 'float32', 'misaligned', 'big')
v6.backward()
model = Model(0, 2, 'float64', MyParameter, nobias=True)
opt = optimizers.Adam(alpha=0.0, beta1=0.0, eps=0.0, weight_decay_rate=0.5, amsgrad=True, adabound=True)
opt.setup(model)
opt.update = counting(opt.update, 'opt.update', EVENTS, 'skip')
opt.add_hook(optimizer_hooks.WeightDecay(0.1))
opt.add_hook(optimizer_hooks.GradientHardClipping(-0.1, 0.1))
v7 = arr((1, 0), 'float64', 'F', 'big')
opt.update(lambda x: F.sum(model(x)), v7)
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
