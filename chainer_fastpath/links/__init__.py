"""Links' ``forward`` methods, compiled: the few lines of Python a model
runs per link call around the function it applies, one module per Chainer
link module.

Each module speaks the patch protocol (``TARGETS``, ``bind``); this package
gathers their targets into one patch-table module, as ``machinery`` does.
"""
import importlib

MODULES = (
    'linear',
)

_module_of = {
    target: module
    for module in (importlib.import_module(__name__ + '.' + name)
                   for name in MODULES)
    for target in module.TARGETS}

TARGETS = tuple(_module_of)


def bind(owner, attribute, original):
    """The replacement of ``original``, from the module that compiles it."""
    return _module_of[owner, attribute].bind(owner, attribute, original)
