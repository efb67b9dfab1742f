"""What the compiled replacements of Chainer's public functions (``F.relu``,
``F.sigmoid``, ``F.tanh``, ``F.sum``, ``F.linear``, ``F.concat``,
``F.split_axis``, ``F.get_item``) share.

Each stock function binds its arguments, builds a node and applies it;
each replacement does the same without the interpreter, and leaves to
stock anything it does not take: a call Python would reject (so the error
is Python's own), an unusual argument, debug mode (whose node stacks show
the stock function's frame).
"""
from chainer_fastpath._core import _registry
from chainer_fastpath._core import _stats
from cpython.object cimport PyObject

from chainer_fastpath._core._dicts cimport cfp_dict_item_keyed
from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._runtime._apply_node cimport apply_new, apply_or_debug


cdef inline object _first(object outputs, bint unpack):
    # ``y, = outputs`` (``outputs[0]`` where not ``unpack``); None for None.
    if outputs is None:
        return None
    if not unpack:
        return outputs[0]
    y, = outputs
    return y


cdef class Public:
    """One public function: its counters (``row``), its parameters and
    their defaults, the module whose globals its stock body reads, and the
    stock function, the first one bound, to fall back to."""

    def __init__(self, row, module, names, defaults):
        self.stats = _stats.entry(row)
        self.signature = Signature(names, defaults)
        self.globals = module.__dict__
        self.original = None

    def bind(self, replacement, original):
        """Keeps ``original`` (the first given) to fall back to, lets
        ``replacement`` count as stock where compiled backwards reproduce
        the original's nodes; returns ``replacement``."""
        if self.original is None:
            self.original = original
        _registry.accept_equivalent(original, replacement)
        return replacement

    cdef tuple arguments(self, tuple args, dict kwargs):
        """The parameters' values for a call ``f(*args, **kwargs)``, bound
        as Python binds them; None, counted, where Python would raise."""
        cdef tuple values = self.signature.bind(args, kwargs)
        if values is None:
            self.stats.fallback(self.signature.mismatch)
        return values

    cdef object apply_all(self, object node, object inputs):
        """``node.apply(inputs)``, counted; None in debug mode, where
        nothing was applied."""
        return self._counted(apply_or_debug(node, inputs))

    cdef object _counted(self, object outputs):
        # apply_all's count of what apply_or_debug or apply_new returned.
        if outputs is None:
            self.stats.fallback('debug mode')
            return None
        self.stats.fast += 1
        return outputs

    cdef object apply(self, object node, object inputs, bint unpack=True):
        """``y, = node.apply(inputs)`` (or ``node.apply(inputs)[0]`` where
        not ``unpack``), counted; None in debug mode, where nothing was
        applied."""
        return _first(self.apply_all(node, inputs), unpack)

    cdef object apply_class(self, object cls, tuple inputs,
                            bint unpack=True):
        """``apply`` of a new node of ``cls``, a class that ``construct``
        makes: none is made without backprop where nothing could see it
        (``_runtime._apply_node.apply_new``)."""
        return _first(self._counted(apply_new(cls, inputs)), unpack)

    cdef object read_global(self, str name):
        """The global ``name`` of the stock function's module, read as its
        body reads it, per call; None where there is none."""
        cdef PyObject *found = cfp_dict_item_keyed(&self.global_reads,
                                                   self.globals, name)
        return <object>found if found is not NULL else None

    cdef object stock(self, tuple args, dict kwargs):
        """The stock function called as the replacement was."""
        return self.original(*args, **kwargs)

    cdef object call_new(self, str node_class, tuple args, dict kwargs,
                         bint unpack=True):
        """A call of a stock function whose body is ``y, =
        node_class().apply(inputs); return y`` (``return
        node_class().apply(inputs)[0]`` where not ``unpack``), the inputs
        its parameters' values, the class read from its module as stock
        reads it."""
        cdef tuple values = self.arguments(args, kwargs)
        if values is not None:
            cls = self.read_global(node_class)
            if cls is not None:
                y = self.apply_class(cls, values, unpack)
                if y is not None:
                    return y
        return self.stock(args, kwargs)
