"""``python -m chainer_fastpath doctor``: the environment, as a bug report
needs it (in the spirit of ``chainer.print_runtime_info()``).

Every probe reports its own failure as its value, so one broken part (a
module that does not load, a Chainer that does not import) never hides the
rest of the report.
"""
import ctypes
import importlib
import importlib.machinery
import os
import platform
import shutil
import subprocess
import sys

# OpenBLAS's x86-64 kernel families by the widest vector extension they use:
# 0 SSE only, 1 AVX, 2 AVX2 with FMA, 3 AVX-512. Names as
# openblas_get_corename returns them, lower-cased; any other name ranks 0.
_CORE_RANK = {
    'sandybridge': 1, 'bulldozer': 1, 'piledriver': 1, 'steamroller': 1,
    'excavator': 1,
    'haswell': 2, 'zen': 2,
    'skylakex': 3, 'cooperlake': 3, 'sapphirerapids': 3,
}
# The /proc/cpuinfo flags each rank needs, and the core type to ask for.
_CPU_LEVELS = (
    (3, {'avx512f', 'avx512cd', 'avx512bw', 'avx512dq', 'avx512vl'},
     'SkylakeX', 'AVX-512'),
    (2, {'avx2', 'fma'}, 'Haswell', 'AVX2'),
    (1, {'avx'}, 'Sandybridge', 'AVX'),
)
# Substrings of a mapped library's file name that make it a BLAS.
_BLAS_NAMES = ('openblas', 'mkl_rt', 'libblis', 'libblas', 'libcblas',
               'accelerate')


def _error(exc):
    return 'FAILED: {}: {}'.format(type(exc).__name__, exc)


def _probe(fn, *args):
    """``fn(*args)``, or the error it raised as text."""
    try:
        return fn(*args)
    except Exception as e:      # a report, not a check: say what went wrong
        return _error(e)


def _distribution_version(name):
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return 'not installed'


def _cpu():
    """``(model name, set of flags)`` of the first CPU in /proc/cpuinfo;
    empty where there is none to read."""
    model, flags = '', set()
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                key, _, value = line.partition(':')
                key = key.strip()
                if key == 'model name' and not model:
                    model = value.strip()
                elif key == 'flags':
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return model, flags


def cpu_level(flags):
    """``(rank, core type, extension name)`` of the widest vector extension
    that ``flags`` (from /proc/cpuinfo) has; rank 0 for SSE only."""
    for rank, needed, core, extension in _CPU_LEVELS:
        if needed <= flags:
            return rank, core, extension
    return 0, None, 'SSE'


def coretype_advice(corename, flags, config=''):
    """The advice to set OPENBLAS_CORETYPE when OpenBLAS chose kernels older
    than the CPU's ``flags`` allow; None when its choice fits the CPU."""
    rank, core, extension = cpu_level(flags)
    if _CORE_RANK.get(corename.lower(), 0) >= rank:
        return None
    if config and 'DYNAMIC_ARCH' not in config:
        return ('OpenBLAS was built for {} only; the CPU has {}: a build '
                'for it would be faster'.format(corename, extension))
    return ('OpenBLAS chose {} kernels on a CPU with {}: '
            '`export OPENBLAS_CORETYPE={}` selects faster ones (BLAS '
            'results may then differ in the last bits, stock and patched '
            'alike)'.format(corename, extension, core))


def _python():
    model, _ = _cpu()
    return [
        ('version', '{} ({})'.format(platform.python_version(),
                                     platform.python_implementation())),
        ('executable', sys.executable),
        ('platform', platform.platform()),
        ('CPU', model or platform.machine()),
    ]


def machine():
    """One line naming what a measurement ran on: the CPU, the kernels
    OpenBLAS chose for it (BLAS-bound figures depend on them), Python,
    NumPy, Chainer and, where installed, PyTorch."""
    model, _ = _cpu()
    parts = [model or platform.machine()]
    try:
        path = blas_library()
        core = dict(_openblas(path)).get('core type') if path else None
    except Exception:   # a label, not a check: without it, no core type
        core = None
    if core:
        parts.append('OpenBLAS core type ' + core)
    parts += ['Python ' + platform.python_version(),
              'NumPy ' + _probe(_numpy_version),
              'Chainer ' + _probe(_chainer_version)]
    torch = _distribution_version('torch')
    if torch != 'not installed':
        parts.append('PyTorch ' + torch)
    return ', '.join(parts)


def _chainer_version():
    import chainer

    return chainer.__version__


def _numpy_version():
    import numpy

    return numpy.__version__


def _packages():
    import chainer_fastpath

    return [
        ('chainer_fastpath', '{} ({})'.format(
            chainer_fastpath.__version__,
            os.path.dirname(chainer_fastpath.__file__))),
        ('NumPy', _probe(_numpy_version)),
        ('Chainer', _probe(_chainer_version)),
        ('Cython', _distribution_version('Cython')),
        ('setuptools', _distribution_version('setuptools')),
    ]


def module_names():
    """Every module the package compiles (one per ``.pyx``, as setup.py
    builds them) and every module of ``functions.MODULES``."""
    import chainer_fastpath
    from chainer_fastpath import functions

    root = os.path.dirname(chainer_fastpath.__file__)
    names = {'chainer_fastpath.functions.' + m for m in functions.MODULES}
    for folder, _, files in os.walk(root):
        relative = os.path.relpath(folder, os.path.dirname(root))
        for f in files:
            if f.endswith('.pyx'):
                names.add('.'.join(relative.split(os.sep) + [f[:-4]]))
    return sorted(names)


def _load(name):
    module = importlib.import_module(name)
    compiled = module.__file__.endswith(
        tuple(importlib.machinery.EXTENSION_SUFFIXES))
    return 'ok ({})'.format('compiled' if compiled else 'Python')


def _modules():
    return [(name, _probe(_load, name)) for name in module_names()]


def _patch_rows():
    from chainer_fastpath import PARTS, _patch

    rows = _patch.table()
    return ', '.join('{} {}'.format(part, sum(r.part == part for r in rows))
                     for part in PARTS)


def _supported():
    from chainer_fastpath import _patch

    return 'yes' if _patch.version_supported() else 'no'


def _installed_parts():
    from chainer_fastpath import PARTS, _patch

    parts = {r.part for r in _patch.installed()}
    return ', '.join(p for p in PARTS if p in parts) or 'none'


def _fast_path():
    return [
        ('Chainer supported', _probe(_supported)),
        ('patch table rows', _probe(_patch_rows)),
        ('enabled now', _probe(_installed_parts)),
        ('CHAINER_FASTPATH', os.environ.get('CHAINER_FASTPATH', 'unset')),
    ]


def blas_library():
    """The path of the BLAS library this process has mapped (after importing
    NumPy), or None."""
    import numpy   # noqa: F401  (maps NumPy's BLAS)

    with open('/proc/self/maps') as f:
        paths = {line.split(None, 5)[5].strip() for line in f
                 if len(line.split(None, 5)) == 6}
    for path in sorted(paths):
        if any(n in os.path.basename(path).lower() for n in _BLAS_NAMES):
            return path
    return None


def _openblas_function(lib, name, restype):
    """``openblas_<name>`` under either symbol (NumPy's 64-bit integer
    builds add ``64_``), or None where the library has neither."""
    for symbol in ('openblas_' + name + '64_', 'openblas_' + name):
        fn = getattr(lib, symbol, None)
        if fn is not None:
            fn.restype = restype
            return fn
    return None


def _numpy_blas_build():
    import numpy

    config = getattr(numpy, '__config__', None)
    blas = getattr(config, 'CONFIG', {}).get(
        'Build Dependencies', {}).get('blas', {})
    if blas:
        return '{} {}'.format(blas.get('name', '?'), blas.get('version', ''))
    # NumPy before 1.26 (the newest on Python 3.8) kept numpy.distutils'
    # system_info results instead.
    for name in ('blas_ilp64_opt_info', 'blas_opt_info'):
        libraries = getattr(config, name, {}).get('libraries')
        if libraries:
            return ', '.join(dict.fromkeys(libraries))
    return 'not recorded by this NumPy'


def _openblas(path):
    """The rows OpenBLAS at ``path`` answers; none for another BLAS."""
    lib = ctypes.CDLL(path)
    get_corename = _openblas_function(lib, 'get_corename', ctypes.c_char_p)
    if get_corename is None:
        return []
    corename = get_corename().decode()
    config = _openblas_function(lib, 'get_config', ctypes.c_char_p)
    config = config().decode() if config is not None else ''
    threads = _openblas_function(lib, 'get_num_threads', ctypes.c_int)
    _, flags = _cpu()
    rows = [
        ('OpenBLAS', config),
        ('core type', corename),
        ('threads', str(threads()) if threads is not None else '?'),
        ('OPENBLAS_CORETYPE', os.environ.get('OPENBLAS_CORETYPE', 'unset')),
        ('CPU vector flags', cpu_level(flags)[2]),
    ]
    advice = coretype_advice(corename, flags, config)
    if advice:
        rows.append(('advice', advice))
    return rows


def _blas():
    rows = [('NumPy built with', _probe(_numpy_blas_build))]
    path = _probe(blas_library)
    rows.append(('library', path or 'none found in /proc/self/maps'))
    if path and not path.startswith('FAILED'):
        openblas = _probe(_openblas, path)
        rows += [('OpenBLAS', openblas)] if isinstance(openblas, str) \
            else openblas
    return rows


def _mpiexec_version():
    path = shutil.which('mpiexec')
    if path is None:
        return 'not found'
    out = subprocess.run([path, '--version'], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=30)
    first = out.stdout.strip().splitlines()
    return '{} ({})'.format(first[0] if first else '?', path)


def _mpi():
    return [
        ('mpiexec', _probe(_mpiexec_version)),
        ('mpi4py', _distribution_version('mpi4py')),
    ]


def sections():
    """``[(title, [(key, value), ...]), ...]``: what doctor prints."""
    return [
        ('Python', _python()),
        ('Packages', _packages()),
        ('Compiled modules', _modules()),
        ('Fast path', _fast_path()),
        ('BLAS', _blas()),
        ('MPI', _mpi()),
    ]


def format_sections(secs):
    lines = []
    for title, rows in secs:
        width = max(len(key) for key, _ in rows)
        lines.append(title)
        lines.extend('  {:<{w}}  {}'.format(key, value, w=width)
                     for key, value in rows)
    return '\n'.join(lines)


def main(file=None):
    """Prints the report; returns 1 when a module failed to load, else 0."""
    secs = sections()
    print(format_sections(secs), file=sys.stdout if file is None else file)
    modules = dict(secs)['Compiled modules']
    return 1 if any(v.startswith('FAILED') for _, v in modules) else 0
