"""Builds the Cython extensions; metadata lives in pyproject.toml."""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

# Bit-identical results need the same rounding as NumPy's separate multiply
# and add: no fused multiply-add contraction.
CFLAGS = ['-O3', '-ffp-contract=off']

MODULES = [
    'chainer_fastpath._stats',
    'chainer_fastpath._ndarray',
    'chainer_fastpath._audit',
    'chainer_fastpath._config',
    'chainer_fastpath._objects',
    'chainer_fastpath._type_check',
    'chainer_fastpath._fpe',
    'chainer_fastpath._lstm_cell',
    'chainer_fastpath._softmax_cross_entropy',
    'chainer_fastpath._forwards',
    'chainer_fastpath._backwards',
    'chainer_fastpath._fast_call',
    'chainer_fastpath._arith',
    'chainer_fastpath._force_array',
    'chainer_fastpath._link_call',
    'chainer_fastpath._fast_backward',
    'chainer_fastpath._unchain',
    'chainer_fastpath.optimizers._kernels',
    'chainer_fastpath.optimizers._update',
]

# Per-module extra flags. -fno-math-errno lets sqrt vectorize; it changes
# no result (sqrt stays IEEE, only errno is not set).
EXTRA_CFLAGS = {
    'chainer_fastpath.optimizers._kernels': ['-fno-math-errno'],
}


def extension(name):
    return Extension(name, [name.replace('.', os.sep) + '.pyx'],
                     include_dirs=['chainer_fastpath'],
                     extra_compile_args=CFLAGS + EXTRA_CFLAGS.get(name, []))


setup(
    ext_modules=cythonize(
        [extension(m) for m in MODULES],
        compiler_directives={
            'language_level': 3,
            'boundscheck': False,
            'wraparound': False,
        },
    ),
)
