# cython: boundscheck=True, wraparound=True
"""Compiled ``GetItem`` (forward and backward) and ``GetItemGrad``
(forward), on NumPy arrays and basic indices; ``F.get_item`` and
``Variable.__getitem__``."""
import numpy

import chainer
import chainer.functions
from chainer import variable
from chainer.functions.array import get_item

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr, cfp_setattr, get_site, set_site)
from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._config cimport ConfigView, debug_mode
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport grad_array, grad_requires_grad
from chainer_fastpath._core._ndarray cimport zeros_shaped
from chainer_fastpath._core._objects cimport bare
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._runtime._forced cimport forced
from chainer_fastpath._runtime._public cimport Public

cfp_attr_enable(_attrs.FAST)

cdef object _add_at = numpy.add.at
cdef object _add = numpy.add
cdef type _ndarray = numpy.ndarray
cdef type _slice = slice
cdef object _Ellipsis = Ellipsis
cdef cfp_attr _get_slices = get_site('slices')
cdef cfp_attr _set_slices = set_site('slices')


cdef bint _basic(object slices) except -1:
    """Whether ``slices`` is a tuple of basic indices only (ints, slices,
    Ellipsis, None), with which NumPy's indexing neither copies nor warns:
    anything else (arrays, lists, ChainerX arrays) is left to stock."""
    if type(slices) is not tuple:
        return False
    for s in <tuple>slices:
        if not (type(s) is int or type(s) is _slice or s is None
                or s is _Ellipsis):
            return False
    return True


cdef object _forward(object node, tuple inputs, ConfigView config):
    # GetItem.forward: force_array(x[slices]), with the ChainerX arrays
    # among the slices converted (there are none in basic indices).
    slices = cfp_getattr(node, &_get_slices)
    if len(inputs) != 1 or not _basic(slices):
        return NOT_HANDLED
    return forced(inputs[0][slices]),


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # GetItem.backward: GetItemGrad(slices, x.shape).apply((gy,)).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    return apply_detached(
        get_item.GetItemGrad(func.slices, func.inputs[0].shape), (gy,),
        grad_requires_grad(gy_var))


cdef object _grad_forward(object node, tuple inputs, ConfigView config):
    # GetItemGrad.forward on NumPy: numpy.add.at into zeros of the input's
    # shape; its IndexError (which stock rewords) is left to stock.
    slices = node.slices
    if len(inputs) != 1 or not _basic(slices):
        return NOT_HANDLED
    gy = inputs[0]
    cdef int raised
    saved = quiet_begin()
    try:
        gx = zeros_shaped(gy.dtype, node._in_shape)
        view = gx[slices]
        if (type(gy) is _ndarray and type(view) is _ndarray
                and gy.shape == view.shape):
            # Basic indices name each item once: add.at's sums are the
            # ufunc's on the view, 0 + gy item by item, without its
            # per-item index iterator.
            _add(view, gy, out=view)
        else:
            _add_at(gx, slices, gy)
    except IndexError:
        return NOT_HANDLED
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return gx,


# -- F.get_item, Variable.__getitem__ ---------------------------------------

# Stock installs get_item as Variable.__getitem__ too: one function, three
# names.
TARGETS = ((get_item, 'get_item'), (chainer.functions, 'get_item'),
           (variable.Variable, '__getitem__'))

cdef Public _get_item = Public('get_item.get_item', get_item,
                               ('x', 'slices'), ())
cdef type _GetItem = get_item.GetItem
cdef StockMethods _get_item_init = StockMethods(_GetItem, ('__init__',))


def bind(owner, attribute, original):
    """Keeps stock's ``get_item`` to fall back to; returns its
    replacement."""
    return _get_item.bind(get_item_, original)


cdef object _node(object cls, object slices):
    """``cls(slices)``; for stock's GetItem, outside debug mode, and
    ``slices`` not a list, the instance its ``__init__`` leaves, built
    here: ``slices`` itself where it is a tuple, else ``(slices,)``."""
    if cls is not _GetItem or not _get_item_init.on_class():
        return cls(slices)
    # Stock's isinstance calls, in its order.
    if isinstance(slices, list):
        return cls(slices)
    if not isinstance(slices, tuple):
        slices = slices,
    node = bare(_GetItem)
    cfp_setattr(node, &_set_slices, slices)
    return node


def get_item_(*args, **kwargs):
    """Drop-in for ``F.get_item`` and ``Variable.__getitem__``:
    ``GetItem(slices).apply((x,))[0]``, the class read from its module as
    stock reads it."""
    cdef tuple values = _get_item.arguments(args, kwargs)
    if values is not None:
        if debug_mode():
            # Stock's __init__ counts the Ellipses, its apply keeps the
            # node's stack.
            _get_item.stats.fallback('debug mode')
        else:
            x, slices = values
            cls = _get_item.read_global('GetItem')
            if cls is not None:
                y = _get_item.apply(_node(cls, slices), (x,), False)
                if y is not None:
                    return y
    return _get_item.stock(args, kwargs)


ENTRIES = (
    compiled(get_item.GetItem, _forward, ('forward',), _backward,
             backward_callees=(
                 (get_item.GetItemGrad, '__init__'),
                 (get_item.GetItemGrad, 'check_type_forward'),
                 (get_item.GetItemGrad, 'forward')),
             type_check=()),
    compiled(get_item.GetItemGrad, _grad_forward, ('forward',), NULL, (),
             type_check=None),
)
