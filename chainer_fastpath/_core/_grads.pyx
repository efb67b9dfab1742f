"""Gradients inside the backward engine.

Where no hook and no recorded graph can see them (the detached steps of
``_backward/step``), the compiled backwards return their gradients as ``Grad``
objects: an array and the ``requires_grad`` its Variable would have. A
stock backward makes a Variable, with its VariableNode and the node's weak
reference, for each gradient, most of which only the engine ever reads.

A ``Grad`` becomes a Variable (``as_variable``) where one can be seen: a
leaf's ``grad_var``, a retained gradient, the arguments of a backward left
to stock, of ``backward_accumulate`` and of a replaced ``F.add``. The
Variable is made once per ``Grad`` and then stands for it, so that a
gradient two inputs share (``Add``'s) is one Variable, as in stock.

Every function here takes a gradient of either kind (or None, where
stated): a ``Grad`` or a Variable.
"""
cimport cython

import numpy

from chainer_fastpath._core import _attrs

from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, get_site)
from chainer_fastpath._core._objects cimport new_variable

cdef type _ndarray = numpy.ndarray

cfp_attr_enable(_attrs.FAST)

cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _get_requires_grad = get_site('_requires_grad')
cdef cfp_attr _get_layout = get_site('_layout')


@cython.final
@cython.freelist(64)
cdef class Grad:
    """A gradient the engine has not handed out: see the module's text."""

    def __repr__(self):
        return '<Grad of {!r}>'.format(
            self.array if self.var is None else self.var)


cdef object new_grad(object array, bint requires_grad):
    """The gradient ``Variable(array, requires_grad=requires_grad)``, as a
    ``Grad`` for a NumPy array (a Variable otherwise)."""
    if type(array) is not _ndarray:
        return new_variable(array, requires_grad, None, 0)
    cdef Grad g = Grad.__new__(Grad)
    g.array = array
    g.requires_grad = requires_grad
    return g


cdef object grad_array(object g):
    """The NumPy array of gradient ``g`` (or None), or None where it holds
    another kind of array."""
    if g is None:
        return None
    a = grad_raw(g)
    if type(a) is not _ndarray:
        return None
    return a


cdef object grad_raw(object g):
    """``g.raw_array`` for a ``Grad`` or a stock Variable without a
    ChainerX array (its ``_data[0]``)."""
    if type(g) is Grad:
        if (<Grad>g).var is None:
            return (<Grad>g).array
        g = (<Grad>g).var
    return (<list>get(g, &_get_data))[0]


cdef bint grad_requires_grad(object g) except -1:
    """``g.requires_grad``, read from the attribute."""
    if type(g) is Grad:
        if (<Grad>g).var is None:
            return (<Grad>g).requires_grad
        g = (<Grad>g).var
    return get(g, &_get_requires_grad)


cdef object grad_layout(object g):
    """``g._layout``: None for a ``Grad`` not yet handed out."""
    if type(g) is Grad:
        if (<Grad>g).var is None:
            return None
        g = (<Grad>g).var
    return get(g, &_get_layout)


cdef object as_variable(object g):
    """The Variable that stands for gradient ``g`` (``g`` itself where it
    is not a ``Grad``, None for None), made the first time it is asked
    for."""
    if type(g) is not Grad:
        return g
    cdef Grad grad = <Grad>g
    if grad.var is None:
        grad.var = new_variable(grad.array, grad.requires_grad, None, 0)
        grad.array = None
    return grad.var


cdef tuple as_variables(tuple gs):
    """``gs`` with each ``Grad`` replaced by its Variable (``gs`` itself
    where there is none)."""
    cdef Py_ssize_t i, n = len(gs)
    for i in range(n):
        if type(gs[i]) is Grad:
            break
    else:
        return gs
    return tuple([as_variable(g) for g in gs])
