"""The patch table: what is replaced, by what, and how to put it back.

Every patched target is one :class:`Patch` row. Originals are read once, from
the owner's ``__dict__``, the first time the table is built; ``disable()``
restores those very objects, so patching twice or after someone else's
monkey-patch cannot lose the original.
"""
import collections
import logging
import threading

import chainer

logger = logging.getLogger('chainer_fastpath')

SUPPORTED_CHAINER = ((7, 8, 0), (7, 9, 0))   # [low, high)

Patch = collections.namedtuple(
    'Patch', ['part', 'owner', 'attribute', 'replacement', 'original'])

_lock = threading.RLock()
_table = None          # tuple of Patch, built on the first enable()
_installed = ()        # the rows currently installed


def chainer_version():
    parts = []
    for p in chainer.__version__.split('.')[:3]:
        digits = ''.join(c for c in p if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (3 - len(parts)))


def version_supported():
    low, high = SUPPORTED_CHAINER
    return low <= chainer_version() < high


def _row(part, owner, attribute, module):
    original = owner.__dict__[attribute]
    bind_target = getattr(module, 'bind_target', None)
    if bind_target is not None:
        # a module with several targets returns each one's replacement
        replacement = bind_target(owner, attribute, original)
    else:
        module.bind(original)
        replacement = getattr(module, attribute)
    return Patch(part, owner, attribute, replacement, original)


def _rows(part, module):
    """The rows of a module with ``TARGETS`` and ``bind(owner, attribute,
    original)``, the protocol every patched module is moving to."""
    rows = []
    for owner, attribute in module.TARGETS:
        original = owner.__dict__[attribute]
        rows.append(Patch(part, owner, attribute,
                          module.bind(owner, attribute, original), original))
    return tuple(rows)


def _build_table():
    from chainer_fastpath import _arith
    from chainer_fastpath import _fast_call
    from chainer_fastpath import _force_array
    from chainer_fastpath import _link_call
    from chainer_fastpath import _fast_backward
    from chainer_fastpath import _unchain
    from chainer_fastpath import optimizers

    return (
        _row('forward', chainer.FunctionNode, 'apply', _fast_call),
        _row('forward', chainer.utils, 'force_array', _force_array),
        _row('forward', chainer.Link, '__call__', _link_call),
    ) + tuple(_row('forward', owner, attribute, _arith)
              for owner, attribute in _arith.targets()) + (
        _row('backward', chainer.Variable, 'backward', _fast_backward),
        _row('backward', chainer._backprop, '_backprop_to_all',
             _fast_backward),
        _row('backward', chainer.Variable, 'unchain_backward', _unchain),
    ) + _rows('optimizers', optimizers)


def table():
    """Returns the patch table, building it on first use."""
    global _table
    with _lock:
        if _table is None:
            _table = _build_table()
        return _table


def install(parts):
    """Makes exactly the rows of ``parts`` installed; all or nothing.

    On any failure every target is put back as it was before the call.
    """
    global _installed
    with _lock:
        wanted = tuple(r for r in table() if r.part in parts)
        changes = [(r, r.original) for r in _installed if r not in wanted]
        changes += [(r, r.replacement) for r in wanted]
        done = []
        try:
            for row, value in changes:
                setattr(row.owner, row.attribute, value)
                done.append(row)
        except BaseException:
            for row in reversed(done):
                setattr(row.owner, row.attribute,
                        row.replacement if row in _installed
                        else row.original)
            raise
        _installed = wanted
        return wanted


def uninstall():
    """Puts every original back."""
    install(())


def installed():
    return _installed
