"""The per-iteration training machinery, compiled: the methods and
functions a training loop runs between its nodes (the iterator, the
converter, the datasets' indexing, the updater, the classifier's reports,
the reporter and the log), one module per Chainer module it stands for.

Each module speaks the patch protocol (``TARGETS``, ``bind``); this package
gathers their targets into one patch-table module. Adding one is its
module, its test file and one line below.
"""
from chainer_fastpath._core._gather import gathered, submodules

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

TARGETS, bind = gathered(submodules(__name__, MODULES))
