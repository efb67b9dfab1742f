"""Where a program's time goes: ``run --profile``.

The program runs under ``py-spy record --native``, which samples the
process's stacks, native and Python frames interleaved. Each sample is
classified by its stack:

- arithmetic: the innermost frame is work stock and patched both must do
  (BLAS, NumPy's typed loops and copies, its random generators, the
  patch's C kernels: ``bench.floor.is_arithmetic``);
- the cyclic GC: a frame of CPython's collector;
- otherwise, the innermost frame that says whose work it is, skipping
  CPython's and libc's (the interpreter and allocator work for the frame
  above them): the compiled fast path (a module of this package), NumPy's
  C code (its dispatch and allocation), Chainer's Python, NumPy's Python,
  or the program's own Python (its script, the standard library and any
  other package, and the NumPy calls they make themselves, which no patch
  of Chainer reaches);
- imports: a frame of the import system (start-up, mostly).

py-spy samples wall-clock time of running threads; only threads that run
Python count (not a BLAS worker spinning while it waits), and time in the
kernel (page faults of fresh buffers, say) counts for the frame that caused
it.
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

CATEGORIES = collections.OrderedDict([
    ('arithmetic', 'arithmetic (BLAS, NumPy loops, copies)'),
    ('compiled', 'the compiled fast path'),
    ('numpy_c', "NumPy's C code (dispatch, allocation)"),
    ('chainer', "Chainer's Python"),
    ('numpy_python', "NumPy's Python"),
    ('program', "the program's own Python"),
    ('gc', 'the cyclic GC'),
    ('imports', 'imports (start-up)'),
    ('other', 'other native code'),
])

NO_PY_SPY = ('--profile needs py-spy, which is not installed (`pip install '
             'py-spy`, or `make bench` installs it); the program ran '
             'without it.')

# The environment variable by which the profiled child finds the
# descriptor of the terminal's stdout (py-spy writes its own messages to
# the stdout it gives the child).
STDOUT_FD = 'CHAINER_FASTPATH_PROFILE_STDOUT_FD'

# py-spy writes a Python frame as ``name (file.py:line)``, a native one as
# ``name (library)``, or with debug information ``name (source.c:line)``.
_FRAME = re.compile(r'^(?P<name>.*) \((?P<where>[^()]*?)(?::\d+)?\)$')
# --threads puts a root frame per thread, named where Python knows it.
_THREAD = re.compile(r'^thread \(\d+\)(?P<python>: .*)?$')
_GC = re.compile(r'^(gc_collect|collect|visit_|subtract_refs|'
                 r'move_unreachable|move_legacy_finalizers|'
                 r'finalize_garbage|delete_garbage|update_refs)')
# Native code that works for the frame above it: CPython, libc, the
# loader, and inline functions of headers (``Py_DECREF (object.h:537)``).
_HELPERS = re.compile(r'^(libpython|python\d|libc[.-]|ld-linux|libpthread|'
                      r'[^/]*\.h$)|^$')


def py_spy():
    """The py-spy executable (on PATH, else beside this Python: a venv's
    that is not activated), or None."""
    beside = os.path.join(os.path.dirname(sys.executable), 'py-spy')
    return shutil.which('py-spy') or (
        beside if os.access(beside, os.X_OK) else None)


def _frame(text):
    """``('python', name, file)`` or ``('native', name, library or
    source file)``."""
    m = _FRAME.match(text)
    if m is None:
        return 'native', text, ''
    where = m.group('where')
    if where.endswith(('.py', '.pyw')) or where.startswith('<'):
        return 'python', m.group('name'), where
    return 'native', m.group('name'), where


def _python_owner(path):
    parts = path.replace('\\', '/').split('/')
    if 'chainer_fastpath' in parts[:-1]:
        # The package's few Python functions that run per call are its
        # fast path's; its bench workloads and test helpers are programs.
        inner = parts[parts.index('chainer_fastpath') + 1:]
        return ('program' if inner[0] in ('bench', 'testing', '_script.py')
                else 'compiled')
    for package, category in (('chainer', 'chainer'),
                              ('chainermn', 'chainer'),
                              ('numpy', 'numpy_python')):
        if package in parts[:-1]:
            return category
    return 'program'


def classify(frames):
    """The category of one sample; ``frames`` as py-spy writes them, the
    outermost first."""
    # Here, not at the top: the program ``run`` starts imports this module
    # and must not import the benchmark.
    from chainer_fastpath.bench.floor import is_arithmetic
    frames = [_frame(f) for f in frames]
    if not frames:
        return 'other'
    kind, name, where = frames[-1]
    if kind == 'native' and is_arithmetic(os.path.basename(where), name):
        return 'arithmetic'
    for kind, name, where in frames:
        if kind == 'native' and _GC.match(name) and (
                os.path.basename(where).startswith(('libpython', 'python'))
                or os.path.basename(where) == 'gcmodule.c'):
            return 'gc'
    if any(kind == 'python' and where.startswith('<frozen importlib')
           for kind, _, where in frames):
        return 'imports'
    for i in range(len(frames) - 1, -1, -1):
        kind, name, where = frames[i]
        if kind == 'python':
            owner = _python_owner(where)
            return (_numpy_caller(frames, i) if owner == 'numpy_python'
                    else owner)
        library = os.path.basename(where)
        if is_arithmetic(library, name):
            # BLAS waiting for its threads, say, or this project's C loop
            # (defined in a header) in a copy of libc's.
            return 'arithmetic'
        if _HELPERS.match(library):
            continue
        if 'chainer_fastpath' in where.replace('\\', '/').split('/'):
            return 'compiled'
        if _is_numpy_c(library, where):
            return _numpy_caller(frames, i)
        return 'other'
    return 'other'


def _is_numpy_c(library, where):
    return (where.replace('\\', '/').split('/')[0] == 'numpy'
            or library.startswith('_multiarray_umath'))


def _numpy_caller(frames, i):
    """The category of NumPy's work at ``frames[i]``: its own, unless the
    program's Python called it (through NumPy's Python and C only), whose
    work it is then: no patch of Chainer reaches it."""
    own = 'numpy_c' if frames[i][0] == 'native' else 'numpy_python'
    for kind, name, where in reversed(frames[:i]):
        if kind == 'python':
            owner = _python_owner(where)
            if owner == 'numpy_python':
                continue
            return 'program' if owner == 'program' else own
        library = os.path.basename(where)
        if _HELPERS.match(library) or _is_numpy_c(library, where):
            continue
        return own
    return own


def read_raw(path):
    """``[(frames, samples)]`` from py-spy's ``--format raw`` file."""
    stacks = []
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip('\n').rpartition(' ')
            if stack and count.isdigit():
                stacks.append((stack.split(';'), int(count)))
    return stacks


def split(stacks):
    """``{category: samples}`` over every category, and the samples of
    Chainer's Python per innermost Chainer function."""
    shares = collections.OrderedDict((c, 0) for c in CATEGORIES)
    chainer = collections.Counter()
    for frames, count in stacks:
        thread = _THREAD.match(frames[0]) if frames else None
        if thread:
            # A thread Python does not know (a BLAS worker spinning while
            # it waits for work) is not the program's time.
            if not thread.group('python'):
                continue
            frames = frames[1:]
        category = classify(frames)
        shares[category] += count
        if category == 'chainer':
            for text in reversed(frames):
                kind, name, where = _frame(text)
                if kind == 'python':
                    chainer['{} ({})'.format(name, where)] += count
                    break
    return shares, chainer


def format_split(shares, chainer, rate, top=5):
    """The split as the lines ``run --profile`` prints."""
    total = sum(shares.values())
    lines = ['chainer_fastpath profile: {:,} samples at {} Hz (py-spy '
             '--native); share of the time:'.format(total, rate)]
    width = max(len(label) for label in CATEGORIES.values())
    for category, label in CATEGORIES.items():
        lines.append('  {:<{}}  {:5.1f}%'.format(
            label, width, 100.0 * shares[category] / total if total else 0))
    if chainer:
        lines.append("Chainer's Python, where it ran:")
        for where, count in chainer.most_common(top):
            lines.append('  {:5.1f}%  {}'.format(100.0 * count / total,
                                                 where))
    return lines


def run(child_argv, rate=250):
    """Runs ``child_argv(status_file)`` (a Python command line that writes
    its exit status to ``status_file``, None: not at all) under py-spy and
    prints the split to stderr; returns the child's exit status. Without
    py-spy, runs it as it is, after one line saying so."""
    executable = py_spy()
    if executable is None:
        print(NO_PY_SPY, file=sys.stderr)
        return subprocess.call(child_argv(None))
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, 'stacks.txt')
        status_file = os.path.join(tmp, 'status')
        stdout = os.dup(sys.stdout.fileno())
        env = dict(os.environ, **{STDOUT_FD: str(stdout)})
        try:
            spy = subprocess.run(
                [executable, 'record', '--native', '--threads',
                 '--rate', str(rate),
                 '--format', 'raw', '-o', raw, '--'] + child_argv(status_file),
                env=env, pass_fds=(stdout,), stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True)
        finally:
            os.close(stdout)
        status = _read_status(status_file)
        if not os.path.exists(raw):
            print('chainer_fastpath profile: py-spy sampled nothing: '
                  + (spy.stdout.strip().splitlines() or ['?'])[-1],
                  file=sys.stderr)
            return status if status is not None else spy.returncode
        shares, chainer = split(read_raw(raw))
    print('\n'.join(format_split(shares, chainer, rate)), file=sys.stderr)
    return status if status is not None else spy.returncode


def _read_status(path):
    try:
        with open(path) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def take_stdout():
    """In the profiled child: writes to the terminal's stdout again, which
    py-spy would otherwise interleave with its own messages."""
    fd = os.environ.pop(STDOUT_FD, None)
    if fd is None:
        return
    sys.stdout.flush()
    try:
        os.dup2(int(fd), sys.stdout.fileno())
        os.close(int(fd))
    except (OSError, ValueError):
        pass    # not inherited after all: py-spy's stdout it is
