"""Fast optimizers: a lean update loop and fused CPU kernels.

Targets (part ``optimizers`` of the patch table):

- ``UpdateRule.update`` and ``GradientMethod.update``: the lean loop
  (:mod:`._update`);
- ``update_core_cpu`` of every built-in rule (SGD, MomentumSGD,
  CorrectedMomentumSGD, NesterovAG, Adam and its variants, RMSprop,
  RMSpropGraves, AdaGrad, AdaDelta, SMORMS3, MSVAG): one fused pass per
  parameter (:mod:`._kernels`).
"""


def _targets():
    from chainer import optimizer
    from chainer_fastpath.optimizers import _kernels

    rows = [(optimizer.UpdateRule, 'update'),
            (optimizer.GradientMethod, 'update')]
    rows += [(cls, 'update_core_cpu') for _, cls, _ in _kernels.RULES]
    return tuple(rows)


TARGETS = _targets()


def bind(owner, attribute, original):
    """Keeps ``original`` to fall back to; returns the replacement of
    ``owner.attribute``."""
    from chainer import optimizer
    from chainer_fastpath.optimizers import _kernels, _update

    if attribute == 'update' and owner is optimizer.UpdateRule:
        return _update.bind('UpdateRule.update', original)
    if attribute == 'update' and owner is optimizer.GradientMethod:
        return _update.bind('GradientMethod.update', original)
    return _kernels.bind(owner, original)
