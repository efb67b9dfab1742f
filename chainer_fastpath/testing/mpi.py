"""Launching MPI jobs from tests, the compat runner and the benchmark:
``mpiexec -n N python ...`` with settings that let it run here, and a
timeout that kills the whole job (mpiexec and every rank)."""
import os
import shutil
import signal
import subprocess
import sys

# Open MPI refuses root and more ranks than cores unless told; other MPIs
# ignore these variables. Each rank runs one thread.
ENV = {
    'OMPI_ALLOW_RUN_AS_ROOT': '1',
    'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
    'OMPI_MCA_rmaps_base_oversubscribe': '1',
    'OMP_NUM_THREADS': '1',
}


def missing():
    """Why MPI jobs cannot run here, or None when they can."""
    if shutil.which('mpiexec') is None:
        return 'mpiexec not found (make test-mpi installs Open MPI)'
    try:
        import mpi4py  # noqa: F401  (imported to learn it is installed)
    except ImportError:
        return 'mpi4py is not installed (make test-mpi installs it)'
    return None


def command(ranks, args):
    """``mpiexec -n ranks <this python> args`` as a list."""
    return ['mpiexec', '-n', str(ranks), sys.executable] + list(args)


def environment(extra=None):
    """This process's environment plus :data:`ENV` plus ``extra``."""
    env = dict(os.environ, **ENV)
    env.update(extra or {})
    return env


def run(cmd, timeout, env=None, cwd=None, stderr=subprocess.PIPE):
    """Runs ``cmd``; returns the CompletedProcess (text output), or raises
    ``subprocess.TimeoutExpired`` after killing its whole process group."""
    # The ranks are mpiexec's children: a new session makes them one group
    # that a timeout can kill, so a hung job never outlives its caller.
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=stderr,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out, err = _kill_group(proc)
        e.stdout, e.stderr = out, err
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill_group(proc):
    """SIGTERM, then SIGKILL, to the group; returns what was printed."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            continue
    return proc.communicate()
