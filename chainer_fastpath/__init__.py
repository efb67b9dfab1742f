"""Compiled fast paths for Chainer 7.8's Python bookkeeping.

>>> import chainer_fastpath
>>> chainer_fastpath.enable()        # doctest: +SKIP

From then on ``FunctionNode.apply``, ``Variable.backward`` and the optimizers'
update loops run in compiled code where the case is supported, and in stock
Chainer's code where it is not. :func:`disable` puts the originals back.
"""
import contextlib
import logging
import os
import sys

from chainer_fastpath import _numpy_distutils

__version__ = '0.1.0'
__all__ = ['enable', 'disable', 'is_enabled', 'enabled', 'stats',
           'function_stats', 'report', 'reset_stats', 'get_original',
           'PARTS']

logger = logging.getLogger('chainer_fastpath')

PARTS = ('forward', 'backward', 'optimizers')

# The largest freed block, in MiB, that malloc keeps for reuse by default.
KEEP_MEMORY_MIB = 1024

# Chainer 7.8.1 imports numpy.distutils, which NumPy lacks on Python 3.12.
_numpy_distutils.install()


def _env_flag(name):
    value = os.environ.get(name, '').strip().lower()
    if value in ('', 'default'):
        return None
    return value not in ('0', 'false', 'no', 'off')


def _env_int(name, default):
    """A count of ``name``: its integer, 0 where it says off, else
    ``default``."""
    flag = _env_flag(name)
    if flag is None:
        return default
    if flag is False:
        return 0
    try:
        return max(int(os.environ[name]), 0)
    except ValueError:
        logger.warning('%s=%r is not a number: using %d', name,
                       os.environ[name], default)
        return default


def _configure_verbose():
    from chainer_fastpath._core import _stats

    verbose = bool(_env_flag('CHAINER_FASTPATH_VERBOSE'))
    _stats.set_verbose(verbose)
    if verbose:
        if logger.level == logging.NOTSET or logger.level > logging.INFO:
            logger.setLevel(logging.INFO)
        if not logger.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(
                logging.Formatter('%(name)s: %(message)s'))
            logger.addHandler(handler)


def enable(forward=True, backward=True, optimizers=True, exclude=(),
           keep_memory=True):
    """Installs the fast paths selected by the arguments.

    ``exclude`` names rows of the patch table to leave stock, as
    ``Owner.attribute`` (``'Link.__call__'``; ``python -m chainer_fastpath
    report`` lists them); an unknown name raises ValueError.

    ``keep_memory`` has malloc keep freed blocks of up to
    ``CHAINER_FASTPATH_KEEP_MEMORY`` MiB (default 1024; 0 turns it off) for
    reuse instead of giving them back to the system, which costs page faults
    when a step makes its large arrays again.

    Returns True when the selected parts are installed. Calling it again is
    harmless; it installs exactly the rows asked for by the latest call.
    Returns False, touching nothing, when ``CHAINER_FASTPATH=0`` is set or the
    installed Chainer version is not supported; the reason is logged.
    """
    from chainer_fastpath import _patch

    if _env_flag('CHAINER_FASTPATH') is False:
        logger.info('CHAINER_FASTPATH=0 is set: the fast path stays off')
        return False
    if not _patch.version_supported():
        import chainer
        low, high = _patch.SUPPORTED_CHAINER
        logger.warning(
            'Chainer %s is not supported (supported: >=%s,<%s): '
            'the fast path stays off', chainer.__version__,
            '.'.join(map(str, low)), '.'.join(map(str, high)))
        return False
    _configure_verbose()
    _reserve_keys()
    selected = {'forward': forward, 'backward': backward,
                'optimizers': optimizers}
    _patch.install(_patch.select([p for p in PARTS if selected[p]],
                                 exclude))
    _set_keep_memory(keep_memory)
    return True


def _set_keep_memory(on):
    from chainer_fastpath import _memory

    limit = _env_int('CHAINER_FASTPATH_KEEP_MEMORY', KEEP_MEMORY_MIB) << 20
    if not on or limit == 0:
        _memory.uninstall()
        return
    why_not = _memory.install(limit)
    if why_not is not None:
        logger.info('freed memory is not kept: %s', why_not)


def _reserve_keys():
    from chainer_fastpath._core import _objects

    try:
        short = _objects.reserve_keys()
    except Exception as e:
        # Only a matter of speed: without it the objects are as they would
        # be.
        logger.info('could not reserve the attribute names of Chainer\'s '
                    'graph classes (%s: %s); the fast path is installed '
                    'without that', type(e).__name__, e)
        return
    if short:
        logger.info(
            'enable() came after the program made many %s objects: they '
            'keep their attributes in a dict each (slower); call enable() '
            'before building the model',
            ', '.join(cls.__name__ for cls in short))


def disable():
    """Restores every original Chainer object (the very same objects) and
    malloc's thresholds."""
    from chainer_fastpath import _memory, _patch

    _patch.uninstall()
    _memory.uninstall()


def is_enabled():
    """True while any fast path is installed."""
    from chainer_fastpath import _patch

    return bool(_patch.installed())


@contextlib.contextmanager
def enabled(forward=True, backward=True, optimizers=True, exclude=(),
            keep_memory=True):
    """Context manager: the fast path is on inside, as it was before after.

    Yields what :func:`enable` returned.
    """
    from chainer_fastpath import _memory, _patch

    previous = _patch.installed()
    previous_memory = _memory.installed()
    try:
        yield enable(forward=forward, backward=backward,
                     optimizers=optimizers, exclude=exclude,
                     keep_memory=keep_memory)
    finally:
        _patch.install(previous)
        _set_keep_memory(previous_memory)


def get_original(owner, name):
    """The stock object that the fast path replaces at ``owner.name``
    (``get_original(chainer.FunctionNode, 'apply')``), whether or not it is
    enabled; KeyError for a target that is not patched."""
    from chainer_fastpath import _patch

    return _patch.get_original(owner, name)


def stats():
    """Calls per patched entry point: ``{name: {'fast': n, 'fallback':
    {reason: n}}}``, counted since import or :func:`reset_stats`."""
    from chainer_fastpath._core import _stats

    return _stats.snapshot()


def function_stats():
    """Per FunctionNode class that ran: its forwards and backwards run
    compiled and as stock's Python, with why, ``{class path: {'name':
    class name, 'forward': {'compiled': n, 'python': n, 'reasons':
    {reason: n}}, 'backward': {...}}}``, the most run first."""
    from chainer_fastpath import _report
    from chainer_fastpath._core import _registry, _stats

    return _report.function_stats(_registry.registered(),
                                  _stats.python_runs())


def reset_stats():
    """Sets every counter back to zero."""
    from chainer_fastpath._core import _registry, _stats

    _stats.reset()
    _registry.reset_counts()


def report(file=None, json_file=None):
    """Prints what ran where since the counters were reset: a headline,
    the entry points that ran, and one row per FunctionNode class with its
    forwards and backwards compiled or as stock's Python, and why. With
    ``json_file`` (a path), writes the same as JSON there too."""
    from chainer_fastpath import _report

    functions = function_stats()
    print(_report.format_report(stats(), is_enabled(), functions),
          file=sys.stdout if file is None else file)
    if json_file is not None:
        import json
        with open(json_file, 'w') as f:
            json.dump(_report.report_json(stats(), is_enabled(), functions),
                      f, indent=1)
