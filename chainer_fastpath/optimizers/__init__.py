"""Fast optimizers: a lean update loop and fused CPU kernels.

Targets (part ``optimizers`` of the patch table):

- ``UpdateRule.update`` and ``GradientMethod.update``: the lean loop
  (:mod:`._update`);
- ``update_core_cpu`` of every built-in rule (SGD, MomentumSGD,
  CorrectedMomentumSGD, NesterovAG, Adam and its variants, RMSprop,
  RMSpropGraves, AdaGrad, AdaDelta, SMORMS3, MSVAG): one fused pass per
  parameter (:mod:`._kernels`).
"""
# _kernels first: its counters come first in the report.
from chainer_fastpath.optimizers import _kernels
from chainer_fastpath.optimizers import _update

TARGETS = _update.TARGETS + _kernels.TARGETS

_module_of = {target: module for module in (_update, _kernels)
              for target in module.TARGETS}


def bind(owner, attribute, original):
    """Records ``original``, the stock ``owner.attribute`` (the first one
    given wins); returns the replacement."""
    return _module_of[owner, attribute].bind(owner, attribute, original)
