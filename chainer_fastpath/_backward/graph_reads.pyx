"""The classes and per-site caches (``_core/_attrs.h``) of the inline reads
declared in ``graph_reads.pxd``, which every module of the engine cimports.
"""
import numpy

import chainer
from chainer import variable as _variable_mod

from chainer_fastpath._core._attrs cimport cfp_attr_enable, get_site
from chainer_fastpath._core import _attrs

cfp_attr_enable(_attrs.FAST)

_ndarray = numpy.ndarray
_Variable = chainer.Variable
_Parameter = chainer.Parameter
_VariableNode = _variable_mod.VariableNode

_get_creator_node = get_site('_creator_node')
_get_requires_grad = get_site('_requires_grad')
_get_has_chainerx_array = get_site('_has_chainerx_array')
_get_data = get_site('_data')
_get_layout = get_site('_layout')
