"""Fast path for ``Variable.backward``.

A compiled port of stock Chainer 7.8.1's ``Variable.backward`` and
``chainer._backprop._backprop_to_all`` (with ``_backprop_utils.backprop_step``
and ``GradTable`` inlined).  Everything stock does happens here, in the same
order: candidates are popped by (rank, insertion), hooks see the same calls,
gradients are checked with stock's messages, and gradient sums that stock does
with ``F.add`` give the same bits.

The one change is how two gradients of one node are summed when nobody can
observe the ``F.add`` node stock would create (no function hooks, no graph
being recorded, plain NumPy arrays of equal dtype and shape, ``F.add`` and
``Add``'s forward and type check not replaced or mocked): the first sum is
a fresh array (``a + b``, as ``Add.forward``), which this engine owns; later
sums for the same node go into that buffer with ``numpy.add(..., out=)``.
The order of additions is stock's, so the floats are identical.  An owned
buffer is never handed to user code before its last accumulation (it is
disowned whenever it leaves the table).

Where nothing can observe them (the detached steps), the gradients the
compiled backwards and these sums make are ``_grads.Grad`` objects, not
Variables: a Variable is made for one where it leaves the engine (a leaf's
``grad_var``, a retained gradient, the arguments of a backward left to
stock).

The sums run with NumPy's error handling off (``_fpe``). Where NumPy would
have acted on a floating-point exception of stock's ``F.add``, stock's
``Add.forward`` runs on two elements whose sum raises the same exceptions, so
that the same warnings come from its line, or the same error or callback;
the sum itself is the one already made. The deprecation warning of a loss of
one element comes from stock's line too (``_core/_stock_warning``).
"""
cimport cython
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.limits cimport LLONG_MIN
from libc.stdlib cimport free, realloc

import collections
import heapq

import numpy

import chainer
import chainer.functions as _functions
from chainer import _backprop
from chainer import _backprop_utils
from chainer import backend
from chainer import variable as _variable_mod
from chainer.function_node import FunctionNode
from chainer.functions.math import basic_math

from chainer_fastpath._core._signature cimport Signature
from chainer_fastpath._core._stats cimport EntryStats, python_ran
from chainer_fastpath._core._tuples cimport nones, set_item
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_class_has, cfp_getattr as get,
    cfp_setattr as put, get_site, lookup_site, set_site)
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._audit cimport (
    StockMethods, method_is, stock_replaced)
from chainer_fastpath._core._config cimport ConfigView, function_hooks
from chainer_fastpath._core._fpe cimport (
    FE_INVALID, FE_OVERFLOW, acts, quiet_into)
from chainer_fastpath._core._grads cimport (
    Grad, as_variable, as_variables, grad_layout, grad_raw,
    grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    adds_zeros_exactly, cfp_descr_of, cfp_dims, cfp_nd, layout_ok,
    sums_in_place_exactly)
from chainer_fastpath._core._objects cimport new_variable, node_data
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, Compiled, applies_as_stock, lookup_node, node_class,
    run_backward, run_backward_into, stock_callees)
from chainer_fastpath._core._stock_warning cimport StockWarning
from chainer_fastpath._core._ufunc_loop cimport add_loop
from chainer_fastpath._core import _stats

cdef EntryStats _stats_backward = _stats.entry('Variable.backward')

cfp_attr_enable(_attrs.FAST)
# The graph's state, read and written through per-site caches (_attrs.h).
cdef cfp_attr _get_rank = get_site('rank')
cdef cfp_attr _get_creator_node = get_site('_creator_node')
cdef cfp_attr _get_requires_grad = get_site('_requires_grad')
cdef cfp_attr _get_has_chainerx_array = get_site('_has_chainerx_array')
cdef cfp_attr _get_data = get_site('_data')
cdef cfp_attr _get_layout = get_site('_layout')
cdef cfp_attr _get_variable = get_site('_variable')
cdef cfp_attr _get_grad_var = get_site('_grad_var')
cdef cfp_attr _get_grad = get_site('_grad')
cdef cfp_attr _get_dtype = get_site('dtype')
cdef cfp_attr _get_shape = get_site('shape')
cdef cfp_attr _get_inputs = get_site('inputs')
cdef cfp_attr _get_outputs = get_site('outputs')
cdef cfp_attr _get_lazy_grad_sum = get_site('lazy_grad_sum')
cdef cfp_attr _get_local_function_hooks = get_site('_local_function_hooks')
cdef cfp_attr _set_grad_var = set_site('_grad_var')
cdef cfp_attr _set_grad = set_site('_grad')
cdef cfp_attr _set_loss_scale = set_site('_loss_scale')
cdef cfp_attr _backward_accumulate_site = lookup_site('backward_accumulate')
cdef object _base_accumulate = FunctionNode.__dict__['backward_accumulate']
cdef object _original_backward = None

cdef object _ndarray = numpy.ndarray
cdef object _np_multiply = numpy.multiply
cdef object _np_number = numpy.number
cdef object _np_array = numpy.array
cdef type _Variable = chainer.Variable
cdef type _Parameter = chainer.Parameter
cdef type _VariableNode = _variable_mod.VariableNode
cdef object _get_variable_or_none = _VariableNode.get_variable_or_none
cdef object _check_grad_type = _variable_mod._check_grad_type
cdef object _base_accumulate_code = FunctionNode.backward_accumulate.__code__
cdef object _OrderedDict = collections.OrderedDict
cdef object _heappush = heapq.heappush
cdef object _heappop = heapq.heappop
cdef object _using_device = chainer.using_device
cdef object _get_device_from_array = backend.get_device_from_array
cdef object _get_columns = _backprop_utils._get_columns
cdef object _np_ones_like = numpy.ones_like
cdef type _CpuDevice = backend.CpuDevice
cdef object _config = chainer.config


cdef EntryStats _stats_to_all = _stats.entry('_backprop._backprop_to_all')
cdef object _original_to_all = None
# Stock's warning about a loss of one element that is not 0-d.
cdef StockWarning _one_element = None
# Where the seed gradient is left to stock's Variable.grad setter.
cdef object _NOT_PLAIN = object()


TARGETS = ((_Variable, 'backward'), (_backprop, '_backprop_to_all'))


def bind(owner, attribute, original):
    """Keeps the stock ``owner.attribute`` to fall back to; returns its
    replacement."""
    global _original_backward, _original_to_all, _one_element
    if attribute == 'backward':
        _original_backward = original
        _one_element = StockWarning(
            original, 'Treating a variable with only one element',
            DeprecationWarning)
        return backward
    _original_to_all = original
    return backprop_to_all


def backprop_to_all(outputs, retain_grad, loss_scale):
    """Drop-in for ``chainer._backprop._backprop_to_all`` (used by
    ``chainer.backward`` and ``F.forget``)."""
    cdef ConfigView cfg = ConfigView.current()
    reason = None
    if cfg.get('debug'):
        reason = 'debug mode'
    elif cfg.get('schedule_func') is not None:
        reason = 'static graph'
    elif stock_replaced() is not None:
        reason = stock_replaced()
    else:
        for _, gy in outputs:
            if gy is not None and type(gy) is not _Variable:
                reason = 'Variable subclass'
                break
            if gy is not None and type(gy.raw_array) is not _ndarray:
                reason = 'array type'
                break
    if reason is not None:
        _stats_to_all.fallback(reason)
        return _original_to_all(outputs, retain_grad, loss_scale)
    _stats_to_all.fast += 1
    _backprop_to_all(outputs, retain_grad, loss_scale)


cdef object _fallback_reason(object self):
    cdef ConfigView cfg
    cls = type(self)
    if cls is not _Variable and cls is not _Parameter:
        return 'Variable subclass'
    replaced = stock_replaced()
    if replaced is not None:
        return replaced
    if self._has_chainerx_array:
        return 'chainerx'
    if self._layout is not None:
        return 'non-standard memory layout'
    data = self._data[0]
    if data is None:
        return 'uninitialized variable'
    if type(data) is not _ndarray:
        return 'array type'
    cfg = ConfigView.current()
    if cfg.get('debug'):
        return 'debug mode'
    if cfg.get('schedule_func') is not None:
        return 'static graph'
    return None


cdef object _seed(object self, object data, object loss_scale):
    """The gradient of a loss of one element, ``ones_like(data)`` times
    ``loss_scale``, computed as stock's grad setter would store it; or
    ``_NOT_PLAIN`` where stock's setter is to run, without a loss scale;
    or None where stock's backward must run: the scaling raises, NumPy
    would act on a floating-point exception of it (from stock's line), or
    stock's deprecation warning is due and its line unknown."""
    if data.ndim != 0 and not _one_element.found:
        return None
    if not (type(self.device) is _CpuDevice and _plain(self)):
        return _NOT_PLAIN if loss_scale is None else None
    # Its context does nothing, ones_like(data) passes the grad setter's
    # check by construction, and the grad_var the getter would wrap
    # around it is ``Variable(g)``.
    if type(data) is _ndarray and cfp_nd(data) == 0:
        # ones_like of a 0-d array, without its Python layers.
        g = _np_array(1, data.dtype)
    else:
        g = _np_ones_like(data)
    cdef int raised = 0
    if loss_scale is not None:
        # ``g *= loss_scale`` is this ufunc call for a number; anything
        # else may take other ways, stock's.
        if (type(loss_scale) is not float and type(loss_scale) is not int
                and not isinstance(loss_scale, _np_number)):
            return None
        try:
            quiet_into(_np_multiply, g, loss_scale, g, &raised)
        except Exception:
            # An integer loss, say: stock raises it after setting the grad.
            return None
        if acts(raised):
            return None
    return g


cdef Signature _backward_signature = Signature(
    ('self', 'retain_grad', 'enable_double_backprop', 'loss_scale'),
    (False, False, None))


def backward(*args, **kwargs):
    """Drop-in for ``Variable.backward``."""
    cdef tuple values = _backward_signature.bind(args, kwargs)
    if values is None:
        # Python's TypeError, worded as for stock's method.
        _stats_backward.fallback(_backward_signature.mismatch)
        return _original_backward(*args, **kwargs)
    return _backward(values[0], values[1], values[2], values[3])


cdef object _backward(self, retain_grad, enable_double_backprop,
                      loss_scale):
    reason = _fallback_reason(self)
    g = None
    if reason is None:
        data = (<list>self._data)[0]
        if data.size == 1 and self.grad_var is None:
            g = _seed(self, data, loss_scale)
            if g is None:
                reason = 'loss seed left to stock'
    if reason is not None:
        _stats_backward.fallback(reason)
        return _original_backward(self, retain_grad, enable_double_backprop,
                                  loss_scale)
    _stats_backward.fast += 1

    # Initialize error by 1, if this is a loss variable (as stock)
    grad_var = None
    cdef bint seeded = False
    if g is not None:
        if data.ndim != 0:
            _one_element.warn()
        if g is not _NOT_PLAIN:
            # Setting the grad and then taking grad_var leaves ``_grad`` and
            # ``_grad_var`` None and ``_grad_valid`` True, as below.
            grad_var = new_variable(g, True, None, 0)
            self._grad = None
            self._grad_var = None
            self._grad_valid = True
            seeded = True
        else:
            device = self.device
            with _using_device(device):
                self.grad = device.xp.ones_like(data)

    node = self._node
    if not seeded:
        grad_var = self.grad_var
        self.grad_var = None

    # ``with chainer.using_config('enable_backprop', ...)``, inlined.
    local = _config._local
    cdef bint was_local = hasattr(local, 'enable_backprop')
    if was_local:
        old = local.enable_backprop
    local.enable_backprop = enable_double_backprop
    try:
        _backprop_to_all([(node, grad_var)], retain_grad, loss_scale)
    finally:
        if was_local:
            local.enable_backprop = old
        else:
            del local.enable_backprop


cdef struct _Cand:
    long long key           # -rank
    Py_ssize_t seq          # arrival: len(seen_set) then
    PyObject *func          # a reference owned by the heap


cdef inline bint _before(_Cand *a, _Cand *b) noexcept nogil:
    return a.key < b.key or (a.key == b.key and a.seq < b.seq)


cdef class _Candidates:
    """Stock's heap of candidate function nodes, ``(-rank, arrival,
    node)`` under ``heapq``: no two keys are equal, so any heap pops them
    in the same order. Kept as C structs while every rank is an int that
    fits; from the first that is not, as stock's list of tuples under
    ``heapq`` (which then compares them as stock does)."""
    cdef _Cand *heap
    cdef Py_ssize_t n, capacity
    cdef list tuples        # None while the C heap is in use

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.n):
            Py_DECREF(<object>self.heap[i].func)
        free(self.heap)

    cdef int push(self, object rank, Py_ssize_t seq, object func) except -1:
        cdef int overflow = 0
        cdef long long r
        if self.tuples is None:
            if type(rank) is int:
                r = PyLong_AsLongLongAndOverflow(rank, &overflow)
                if not overflow and r != LLONG_MIN:
                    return self._push_struct(-r, seq, func)
            self._to_tuples()
        _heappush(self.tuples, (-rank, seq, func))
        return 0

    cdef int _push_struct(self, long long key, Py_ssize_t seq,
                          object func) except -1:
        cdef _Cand c
        cdef _Cand *grown
        if self.n == self.capacity:
            grown = <_Cand *>realloc(
                self.heap, (2 * self.capacity + 16) * sizeof(_Cand))
            if grown == NULL:
                raise MemoryError()
            self.heap = grown
            self.capacity = 2 * self.capacity + 16
        c.key = key
        c.seq = seq
        c.func = <PyObject *>func
        Py_INCREF(func)
        self.n += 1
        self._sift_up(c, self.n - 1)
        return 0

    cdef bint empty(self):
        return self.n == 0 if self.tuples is None else not self.tuples

    cdef object pop(self):
        """The node of the smallest key (the heap must not be empty), the
        heap left as ``heapq.heappop`` leaves it."""
        if self.tuples is not None:
            return _heappop(self.tuples)[2]
        cdef _Cand top = self.heap[0]
        cdef _Cand last
        cdef Py_ssize_t pos = 0, child
        self.n -= 1
        if self.n > 0:
            # heapq's _siftup: the smaller child up to a leaf, then the
            # last item sifted down from there.
            last = self.heap[self.n]
            child = 1
            while child < self.n:
                if (child + 1 < self.n
                        and not _before(&self.heap[child],
                                        &self.heap[child + 1])):
                    child += 1
                self.heap[pos] = self.heap[child]
                pos = child
                child = 2 * pos + 1
            self._sift_up(last, pos)
        func = <object>top.func
        Py_DECREF(func)     # the heap's reference; ``func`` holds its own
        return func

    cdef inline void _sift_up(self, _Cand c, Py_ssize_t pos) noexcept:
        """heapq's _siftdown: ``c`` placed at ``pos``, then moved up past
        every parent it comes before."""
        cdef Py_ssize_t parent
        while pos > 0:
            parent = (pos - 1) >> 1
            if not _before(&c, &self.heap[parent]):
                break
            self.heap[pos] = self.heap[parent]
            pos = parent
        self.heap[pos] = c

    cdef void _to_tuples(self) except *:
        """The heap as stock's list would be: the same items in the same
        places."""
        cdef Py_ssize_t i
        tuples = []
        for i in range(self.n):
            tuples.append((self.heap[i].key, self.heap[i].seq,
                           <object>self.heap[i].func))
            Py_DECREF(<object>self.heap[i].func)
        self.n = 0
        self.tuples = tuples


def _candidates_replay(ops):
    """For the tests: runs ``ops``, each ``(rank, seq, node)`` (a push) or
    None (a pop), on a candidate heap; returns the nodes popped and the
    heap's items as stock's list of tuples would hold them then."""
    cdef _Candidates heap = _Candidates()
    popped = []
    for op in ops:
        if op is None:
            if heap.n == 0 and not heap.tuples:
                raise IndexError('pop from an empty heap')
            popped.append(heap.pop())
        else:
            rank, seq, node = op
            heap.push(rank, seq, node)
    if heap.tuples is None:
        heap._to_tuples()
    return popped, heap.tuples


cdef class _Engine:
    """State of one backprop: the candidate heap and the gradient table."""
    cdef _Candidates cand_funcs
    cdef set seen_set
    cdef dict grads
    cdef dict owned          # node -> Variable whose array this engine owns
    cdef dict exact_sums     # node -> its owned Variable, whose array
    #                          adds_zeros_exactly
    cdef set leaf_nodes
    cdef bint sums_stock     # _sums_unobservable() at the pass's start

    def __cinit__(self):
        self.cand_funcs = _Candidates()
        self.seen_set = set()
        self.grads = {}
        self.owned = {}
        self.exact_sums = {}
        self.leaf_nodes = set()

    cdef inline void add_cand(self, cand) except *:
        if cand not in self.seen_set:
            self.cand_funcs.push(get(cand, &_get_rank), len(self.seen_set),
                                 cand)
            self.seen_set.add(cand)

    cdef inline void add_node(self, node) except *:
        """Queues ``node``'s creator, or records ``node`` as a leaf."""
        creator = _creator_of(node)
        if creator is None:
            self.leaf_nodes.add(node)
        else:
            self.add_cand(creator)

    # -- GradTable(accumulate_grad_inputs=True) ---------------------------

    cdef list get_as_list(self, node):
        cdef list lst
        assert node is not None
        lst = self.grads.get(node)
        if lst is None:
            if _creator_of(node) is None:
                if node._old_style_grad_generator is not None:
                    node._check_old_style_gradient()
                lst = _pure(_grad_var_from_alive_node(node))
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
            self.owned.pop(node, None)
            return lst[0] if lst else None
        return _grad_var_from_alive_node(node)

    cdef object pop_or_none(self, node):
        # ``_pop_or_none(grads[node])``: the gradient goes to user code, so
        # the engine no longer owns it.
        cdef list lst = self.grads[node]
        self.owned.pop(node, None)
        return lst.pop() if lst else None

    cdef void reduce(self, node, list lst) except *:
        """``_backprop_utils._reduce(lst)``, summing in place where that is
        unobservable."""
        cdef Py_ssize_t n = len(lst)
        cdef int raised = 0
        if n < 2:
            return
        if n == 2:
            a = lst[0]
            b = lst[1]
            aa = _plain_array(a) if self.sums_stock else None
            ba = _plain_array(b) if aa is not None else None
            if ba is not None and _can_sum_arrays(aa, ba):
                a_rg = grad_requires_grad(a)
                rg = a_rg or grad_requires_grad(b)
                if (a is self.owned.get(node) and a_rg == rg
                        and sums_in_place_exactly(aa, ba)):
                    add_loop.quiet_in_place(aa, ba, &raised)
                    if acts(raised):
                        _act_as_stock_sum(aa.dtype, raised)
                    del lst[1]
                    return
                y = add_loop.quiet(aa, ba, &raised)
                if acts(raised):
                    _act_as_stock_sum(aa.dtype, raised)
                if type(y) is not _ndarray:
                    y = _np_array(y)
                v = new_grad(y, rg)
                self.owned[node] = v
                lst[:] = [v]
                return
        self.owned.pop(node, None)
        lst[:] = [_f_add()(*[as_variable(g) for g in lst])]


cdef void _act_as_stock_sum(object dtype, int raised) except *:
    """What stock's ``F.add`` of two gradients of ``dtype`` whose sum
    raised the flags ``raised`` does about them (warns, raises, calls back,
    as errstate says) from ``Add.forward``: that forward on two elements
    whose sum raises the same flags (a sum raises no others)."""
    if dtype.kind != 'f' and dtype.kind != 'c':
        return
    big = numpy.finfo(dtype).max
    inf = numpy.inf
    a = []
    b = []
    if raised & FE_OVERFLOW:
        a.append(big)
        b.append(big)
    if raised & FE_INVALID:
        a.append(inf)
        b.append(-inf)
    if a:
        basic_math.Add().forward((_np_array(a, dtype), _np_array(b, dtype)))


cdef object _f_add():
    # Looked up at each sum, as stock's ``_reduce`` does: a mock sees it.
    return _functions.add


cdef StockMethods _add_methods = StockMethods(
    basic_math.Add, ('forward', 'check_type_forward'))


cdef object _preprocess_rhs = basic_math._preprocess_rhs


cdef bint _sums_unobservable() except -1:
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


cdef inline object _plain_array(g):
    """The NumPy array of gradient ``g`` where ``g`` is a ``Grad`` or an
    exact Variable with the standard layout, else None."""
    if type(g) is not Grad and type(g) is not _Variable:
        return None
    if grad_layout(g) is not None:
        return None
    a = grad_raw(g)
    return a if type(a) is _ndarray else None


cdef inline bint _can_sum_arrays(aa, ba) except -1:
    """Whether ``F.add`` of two plain gradients whose NumPy arrays are
    ``aa`` and ``ba`` (``_plain_array``) would be unobservable: one dtype
    and shape, no hooks, no graph recorded."""
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
    if not layout_ok() or cfp_descr_of(a) != cfp_descr_of(b):
        return a.dtype == b.dtype and a.shape == b.shape
    if cfp_nd(a) != cfp_nd(b):
        return False
    for k in range(cfp_nd(a)):
        if cfp_dims(a)[k] != cfp_dims(b)[k]:
            return False
    return True


# Stock reads these through Python properties of Variable and VariableNode;
# for the exact stock classes, whose properties return the attribute, the
# attribute is read directly.

cdef inline object _creator_of(node):
    """``node.creator_node``."""
    if type(node) is _VariableNode:
        return get(node, &_get_creator_node)
    return node.creator_node


cdef inline bint _requires_grad(node) except -1:
    """``node.requires_grad``."""
    if type(node) is _VariableNode:
        return get(node, &_get_requires_grad)
    return node.requires_grad


cdef inline object _raw(var):
    """``var.raw_array`` (for a ``Grad``, its Variable's)."""
    if type(var) is Grad:
        return grad_raw(var)
    if type(var) is _Variable and not get(var, &_get_has_chainerx_array):
        return (<list>get(var, &_get_data))[0]
    return var.raw_array


cdef tuple _requiring_grad(tuple inputs):
    """``tuple([i for i, x in enumerate(inputs) if x.requires_grad])``."""
    cdef Py_ssize_t n = len(inputs), k = 0, i
    cdef Py_ssize_t found[8]
    if n > 8:
        return tuple([i for i in range(n) if _requires_grad(inputs[i])])
    for i in range(n):
        if _requires_grad(inputs[i]):
            found[k] = i
            k += 1
    cdef tuple t = nones(k)
    for i in range(k):
        set_item(t, i, found[i])
    return t


cdef tuple _called(refs):
    """``[y() for y in refs]`` (the output nodes through their weak
    references), as a tuple."""
    if type(refs) is not tuple:
        return tuple([y() for y in refs])
    cdef Py_ssize_t i, n = len(<tuple>refs)
    cdef tuple t = nones(n)
    for i in range(n):
        set_item(t, i, (<tuple>refs)[i]())
    return t


cdef bint _all_numpy_plain(tuple inputs, tuple out_grad) except -1:
    """True where every input is an exact VariableNode and every output
    gradient None or an exact Variable, and all their arrays (those there
    are) NumPy's; False where any is not, or not known without a property
    (whose read the caller then makes, once, as stock does)."""
    for x in inputs:
        if type(x) is not _VariableNode:
            return False
        d = get(x, &_get_data)
        if d is not None and type(d) is not _ndarray:
            return False
    for g in out_grad:
        if g is None:
            continue
        if type(g) is Grad:
            d = grad_raw(g)
        elif type(g) is not _Variable or get(g, &_get_has_chainerx_array):
            return False
        else:
            d = (<list>get(g, &_get_data))[0]
        if d is not None and type(d) is not _ndarray:
            return False
    return True


cdef inline list _pure(grad):
    return [] if grad is None else [grad]


cdef inline bint _plain(var):
    """A stock Variable or Parameter of a NumPy array with the standard
    layout, whose gradient accessors are the attributes they wrap."""
    cdef type t = type(var)
    return ((t is _Variable or t is _Parameter)
            and not get(var, &_get_has_chainerx_array)
            and get(var, &_get_layout) is None)


cdef object _grad_var_from_alive_node(node):
    """``var = node.get_variable_or_none()``, then ``var.grad_var``, which
    it clears."""
    if type(node) is not _VariableNode:
        var = node.get_variable_or_none()
    else:
        var = get(node, &_get_variable)()
    if var is None:
        return None
    if not _plain(var):
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


cdef inline void _set_leaf_grad(var, gv) except *:
    """``var._set_grad_var_without_check(gv)``."""
    if _plain(var) and (gv is None or _plain(gv)):
        put(var, &_set_grad_var, gv)
        put(var, &_set_grad,
            None if gv is None else (<list>get(gv, &_get_data))[0])
    else:
        var._set_grad_var_without_check(gv)


cdef inline void _check_grad(func, x, gx) except *:
    """``variable._check_grad_type(func, x, True, gx)`` with the common
    all-good case decided here."""
    if (type(gx) is _ndarray and type(x) is _VariableNode
            and get(x, &_get_layout) is None):
        x_data = get(x, &_get_data)
        if x_data is None or type(x_data) is _ndarray:
            dtype = get(x, &_get_dtype)
            shape = get(x, &_get_shape)
            if (dtype is not None and shape is not None
                    and _same_dtype(gx, dtype) and _same_shape(gx, shape)):
                return
    _check_grad_type(func, x, True, gx)


cdef inline bint _same_dtype(object a, object dtype) except -1:
    """``a.dtype == dtype`` for an ndarray ``a``, decided without building
    objects when ``dtype`` is ``a``'s own descr."""
    if layout_ok() and cfp_descr_of(a) == <void *>dtype:
        return True
    return a.dtype == dtype


cdef inline bint _same_shape(object a, object shape) except -1:
    """``a.shape == shape`` for an ndarray ``a``, read from its dims."""
    cdef Py_ssize_t i, nd
    cdef Py_ssize_t *dims
    if not layout_ok() or type(shape) is not tuple:
        return a.shape == shape
    nd = cfp_nd(a)
    if len(<tuple>shape) != nd:
        return False
    dims = cfp_dims(a)
    for i in range(nd):
        d = (<tuple>shape)[i]
        if type(d) is not int:
            return a.shape == shape
        if <Py_ssize_t>d != dims[i]:
            return False
    return True


@cython.wraparound(True)
cdef void _amend_exception(func, e) except *:
    """The message change of ``_backprop_utils._reraise_with_stack``."""
    import traceback
    if func.stack is not None:
        additional_message = \
            '\n{}\nStacktrace of the function is below:\n{}'.format(
                '-' * _get_columns(),
                ''.join(traceback.format_list(func.stack[:-1])))
        if e.args:
            e.args = (e.args[0] + additional_message,) + e.args[1:]
        else:
            e.args = (additional_message,)


cdef void _backprop_step(_Engine eng, func, tuple target_input_indexes,
                         tuple grad_outputs, dict grad_inputs,
                         bint detached, bint callees_stock) except *:
    """``_backprop_utils.backprop_step`` (not in debug mode). ``detached``:
    nothing can observe the nodes ``func.backward`` would apply (NumPy
    arrays, no graph recorded, no function hook), so a compiled backward
    may stand in for it."""
    cdef Py_ssize_t len_gxs, n_inputs, k
    cdef list lst
    cdef Compiled entry
    inputs = get(func, &_get_inputs)
    if (not cfp_class_has(func, &_backward_accumulate_site,
                          _base_accumulate)
            and func.backward_accumulate.__code__
            is not _base_accumulate_code):
        grad_inputs_tuple = tuple([
            as_variable(eng.pop_or_none(inputs[i]))
            for i in target_input_indexes])
        python_ran(node_class(func), 'backward',
                   'backward_accumulate overridden')
        try:
            gxs = func.backward_accumulate(
                target_input_indexes, as_variables(grad_outputs),
                grad_inputs_tuple)
        except Exception as e:
            _amend_exception(func, e)
            raise
    else:
        entry = lookup_node(func) if detached else None
        if entry is not None and _summed_into(
                eng, entry, func, target_input_indexes, grad_outputs,
                grad_inputs, callees_stock):
            return
        try:
            gxs = NOT_HANDLED
            if detached:
                gxs = run_backward(entry, func, target_input_indexes,
                                   grad_outputs, callees_stock)
            else:
                python_ran(node_class(func), 'backward',
                           'graph recorded or function hook')
            if gxs is NOT_HANDLED:
                gxs = func.backward(target_input_indexes,
                                    as_variables(grad_outputs))
        except Exception as e:
            _amend_exception(func, e)
            raise

        len_gxs = len(gxs)
        n_inputs = len(inputs)
        if len_gxs == n_inputs:
            gxs = tuple([gxs[i] for i in target_input_indexes])
        elif len_gxs != len(target_input_indexes):
            msg = 'number of gradients returned from backward is incorrect: '
            if n_inputs == len(target_input_indexes):
                msg += (
                    '%s != expected %s' % (len_gxs, n_inputs))
            else:
                msg += (
                    '%s != expected %s or %s'
                    % (len_gxs, n_inputs, len(target_input_indexes)))
            raise ValueError(func._get_error_message(msg))

    if type(gxs) is list:
        # A snapshot, whose length no code run below can change.
        gxs = tuple(gxs)
    if type(gxs) is tuple:
        # zip's pairs, without its iterators
        for k in range(min(len(target_input_indexes), len(gxs))):
            _add_grad(grad_inputs, inputs,
                      target_input_indexes[k], gxs[k])
    else:
        for i, gx in zip(target_input_indexes, gxs):
            _add_grad(grad_inputs, inputs, i, gx)
    del gxs

    if not get(func, &_get_lazy_grad_sum):
        for x, lst in grad_inputs.items():
            eng.reduce(x, lst)


cdef inline void _add_grad(dict grad_inputs, object inputs, object i,
                           object gx) except *:
    if gx is None or _raw(gx) is None:
        return
    (<list>grad_inputs[inputs[i]]).append(gx)


cdef bint _summed_into(_Engine eng, Compiled entry, func,
                       tuple target_input_indexes, tuple grad_outputs,
                       dict grad_inputs, bint callees_stock) except -1:
    """Adds, by ``entry.backward_into``, the gradient of the one input of
    ``func`` that needs one straight into that input's gradient sum, where
    the engine owns the sum and would add the gradient to it in place next
    (``Engine.reduce``). For a gradient that is zero outside a few rows
    (EmbedID's), adding zeros to a sum free of -0.0 and signaling NaNs
    changes nothing, so only the rows are added. False where the usual
    path must run."""
    if (entry.backward_into is NULL
            or target_input_indexes != (entry.into_index,)
            or get(func, &_get_lazy_grad_sum)):
        return False
    # Read again after the hooks' backward_preprocess, which may have
    # rebound it: stock's own code then raises, or goes on.
    inputs = get(func, &_get_inputs)
    if type(inputs) is not tuple or len(<tuple>inputs) <= entry.into_index:
        return False
    node = (<tuple>inputs)[entry.into_index]
    cdef list lst = grad_inputs.get(node)
    if lst is None:
        return False
    if len(lst) != 1:
        return False
    a = lst[0]
    if a is not eng.owned.get(node):
        return False
    arr = _plain_array(a)
    if arr is None or function_hooks():
        return False
    if eng.exact_sums.get(node) is not a:
        # Once true, in-place sums keep it true: an IEEE sum is never a
        # signaling NaN, and is -0.0 only where both terms are.
        if not adds_zeros_exactly(arr):
            return False
        eng.exact_sums[node] = a
    return run_backward_into(entry, func, grad_outputs, a, callees_stock)


cpdef _backprop_to_all(outputs, retain_grad, loss_scale):
    """``chainer._backprop._backprop_to_all``, compiled."""
    cdef _Engine eng = _Engine()
    eng.sums_stock = _sums_unobservable()
    cdef list lst, in_data, out_grad_array
    cdef tuple inputs, target_input_indexes, out_grad, outs
    cdef dict in_grad
    cdef Py_ssize_t i
    cdef bint all_numpy

    for y, gy in outputs:
        eng.get_as_list(y).append(gy)
        eng.add_node(y)
    y = None

    base_hooks = function_hooks().values()
    cdef bint callees_stock = stock_callees()
    cdef _Candidates cand_funcs = eng.cand_funcs
    while not cand_funcs.empty():
        func = cand_funcs.pop()
        inputs = get(func, &_get_inputs)
        target_input_indexes = _requiring_grad(inputs)
        outs = _called(get(func, &_get_outputs))  # via weak refs
        out_grad = nones(len(outs))
        for i in range(len(outs)):
            y = outs[i]
            set_item(out_grad, i, (
                eng.pop(y) if y is not None and _creator_of(y) is not None
                else None))
        if not target_input_indexes:
            continue

        local = get(func, &_get_local_function_hooks)
        if local is not None and len(local) != 0:
            local_hooks = _OrderedDict(function_hooks())
            local_hooks.update(func.local_function_hooks)
            hooks = local_hooks.values()
        else:
            hooks = base_hooks

        # The arrays go to hooks and to the device choice only: without
        # hooks, for exact nodes and gradient Variables (whose reads have
        # no effects), only whether they are all NumPy's is needed.
        all_numpy = True
        if not hooks and _all_numpy_plain(inputs, out_grad):
            in_data = out_grad_array = None
        else:
            in_data = []
            for x in inputs:
                d = node_data(x)
                if d is not None and type(d) is not _ndarray:
                    all_numpy = False
                in_data.append(d)
            out_grad_array = []
            for g in out_grad:
                if g is None:
                    out_grad_array.append(None)
                else:
                    d = _raw(g)
                    if d is not None and type(d) is not _ndarray:
                        all_numpy = False
                    out_grad_array.append(d)

        if all_numpy:
            # the CPU device: its context does nothing
            in_grad = _step(eng, func, inputs, target_input_indexes,
                            out_grad, in_data, out_grad_array, hooks,
                            not base_hooks and not ConfigView.current().get(
                                'enable_backprop'), callees_stock)
        else:
            with _using_device(_get_device_from_array(
                    *(in_data + out_grad_array))):
                in_grad = _step(eng, func, inputs, target_input_indexes,
                                out_grad, in_data, out_grad_array, hooks,
                                False, callees_stock)

        if retain_grad:
            for y, gy in zip(outs, out_grad):
                if y is not None:
                    y._set_grad_var_if_available(as_variable(gy))
            gy = None
        out_grad = None

        for x, lst in in_grad.items():
            if not lst:
                continue
            for gx_elem in lst:
                if gx_elem is not None:
                    _check_grad(func, x, _raw(gx_elem))
            gx_elem = None
            eng.add_node(x)
        lst = None
        in_grad = None

    for x in eng.leaf_nodes:
        if type(x) is _VariableNode and method_is(
                x, 'get_variable_or_none', _get_variable_or_none):
            x_var = get(x, &_get_variable)()
        else:
            x_var = x.get_variable_or_none()
        gx = eng.pop(x)
        if x_var is not None:
            _set_leaf_grad(x_var, as_variable(gx))
            put(x_var, &_set_loss_scale, loss_scale)
    for lst in eng.grads.values():
        assert lst == []


cdef dict _step(_Engine eng, func, tuple inputs, tuple target_input_indexes,
                tuple out_grad, list in_data, list out_grad_array, hooks,
                bint detached, bint callees_stock):
    cdef Py_ssize_t i
    if hooks:
        for hook in hooks:
            hook.backward_preprocess(
                func, tuple(in_data), tuple(out_grad_array))

    # Collect the current input gradients, in input order.
    # A plain dict keeps insertion order; nothing outside sees its type.
    cdef dict in_grad = {}
    for i in target_input_indexes:
        x = inputs[i]
        if x not in in_grad:
            in_grad[x] = eng.get_as_list(x)

    _backprop_step(eng, func, target_input_indexes, out_grad, in_grad,
                   detached, callees_stock)

    if hooks:
        for hook in hooks:
            hook.backward_postprocess(
                func, tuple(in_data), tuple(out_grad_array))
    return in_grad
