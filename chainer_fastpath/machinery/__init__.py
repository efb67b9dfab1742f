"""The per-iteration training machinery, compiled: the methods and
functions a training loop runs between its nodes (the iterator, the
converter, the datasets' indexing, the updater, the classifier's reports,
the reporter and the log), one module per Chainer module it stands for.

Each module speaks the patch protocol (``TARGETS``, ``bind``); this package
gathers their targets into one patch-table module. Adding one is its
module, its test file and one line below.
"""
import importlib

MODULES = (
    'classifier',
    'convert',
    'datasets',
    'link',
    'log_report',
    'reporter',
    'serial_iterator',
    'standard_updater',
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
