"""A chainer_fastpath fuzz case.

category: callable-metadata
signature: values @ [getattr
run.values['v5'][1][1]: stock 'chainer.functions.math.basic_math' |
patched 'chainer_fastpath._arith'
"""
from chainer_fastpath.testing.fuzz import replay

CONFIG = {}
PROGRAM = '''\
v5 = [getattr(F.add, a, None) for a in ('__module__', '__qualname__', '__doc__', '__name__')]
'''

if __name__ == '__main__':
    raise SystemExit(replay(PROGRAM, CONFIG))
