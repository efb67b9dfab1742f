"""The gradients of one backward pass, per node: stock's
``GradTable(accumulate_grad_inputs=True)`` and ``_backprop_utils._reduce``.

Where nobody can observe the ``F.add`` node stock sums two gradients of a
node with (no function hooks, no graph being recorded, plain NumPy arrays
of equal dtype and shape, ``F.add`` and ``Add``'s forward and type check
not replaced or mocked), the first sum is a fresh array (``a + b``, as
``Add.forward``), which the table owns; later sums for the same node go
into that buffer with ``numpy.add(..., out=)``. The order of additions is
stock's, so the floats are identical. An owned buffer is never handed to
user code before its last accumulation: it is disowned whenever it leaves
the table. The sums run with NumPy's error handling off; what NumPy would
have done about their floating-point exceptions, ``fpe_replay`` does.
"""
import numpy

import chainer.functions as _functions
from chainer import variable as _variable_mod
from chainer.functions.math import basic_math

from cpython.dict cimport PyDict_SetDefault
from cpython.ref cimport Py_REFCNT

from chainer_fastpath._backward.fpe_replay cimport replay_sum_exceptions
from chainer_fastpath._backward.graph_reads cimport (
    creator_of, is_plain_variable, plain_grad_array)
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, lookup_site, set_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport StockMethods, method_is_at
from chainer_fastpath._core._config cimport ConfigView, function_hooks
from chainer_fastpath._core._fpe cimport acts
from chainer_fastpath._core._grads cimport (
    as_variable, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    cfp_descr_of, cfp_dims, cfp_nd, made_exact, made_exact_recorded,
    numpy_struct_matches, sums_in_place_exactly)
from chainer_fastpath._core._registry cimport applies_as_stock
from chainer_fastpath._core._ufunc_loop cimport add_loop

cfp_attr_enable(_attrs.FAST)
cdef cfp_attr _get_variable = get_site('_variable')
cdef cfp_attr _get_grad_var = get_site('_grad_var')
cdef cfp_attr _get_grad = get_site('_grad')
cdef cfp_attr _get_old_style = get_site('_old_style_grad_generator')
cdef cfp_attr _check_old_style_site = lookup_site('_check_old_style_gradient')
cdef cfp_attr _set_grad_var = set_site('_grad_var')
cdef cfp_attr _set_grad = set_site('_grad')

cdef object _ndarray = numpy.ndarray
cdef object _np_array = numpy.array
cdef type _VariableNode = _variable_mod.VariableNode
cdef object _stock_check_old_style = (
    _VariableNode.__dict__['_check_old_style_gradient'])


cdef class GradTable:
    """The gradients of each node, as stock's ``GradTable``; the sums it
    owns (see the module's text)."""

    def __cinit__(self):
        self.grads = {}
        self.owned = {}
        self.exact_sums = {}

    cdef list get_as_list(self, node):
        cdef list lst
        assert node is not None
        if type(node) is _VariableNode and creator_of(node) is not None:
            # A node with a creator starts with no gradient (its plain
            # attribute read first, unobservably): one lookup, with the
            # empty list to insert where it has none.
            return <list>PyDict_SetDefault(self.grads, node, [])
        lst = self.grads.get(node)
        if lst is None:
            if creator_of(node) is None:
                _check_old_style_gradient(node)
                lst = _grad_list(_grad_var_from_alive_node(node))
            else:
                lst = []
            self.grads[node] = lst
        return lst

    cdef object pop(self, node):
        cdef list lst
        if node is None:
            return None
        lst = self.grads.pop(node, None)
        if lst is not None:
            self.reduce(node, lst)
            if self.owned:
                self.owned.pop(node, None)
            return lst[0] if lst else None
        return _grad_var_from_alive_node(node)

    cdef object pop_or_none(self, node):
        # ``_pop_or_none(grads[node])``: the gradient goes to user code, so
        # the table no longer owns it.
        cdef list lst = self.grads[node]
        self.owned.pop(node, None)
        return lst.pop() if lst else None

    cdef void reduce(self, node, list lst) except *:
        """``_backprop_utils._reduce(lst)``, summing in place where that is
        unobservable."""
        cdef Py_ssize_t n = len(lst)
        cdef int raised = 0
        if n < 2:
            # Almost every step records nothing: only then is adopt() run.
            if n == 1 and self.sums_stock and made_exact_recorded():
                a = lst[0]
                self.adopt(node, a)
            return
        if n == 2:
            a = lst[0]
            b = lst[1]
            aa = plain_grad_array(a) if self.sums_stock else None
            ba = plain_grad_array(b) if aa is not None else None
            if ba is not None and _can_sum_arrays(aa, ba):
                a_rg = grad_requires_grad(a)
                rg = a_rg or grad_requires_grad(b)
                if (a is self.owned.get(node) and a_rg == rg
                        and sums_in_place_exactly(aa, ba)):
                    add_loop.quiet_in_place(aa, ba, &raised)
                    if acts(raised):
                        replay_sum_exceptions(aa.dtype, raised)
                    del lst[1]
                    return
                y = add_loop.quiet(aa, ba, &raised)
                if acts(raised):
                    replay_sum_exceptions(aa.dtype, raised)
                if type(y) is not _ndarray:
                    y = _np_array(y)
                v = new_grad(y, rg)
                self.owned[node] = v
                lst[:] = [v]
                return
        self.owned.pop(node, None)
        lst[:] = [_f_add()(*[as_variable(g) for g in lst])]

    cdef void adopt(self, node, a) except *:
        """Owns ``a``, the one gradient of ``node`` so far, where it is a
        dense gradient EmbedIDGrad's compiled forward just made (zeros and
        sums: ``made_exact``) that nobody else can reach: the table's list
        and the local ``a`` are its only references, and its array's are
        the Variable's and ``aa``. Later gradients of ``node`` are then
        summed into it in place, as into a sum the table made."""
        if self.owned.get(node) is a:
            return
        aa = plain_grad_array(a)
        if aa is None or not made_exact(aa):
            return
        if (Py_REFCNT(a) != 2 or Py_REFCNT(aa) != 2 or aa.base is not None
                or function_hooks()
                or ConfigView.current().get('enable_backprop')):
            return
        self.owned[node] = a
        self.exact_sums[node] = a


cdef inline void _check_old_style_gradient(node) except *:
    """``node._check_old_style_gradient()``, which stock's only raises
    where the node has an old-style generator: not called then."""
    if (type(node) is not _VariableNode
            or get(node, &_get_old_style) is not None
            or not method_is_at(node, &_check_old_style_site,
                                _stock_check_old_style)):
        node._check_old_style_gradient()


cdef inline list _grad_list(grad):
    """The gradients a leaf starts with: its own, where it has one."""
    return [] if grad is None else [grad]


cdef object _grad_var_from_alive_node(node):
    """``var = node.get_variable_or_none()``, then ``var.grad_var``, which
    it clears."""
    if type(node) is not _VariableNode:
        var = node.get_variable_or_none()
    else:
        var = get(node, &_get_variable)()
    if var is None:
        return None
    if not is_plain_variable(var):
        gv = var.grad_var
        var.grad_var = None
        return gv
    gv = get(var, &_get_grad_var)
    if gv is None and get(var, &_get_grad) is not None:
        # ``_ensure_grad_var_up_to_date``: a grad set as an array.
        gv = var.grad_var
    put(var, &_set_grad_var, None)
    put(var, &_set_grad, None)
    return gv


cdef object _f_add():
    # Looked up at each sum, as stock's ``_reduce`` does: a mock sees it.
    return _functions.add


cdef StockMethods _add_methods = StockMethods(
    basic_math.Add, ('forward', 'check_type_forward'))


cdef object _preprocess_rhs = basic_math._preprocess_rhs


cdef bint sums_unobservable() except -1:
    """Whether stock's gradient sums (``F.add`` of two arrays) would run
    only stock's code: ``F.add`` is still ``basic_math.add`` (stock's, or
    this package's replacement of both), the ``_preprocess_rhs`` it calls
    and ``Add``'s forward and type check are the originals. Where one is
    replaced or mocked, every sum calls ``F.add``, as stock's do; and so
    where ``Add.apply`` is replaced."""
    return (_functions.add is basic_math.add
            and basic_math._preprocess_rhs is _preprocess_rhs
            and _add_methods.on_class()
            and applies_as_stock(basic_math.Add))


cdef inline bint _can_sum_arrays(aa, ba) except -1:
    """Whether ``F.add`` of two plain gradients whose NumPy arrays are
    ``aa`` and ``ba`` (``plain_grad_array``) would be unobservable: one
    dtype and shape, no hooks, no graph recorded."""
    if not _same_shape_and_dtype(aa, ba):
        return False
    if function_hooks():
        return False
    if ConfigView.current().get('enable_backprop'):
        return False
    return True


cdef bint _same_shape_and_dtype(object a, object b) except -1:
    """``a.dtype == b.dtype and a.shape == b.shape`` for ndarrays, read off
    their structs where their descrs are one object."""
    cdef int k
    if not numpy_struct_matches() or cfp_descr_of(a) != cfp_descr_of(b):
        return a.dtype == b.dtype and a.shape == b.shape
    if cfp_nd(a) != cfp_nd(b):
        return False
    for k in range(cfp_nd(a)):
        if cfp_dims(a)[k] != cfp_dims(b)[k]:
            return False
    return True
