"""The patch table: what is replaced, by what, and how to put it back.

Every patched target is one :class:`Patch` row, named ``Owner.attribute``
as its counters in ``stats()`` are. Each patched module speaks one protocol:
``TARGETS``, the ``(owner, attribute)`` pairs it replaces, and
``bind(owner, attribute, original)``, which keeps the original to fall back
to and returns the replacement. Originals are read once, from the owner's
``__dict__``, the first time the table is built; ``disable()`` restores
those very objects, so patching twice or after someone else's monkey-patch
cannot lose the original. A target that is not Chainer's own code when the
table is built (a mock, another project's patch) is left out, with a
warning.
"""
import collections
import logging
import threading
import warnings

import chainer

logger = logging.getLogger('chainer_fastpath')

SUPPORTED_CHAINER = ((7, 8, 0), (7, 9, 0))   # [low, high)

Patch = collections.namedtuple(
    'Patch', ['part', 'name', 'owner', 'attribute', 'replacement',
              'original'])

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


def row_name(owner, attribute):
    """``Owner.attribute``: a class by its qualified name, a module by the
    last part of its dotted name (``utils.force_array``)."""
    if isinstance(owner, type):
        return '{}.{}'.format(owner.__qualname__, attribute)
    return '{}.{}'.format(owner.__name__.rpartition('.')[2], attribute)


def _modules():
    """``(part, module)`` of every patched module, in the table's order."""
    from chainer_fastpath import _arith
    from chainer_fastpath import _fast_backward
    from chainer_fastpath import _fast_call
    from chainer_fastpath import _force_array
    from chainer_fastpath import _link_call
    from chainer_fastpath import _unchain
    from chainer_fastpath import functions
    from chainer_fastpath import links
    from chainer_fastpath import machinery
    from chainer_fastpath import optimizers

    functions.register_all()
    return (
        ('forward', _fast_call),
        ('forward', _force_array),
        ('forward', _link_call),
        ('forward', _arith),
        ('forward', functions),
        ('forward', links),
        ('forward', machinery),
        ('backward', _fast_backward),
        ('backward', _unchain),
        ('optimizers', optimizers),
    )


# What ``functools.update_wrapper`` copies; ``__wrapped__`` is set as well.
_METADATA = ('__module__', '__name__', '__qualname__', '__doc__',
             '__annotations__')


def _dressed(replacement, original, owner):
    """``replacement`` made to look like ``original``: its name, module,
    qualified name (so it pickles by the original's name), doc,
    annotations, ``__dict__``, and ``__wrapped__ = original`` (so
    ``inspect.signature`` gives the original's)."""
    wrapped = replacement.__dict__.get('__wrapped__', original)
    if wrapped is not original:
        # One object cannot look like two originals: each needs its own.
        raise RuntimeError('{!r} already stands for {!r}, not {!r}'.format(
            replacement, wrapped, original))
    for name in _METADATA:
        setattr(replacement, name, getattr(original, name))
    # Cython's __annotations__ setter leaves an '__annotate__' entry in the
    # function's __dict__, and functools.update_wrapper (which a module's
    # bind may have called) a '__type_params__' one from Python 3.12: a
    # Cython function has no slot for it. The original's __dict__ has none.
    for name in ('__annotate__', '__type_params__'):
        if name not in original.__dict__:
            replacement.__dict__.pop(name, None)
    replacement.__dict__.update(original.__dict__)
    replacement.__wrapped__ = original
    if original.__doc__ is None and isinstance(owner, type):
        # inspect.getdoc (help()) finds an inherited doc for a function by
        # its class; for a compiled one, through __objclass__.
        replacement.__objclass__ = owner
    return replacement


def _build_table():
    from chainer_fastpath._core._audit import is_chainers

    rows = []
    for part, module in _modules():
        for owner, attribute in module.TARGETS:
            original = owner.__dict__[attribute]
            if not is_chainers(original):
                # Whatever replaced it (a mock, another patch) stays; the
                # compiled code would stand for code that is not there.
                warnings.warn(
                    'chainer_fastpath: {} was replaced before '
                    'chainer_fastpath first read it ({!r}); it is left '
                    'as it is, not accelerated'.format(
                        row_name(owner, attribute), original),
                    RuntimeWarning)
                continue
            replacement = _dressed(module.bind(owner, attribute, original),
                                   original, owner)
            rows.append(Patch(part, row_name(owner, attribute), owner,
                              attribute, replacement, original))
    return tuple(rows)


def table():
    """Returns the patch table, building it on first use."""
    global _table
    with _lock:
        if _table is None:
            _table = _build_table()
        return _table


def select(parts, exclude=()):
    """The rows of ``parts``, without those named in ``exclude``; an unknown
    name in ``exclude`` raises ValueError."""
    rows = table()
    unknown = set(exclude) - {r.name for r in rows}
    if unknown:
        raise ValueError('no patch-table row named {}; the rows are: {}'
                         .format(', '.join(sorted(unknown)),
                                 ', '.join(r.name for r in rows)))
    return tuple(r for r in rows if r.part in parts and r.name not in exclude)


def install(rows):
    """Makes exactly ``rows`` installed; all or nothing.

    On any failure every target is put back as it was before the call.
    """
    global _installed
    with _lock:
        wanted = tuple(rows)
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


def get_original(owner, name):
    """The stock object that the row ``owner.name`` replaces."""
    for row in table():
        if row.owner is owner and row.attribute == name:
            return row.original
    raise KeyError('{} is not patched by chainer_fastpath'.format(
        row_name(owner, name)))
