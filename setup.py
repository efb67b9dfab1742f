"""Builds the Cython extensions; metadata lives in pyproject.toml."""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

# Bit-identical results need the same rounding as NumPy's separate multiply
# and add: no fused multiply-add contraction.
CFLAGS = ['-O3', '-ffp-contract=off']

MODULES = [
    'chainer_fastpath._stats',
    'chainer_fastpath._config',
    'chainer_fastpath._objects',
    'chainer_fastpath._type_check',
    'chainer_fastpath._fast_call',
    'chainer_fastpath._fast_backward',
]


def extension(name):
    return Extension(name, [name.replace('.', os.sep) + '.pyx'],
                     extra_compile_args=CFLAGS)


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
