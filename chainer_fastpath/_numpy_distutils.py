"""Lets Chainer 7.8.1 import where NumPy ships no ``numpy.distutils``.

``import chainer`` runs ``chainer._environment_check``, which imports
``numpy.distutils.system_info``; NumPy 1.26 has no ``numpy.distutils`` on
Python 3.12. :func:`install` adds, last on ``sys.meta_path``, a finder for
the two names that import needs, so it is asked only when no other finder
finds the real modules. What it supplies is what Chainer uses:
``system_info.get_info``, which Chainer calls on macOS only.
"""
import importlib.abc
import importlib.machinery
import sys

PACKAGE = 'numpy.distutils'
SYSTEM_INFO = 'numpy.distutils.system_info'

# What numpy.distutils reports for Accelerate: Chainer warns when it sees it.
_ACCELERATE_LINK_ARGS = ['-Wl,-framework', '-Wl,Accelerate']


def _numpy_blas_name():
    import numpy

    config = getattr(getattr(numpy, '__config__', None), 'CONFIG', {})
    blas = config.get('Build Dependencies', {}).get('blas', {})
    return str(blas.get('name', '')).lower()


def get_info(name, notfound_action=0):
    """For ``'blas_opt'``, the Accelerate link arguments when NumPy was built
    against Accelerate; otherwise ``{}``, numpy.distutils' "not found"."""
    if name == 'blas_opt' and _numpy_blas_name() == 'accelerate':
        return {'extra_link_args': list(_ACCELERATE_LINK_ARGS)}
    return {}


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds :data:`PACKAGE` (an empty package) and :data:`SYSTEM_INFO`
    (:func:`get_info` only); any other name is left to the other finders."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in (PACKAGE, SYSTEM_INFO):
            return None
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=fullname == PACKAGE)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__doc__ = ('chainer_fastpath\'s stand-in: what Chainer 7.8.1 '
                          'imports from NumPy\'s missing numpy.distutils')
        if module.__name__ == SYSTEM_INFO:
            module.get_info = get_info


FINDER = _StandInFinder()


def install():
    """Puts the finder last on ``sys.meta_path`` (once)."""
    if FINDER not in sys.meta_path:
        sys.meta_path.append(FINDER)
