"""A chainer_fastpath fuzz case.

category: hook-added-during-forward
signature: events @
A program that leaves Div.forward replaced (its restore writes back the
replacement): the harness put back only the methods of ReLU, Add, Linear
and Sum, so the patched run wrapped the stock run's replacement and the
runs differed; runtime.restoring now puts back every method of
grammar.REPLACED (found at fe3bc6f)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'function_hook': 'adding'}
PROGRAM = '''\
v5 = Parameter(arr((2, 3, 1), 'float32'))
v6 = F.swapaxes(v5, 2, 0)
_p7 = mock.patch.object(chainer.functions.math.basic_math.Div, 'forward', counting(chainer.functions.math.basic_math.Div.forward, 'Div.forward', EVENTS, 'change'))
_p7.start()
v8 = v6 / v6
_p9 = chainer.functions.math.basic_math.Div.forward
_p7.stop()
chainer.functions.math.basic_math.Div.forward = _p9
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
