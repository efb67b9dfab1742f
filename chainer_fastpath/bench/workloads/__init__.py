"""Workloads: plain Chainer programs, timed per step.

Each workload is a function ``make(seed) -> (step, result)``: ``step()`` runs
one unit of work, ``result()`` returns a float that must be identical stock
vs patched for the same seed (a loss, or a checksum of parameters/outputs).
Modules register theirs with :func:`workload`; ``WORKLOADS`` keeps the order
in which they are listed below.
"""
import importlib

import numpy

WORKLOADS = {}
MODULES = ('micro', 'optimizers', 'backward')


def workload(name, quick_steps):
    """Registers a workload; ``quick_steps`` is its step count per repeat."""
    def register(make):
        WORKLOADS[name] = (make, quick_steps)
        return make
    return register


def checksum(arrays):
    """A float summarizing arrays, for equality stock vs patched."""
    return float(sum(float(numpy.asarray(a, dtype=numpy.float64).sum())
                     for a in arrays))


for _module in MODULES:
    importlib.import_module(__name__ + '.' + _module)
