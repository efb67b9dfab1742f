"""Links' ``forward`` methods, compiled: the few lines of Python a model
runs per link call around the function it applies, one module per Chainer
link module.

Each module speaks the patch protocol (``TARGETS``, ``bind``); this package
gathers their targets into one patch-table module, as ``machinery`` does.
"""
from chainer_fastpath._core._gather import gathered, submodules

MODULES = (
    'linear',
)

TARGETS, bind = gathered(submodules(__name__, MODULES))
