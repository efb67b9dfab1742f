"""A chainer_fastpath fuzz case.

category: node-arity
signature: raised @ v = ElementwiseConstant
an elementwise FunctionNode applied to no inputs: stock raises
IndexError (issue 16, finding 7)
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {'type_check': False}
PROGRAM = '''\
v1 = ElementwiseConstant().apply([])[0]
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
