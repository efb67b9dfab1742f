"""A chainer_fastpath fuzz case.

category: new
signature: events @
CpuDevice.send replaced on the class while a StandardUpdater steps an
Adam: stock's UpdateRule._init_states sends each state array to the
device (in its context) at every update; the lean update skipped it once
the states were arrays (found by the machinery grammar, seed 8, at
241e446; the CPU device's methods and helpers are now checked)
run.events: stock 8 CpuDevice.send calls | patched 4
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
_p1 = mock.patch.object(chainer.backends._cpu.CpuDevice, 'send', counting(chainer.backends._cpu.CpuDevice.send, 'CpuDevice.send', EVENTS, 'count'))
_p1.start()
v2 = L.Classifier(L.Linear(3, 4))
v3 = chainer.datasets.TupleDataset(arr((2, 3), 'float32'), ints((2,), 4))
v4 = chainer.iterators.SerialIterator(v3, 3, shuffle=False)
v5 = optimizers.Adam()
v5.setup(v2)
v6 = chainer.training.updaters.StandardUpdater(v4, v5)
v6.update()
v6.update()
_p1.stop()
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
