"""Cases run in a child process: a crash or a hang is a failing case, not
the end of the run.

The child is long-lived (one import of Chainer, many cases) and runs each
case stock and patched itself; only the program goes in and only the
verdict comes back. When it dies, the case it was running is the finding
and a fresh child takes the next case.
"""
import multiprocessing
import signal
import time
import traceback

TIMEOUT = 60.0      # seconds a case may take before it counts as a hang
STARTUP = 600.0     # seconds a fresh worker may take to import Chainer
RECYCLE = 20000     # cases a worker runs before a fresh one takes over


def _check(source, config, skip):
    from chainer_fastpath.testing.fuzz import compare
    from chainer_fastpath.testing.fuzz import execute

    stock, patched = execute.run_both(source, config)
    return compare.verdict(stock, patched, source, config, skip)


# The address space a worker may take: a huge stride or pad makes stock
# (or the patch) ask for arrays of many gigabytes, which then fail with
# MemoryError at once, in both runs, instead of paging the machine out.
MEMORY_LIMIT = 8 << 30


def _limit_memory():
    import resource

    with open('/proc/self/maps') as f:
        if 'asan' in f.read():
            return      # a sanitizer's shadow memory needs its terabytes
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft > MEMORY_LIMIT:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, hard))


def _serve(conn):
    try:
        _limit_memory()
    except (ImportError, OSError, ValueError):
        pass
    import chainer_fastpath
    from chainer_fastpath import _patch

    _patch.table()
    chainer_fastpath.disable()
    conn.send('ready')
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        source, config, skip = message
        try:
            result = _check(source, config, frozenset(skip))
        except BaseException:
            result = ('harness', 'harness error',
                      traceback.format_exc(limit=8))
        conn.send((result, time.process_time()))


def _death(exitcode):
    if exitcode is not None and exitcode < 0:
        try:
            return 'killed by {}'.format(signal.Signals(-exitcode).name)
        except ValueError:
            return 'killed by signal {}'.format(-exitcode)
    return 'exited with status {}'.format(exitcode)


class Worker:
    """A child process that checks programs; started on first use and
    again after each death."""

    def __init__(self, timeout=TIMEOUT):
        self.timeout = timeout
        self._process = None
        self._conn = None
        self.deaths = 0
        self._cases = 0
        self._cpu_before = 0.0    # CPU seconds of the workers that died
        self._cpu = 0.0           # of the current one, as last reported

    @property
    def cpu(self):
        """CPU seconds the workers have spent (up to their last reply)."""
        return self._cpu_before + self._cpu

    def _start(self):
        context = multiprocessing.get_context('spawn')
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,),
                                        daemon=True)
        self._process.start()
        child.close()
        self._conn = parent
        # A case's time limit starts once the imports are done.
        if not parent.poll(STARTUP) or parent.recv() != 'ready':
            raise RuntimeError('the fuzz worker did not start')

    def check(self, program, skip=frozenset()):
        """None when stock and patched agree on ``program``; else
        ``(category, signature, detail)``; a dead or hung child gives
        category 'crash'."""
        if self._cases >= RECYCLE:
            # What a long run accumulates (caches, registries) stays
            # bounded.
            self.close()
        if self._process is None:
            self._start()
            self._cases = 0
        self._cases += 1
        source, config = program.message()
        try:
            self._conn.send((source, config, tuple(sorted(skip))))
            if self._conn.poll(self.timeout):
                result, self._cpu = self._conn.recv()
                return result
            self._process.kill()
            self._process.join()
            what = 'hung for more than {:g} s'.format(self.timeout)
        except (EOFError, OSError):
            self._process.join()
            what = _death(self._process.exitcode)
        self.deaths += 1
        self._discard()
        return ('crash', 'worker ' + what.split(' for ')[0],
                'the worker ' + what)

    def _discard(self):
        self._cpu_before += self._cpu
        self._cpu = 0.0
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None

    def close(self):
        """Stops the child."""
        if self._process is not None:
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
            self._discard()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
