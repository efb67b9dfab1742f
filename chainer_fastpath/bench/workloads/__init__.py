"""Workloads: plain Chainer programs, timed per step.

Each workload is a function ``make(seed) -> (step, result)`` or
``(step, result, note)``: ``step()`` runs one unit of work, ``result()``
returns ``{name: array}``, what the steps left (the model's parameters and
the last loss, or the outputs or gradients computed), which must be bit for
bit identical stock vs patched for the same seed (the runner compares their
:func:`digest`), and ``note()``, where given, a short line for under the
table (an accuracy, say). ``make`` raises :class:`Skip` when an optional
dependency is missing. Modules register theirs with :func:`workload`;
``WORKLOADS`` keeps the order in which they are listed below, then the
programs of :mod:`chainer_fastpath.bench.programs` (section ``programs``:
whole training scripts written as Chainer users write them, at their
usual sizes).

Some workloads have a PyTorch twin, registered with :func:`torch_twin`: the
same model, data shapes and optimizer written as PyTorch users write them.
Twins import torch inside ``make``, so the Chainer processes never load it.
"""
import hashlib
import importlib

import numpy

WORKLOADS = {}
SECTIONS = {}
TORCH_TWINS = {}
MODULES = ('micro', 'optimizers', 'backward', 'digits', 'seq_labeler',
           'lstm_lm', 'tree_net', 'large_mlp')


class Skip(Exception):
    """Raised by ``make`` when the workload cannot run here; the message
    says why (shown in the table instead of times)."""


def workload(name, quick_steps, section='workloads'):
    """Registers a workload; ``quick_steps`` is its step count per repeat,
    ``section`` the table it is listed in."""
    def register(make):
        WORKLOADS[name] = (make, quick_steps)
        SECTIONS[name] = section
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


def digest(arrays):
    """The sha256 (hex) of ``{name: array}``: every array's name, dtype,
    shape and raw bytes, in the order of the names. Two results have the
    same digest only if they are bit for bit the same, where a sum could
    hide differences that cancel."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = numpy.asarray(arrays[name])
        if a.dtype.hasobject:
            # Their bytes would be addresses, different in every process.
            raise TypeError('cannot digest {!r}: dtype {}'.format(
                name, a.dtype))
        h.update('{}\0{}\0{}\0'.format(name, a.dtype.str, a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def params(model, grads=False):
    """``{name: array}`` of the parameters of a Chainer link or a torch
    module, or with ``grads`` of their gradients."""
    if hasattr(model, 'namedparams'):
        return {name: p.grad if grads else p.array
                for name, p in model.namedparams()}
    return {name: (p.grad if grads else p).detach().numpy()
            for name, p in model.named_parameters()}


for _module in MODULES:
    importlib.import_module(__name__ + '.' + _module)
importlib.import_module('chainer_fastpath.bench.programs')
