"""Workloads: plain Chainer programs, timed per step.

Each workload is a function ``make(seed) -> (step, result)`` or
``(step, result, note)``: ``step()`` runs one unit of work, ``result()``
returns a float that must be identical stock vs patched for the same seed (a
loss, or a checksum of parameters/outputs), and ``note()``, where given, a
short line for under the table (an accuracy, say). ``make`` raises
:class:`Skip` when an optional dependency is missing. Modules register theirs
with :func:`workload`; ``WORKLOADS`` keeps the order in which they are listed
below.

Some workloads have a PyTorch twin, registered with :func:`torch_twin`: the
same model, data shapes and optimizer written as PyTorch users write them.
Twins import torch inside ``make``, so the Chainer processes never load it.
"""
import importlib

import numpy

WORKLOADS = {}
TORCH_TWINS = {}
MODULES = ('micro', 'optimizers', 'backward', 'digits', 'seq_labeler',
           'lstm_lm', 'tree_net', 'large_mlp')


class Skip(Exception):
    """Raised by ``make`` when the workload cannot run here; the message
    says why (shown in the table instead of times)."""


def workload(name, quick_steps):
    """Registers a workload; ``quick_steps`` is its step count per repeat."""
    def register(make):
        WORKLOADS[name] = (make, quick_steps)
        return make
    return register


def torch_twin(name):
    """Registers ``make`` as the PyTorch implementation of workload
    ``name``; it is timed with the same step count."""
    def register(make):
        TORCH_TWINS[name] = make
        return make
    return register


def import_torch():
    """Returns torch set to one thread, as the Chainer processes run."""
    import torch
    torch.set_num_threads(1)
    return torch


def checksum(arrays):
    """A float summarizing arrays, for equality stock vs patched."""
    return float(sum(float(numpy.asarray(a, dtype=numpy.float64).sum())
                     for a in arrays))


def model_checksum(model, loss=0.0):
    """:func:`checksum` of a model's parameters (a Chainer link or a torch
    module), plus ``loss``: the state a training step leaves."""
    if hasattr(model, 'namedparams'):
        arrays = [p.array for p in model.params()]
    else:
        arrays = [p.detach().numpy() for p in model.parameters()]
    return checksum(arrays) + loss


for _module in MODULES:
    importlib.import_module(__name__ + '.' + _module)
