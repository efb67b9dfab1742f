"""Fast optimizers: a lean update loop and fused CPU kernels.

Targets (part ``optimizers`` of the patch table):

- ``UpdateRule.update`` and ``GradientMethod.update``: the lean loop
  (:mod:`._update`);
- ``update_core_cpu`` of every built-in rule (SGD, MomentumSGD,
  CorrectedMomentumSGD, NesterovAG, Adam and its variants, RMSprop,
  RMSpropGraves, AdaGrad, AdaDelta, SMORMS3, MSVAG): one fused pass per
  parameter (:mod:`._kernels`);
- ``WeightDecay.__call__``, the optimizer hook: one fused pass too
  (:mod:`._kernels`).
"""
from chainer_fastpath._core._gather import gathered
# _kernels first: its counters come first in the report.
from chainer_fastpath.optimizers import _kernels
from chainer_fastpath.optimizers import _update

TARGETS, bind = gathered((_update, _kernels))
