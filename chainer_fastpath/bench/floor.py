"""The arithmetic floor of a workload: the share of its patched time spent
in work that stock and patched both must do, measured with ``perf``.

A patched worker builds the workload and warms it up; ``perf record`` then
samples it (and only it) while it runs its steps, for a second at least.
Each sample is counted as arithmetic when its function is one of:

- BLAS (OpenBLAS, MKL, BLIS) and libm, but for libm's floating-point
  environment functions (``fetestexcept``, ``feclearexcept``, ...), with
  which the patch tests the flags stock's NumPy calls would act on;
- NumPy's typed inner loops (``FLOAT_add_AVX2``, ``simd_exp_FLOAT``,
  ``DOUBLE_pairwise_sum``, ...), the generic loops that call a scalar
  function per item (``PyUFunc_ff_f`` calling ``npy_logaddexpf``) and
  those functions, its copy and cast loops, the copy loops of indexing by
  an array (``mapiter_get``), the select loop that ``numpy.where`` runs
  inside ``PyArray_Where`` itself, and libc's ``memcpy`` / ``memmove`` /
  ``memset``;
- NumPy's random number generators;
- this project's C loops (``cfp_*``): the optimizer kernels, which do the
  arithmetic of NumPy's per-parameter update loops, the convolution
  patches, which do the copies of stock's ``im2col``, the passes of
  batch normalization, ReLU's gradient and LeakyReLU, which do the
  elementwise arithmetic of stock's NumPy calls (batch normalization's
  sums run NumPy's own loop), and the row gathers and scatter-adds of
  EmbedID, the hierarchical softmax and negative sampling, which do
  stock's fancy indexing copies and its ``gW[ix] += igy`` and
  ``gW[ik] += ig * x`` and the elementwise steps of the last two's
  per-sample NumPy calls, the sums of rows over a middle axis (``Sum``), and
  the passes of the fused LSTM and softmax cross entropy, which do the
  arithmetic of their stock forwards but for tanh, exp and log (NumPy's);
  not those ``cfp_`` functions that keep the project's own books (its
  attribute caches, allocation, NaN scans, index checks).

Everything else (the interpreter, Chainer's and NumPy's Python-facing
code, this project's glue, the kernel, the allocator) is overhead.
"""
import collections
import re
import shutil
import signal
import subprocess
import tempfile
import time

ARITHMETIC_LIBRARIES = re.compile(r'openblas|libmkl|libblis|libm[.-]')
RANDOM_LIBRARIES = re.compile(
    r'^(_mt19937|mtrand|_common|_generator|_pcg64|_philox|_sfc64|'
    r'bit_generator)\.')
NUMPY_LOOP = re.compile(
    r'^(BOOL|U?BYTE|U?SHORT|U?INT|U?LONG|U?LONGLONG|HALF|C?FLOAT|C?DOUBLE|'
    r'C?LONGDOUBLE)_(?!(setitem|getitem|fillwithscalar|fill|'
    r'compare|nonzero|scan|fromstr)$)'
    r'|^simd_|^npyv_|pairwise_sum|sum_of_products|^_?(aligned|unaligned|'
    r'contig|strided|swap|cast)_|_to_(contig|strided)|^_contig_to_contig$'
    r'|^PyArray_Where$|^PyUFunc_[efdgFDG]{1,2}_[efdgFDG]'
    r'(_As_[efdgFDG]{1,2}_[efdgFDG])?$'
    r'|^npy_(logaddexp2?|log1p|expm1|exp2|log2|hypot|atan2|cbrt|remainder'
    r'|divmod|floor_divide|fmod|copysign|nextafter|spacing|heaviside)[fl]?$'
    r'|^mapiter_(trivial_)?(get|set)$')
LIBC_COPY = re.compile(r'^__(memmove|memcpy|memset)_')
# This project's C functions named cfp_ that are its own bookkeeping, not
# stock's arithmetic: attribute caches, array allocation, NaN scans, index
# checks.
PROJECT_BOOKKEEPING = re.compile(
    r'^cfp_(getattr|setattr|attr_|values_store|new_|has_nan|indices_)')
# <fenv.h>'s functions in libm (and glibc's internal names for them).
FENV = re.compile(r'^(__GI_)?fe[a-z]+$')


def is_arithmetic(dso, symbol):
    """Whether a sample in ``symbol`` of library ``dso`` is arithmetic."""
    if ARITHMETIC_LIBRARIES.search(dso):
        return not FENV.match(symbol)
    if RANDOM_LIBRARIES.search(dso):
        return True
    if dso.startswith('_multiarray_umath'):
        return bool(NUMPY_LOOP.search(symbol))
    if dso.startswith('libc.'):
        return bool(LIBC_COPY.search(symbol))
    return (symbol.startswith('cfp_')
            and not PROJECT_BOOKKEEPING.match(symbol))


def available():
    """``None`` when ``perf`` can sample here, else why not."""
    if shutil.which('perf') is None:
        return 'perf is not installed'
    probe = subprocess.run(['perf', 'record', '-q', '-o', '/dev/null',
                            'true'], capture_output=True, text=True)
    if probe.returncode != 0:
        return 'perf record fails: ' + probe.stderr.strip()[:80]
    return None


def _samples(path):
    """``{(dso, symbol): samples}`` from ``perf report`` of ``path``."""
    report = subprocess.run(
        ['perf', 'report', '-i', path, '--sort', 'dso,sym', '--stdio', '-q',
         '-F', 'sample,dso,sym'],
        capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    for line in report.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[0].isdigit():
            counts[parts[1], parts[3].strip()] += int(parts[0])
    return counts


def is_kernel(dso):
    """Whether a sample in library ``dso`` is the kernel's (page faults of
    fresh buffers, mostly); perf records none where the system forbids
    it (``perf_event_paranoid`` 2 for a user)."""
    return dso.startswith('[kernel')


def shares(worker, frequency=2999, seconds=1.0):
    """Samples ``worker`` (a :class:`.runner.Worker` with a workload set
    up) through ``run``s repeated for at least ``seconds`` (one repeat of
    a per-op workload lasts milliseconds: a few samples); returns the
    arithmetic share of the samples, the kernel's, and the number of
    samples."""
    with tempfile.TemporaryDirectory() as tmp:
        path = tmp + '/perf.data'
        perf = subprocess.Popen(
            ['perf', 'record', '-q', '-F', str(frequency), '-o', path,
             '-p', str(worker.proc.pid)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)    # perf attaches asynchronously
        start = time.perf_counter()
        worker.ask('run')
        while time.perf_counter() - start < seconds:
            worker.ask('run')
        perf.send_signal(signal.SIGINT)
        perf.communicate()
        counts = _samples(path)
    total = sum(counts.values())
    arithmetic = sum(n for (dso, sym), n in counts.items()
                     if is_arithmetic(dso, sym))
    kernel = sum(n for (dso, _), n in counts.items() if is_kernel(dso))
    if not total:
        return float('nan'), float('nan'), 0
    return arithmetic / total, kernel / total, total
