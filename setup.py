"""Builds the Cython extensions; metadata lives in pyproject.toml.

Every ``.pyx`` file under the package is an extension of the same dotted
name, so adding a compiled module needs no change here.
"""
import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

# Bit-identical results need the same rounding as NumPy's separate multiply
# and add: no fused multiply-add contraction. A call to an undeclared
# function is an error, as GCC 14 and Clang 16 make it by default.
CFLAGS = ['-O3', '-ffp-contract=off', '-Werror=implicit-function-declaration']

# Per-module extra flags. -fno-math-errno lets sqrt vectorize; it changes
# no result (sqrt stays IEEE, only errno is not set).
EXTRA_CFLAGS = {
    'chainer_fastpath.optimizers._kernels': ['-fno-math-errno'],
}

# Where the C headers that .pxd files declare (``cdef extern from``) live.
INCLUDE_DIRS = ['chainer_fastpath/_core']


# Flags added to every extension's compile and link, from the environment:
# `make test-asan` builds a copy of the tree with the sanitizers this way.
ENV_CFLAGS = os.environ.get('CHAINER_FASTPATH_EXTRA_CFLAGS', '').split()


def extension(path):
    name = os.path.splitext(path)[0].replace(os.sep, '.')
    return Extension(name, [path], include_dirs=INCLUDE_DIRS,
                     extra_compile_args=(CFLAGS + EXTRA_CFLAGS.get(name, [])
                                         + ENV_CFLAGS),
                     extra_link_args=ENV_CFLAGS)


def extensions():
    return cythonize(
        [extension(p) for p in sorted(glob.glob(
            os.path.join('chainer_fastpath', '**', '*.pyx'), recursive=True))],
        compiler_directives={
            'language_level': 3,
            'boundscheck': False,
            'wraparound': False,
        },
    )


# The Makefile installs the project editable for its dependencies, then
# builds the extensions in place (incrementally) itself: this keeps pip
# from compiling them a first time in a directory of its own.
setup(ext_modules=[] if os.environ.get('CHAINER_FASTPATH_NO_EXTENSIONS')
      == '1' else extensions())
