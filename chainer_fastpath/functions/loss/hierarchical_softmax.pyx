# cython: boundscheck=True, wraparound=True
"""Compiled ``BinaryHierarchicalSoftmaxFunction``, the old-style Function
behind ``L.BinaryHierarchicalSoftmax``: its ``forward_cpu`` and
``backward_cpu`` on NumPy float32 and float64 arrays.

Stock loops over the samples in Python, each sample a handful of NumPy
calls on its tree path. Here the loop is C and so is every elementwise step
(``*``, ``-``, ``+``, ``/``, the gathers, the pairwise sums and the
scatter-add), in stock's order and dtype. What C cannot reproduce stays
NumPy's own, called per sample on the same shapes as stock's calls: the
dot products (the gemv call ``numpy.dot`` makes, ``_core/_blas``, or
``numpy.dot`` where it would take another route), ``exp`` and
``logaddexp`` (their NumPy inner loops called directly, ``_ufunc_loop``).
A floating-point flag that NumPy's errstate watches gives the whole call
back to stock, which then warns or raises as it does.
"""
from libc.string cimport memcpy, memset

import numpy

from chainer.links.loss import hierarchical_softmax

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._blas cimport gemv
from chainer_fastpath._core._grads cimport grad_array
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    CFP_NPY_INT, aligned_array, builtin_typenum, cfp_data, cfp_dims,
    cfp_flags, cfp_nd, cfp_strides, empty, empty1, empty2,
    numpy_struct_matches)
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport clear_flags, fetestexcept, watched
from chainer_fastpath._core._objects cimport new_variable
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport retained_inputs
from chainer_fastpath._core._rows cimport (
    add_outer_rows, gather_rows, indices_within, neg_times, over_one_plus,
    pairwise_sum, real, store_row, times)
from chainer_fastpath._core._ufunc_loop cimport UfuncLoop

cdef type _ndarray = numpy.ndarray
cdef object _Function = hierarchical_softmax.BinaryHierarchicalSoftmaxFunction
# numpy.dot's own C function: the public one first runs the
# __array_function__ dispatch (a Python call), which only other array types
# than NumPy's need, and this module calls it once per sample.
cdef object _dot = getattr(numpy.dot, '_implementation', numpy.dot)
cdef object _INTP = numpy.dtype(numpy.intp)
cdef object _INTC = numpy.dtype(numpy.intc)
cdef object _empty_like = numpy.empty_like
cdef object _zeros_like = numpy.zeros_like


cdef class _Loops:
    """``numpy.exp`` and ``numpy.logaddexp`` for one dtype."""
    cdef UfuncLoop exp, logaddexp

    def __init__(self, typenum):
        self.exp = UfuncLoop(numpy.exp, typenum)
        self.logaddexp = UfuncLoop(numpy.logaddexp, typenum)

    cdef bint ready(self):
        return self.exp.function is not NULL and (
            self.logaddexp.function is not NULL)


cdef _Loops _loops_float = _Loops(CFP_NPY_FLOAT)
cdef _Loops _loops_double = _Loops(CFP_NPY_DOUBLE)


cdef class _Tree:
    """What the stock loops read, checked: the inputs, the tree's arrays,
    and each sample's ``begins[t]`` and path length."""
    cdef object x, t, W, paths, codes
    cdef int typenum
    cdef Py_ssize_t rows, units, max_length
    cdef Py_ssize_t[::1] begin, length


cdef bint _tree_array(object a, int typenum):
    return (aligned_array(a, typenum, 1)
            and cfp_flags(a) & CFP_NPY_C_CONTIGUOUS)


cdef Py_ssize_t _paths_length(const char *tp, Py_ssize_t ts, const int *b,
                              Py_ssize_t rows, Py_ssize_t n_vocab,
                              Py_ssize_t n_paths) noexcept:
    """The total length of the samples' paths, every label inside the tree
    and every path inside the paths array; -1 where one is not. (Their
    nodes are checked as they are copied.)"""
    cdef Py_ssize_t i, label, begin, end, total = 0
    for i in range(rows):
        label = (<const int *>(tp + i * ts))[0]
        if label < 0 or label >= n_vocab:
            return -1
        begin = b[label]
        end = b[label + 1]
        if begin < 0 or end < begin or end > n_paths:
            return -1
        total += end - begin
    return total


cdef list _prefixes(object a, Py_ssize_t longest):
    """``[a[:0], a[:1], ..., a[:longest]]``: the per-sample views, made
    once per call rather than once per sample."""
    return [a[:n] for n in range(longest + 1)]


cdef _Tree _tree(object function, object x, object t, object W):
    """The checked operands; None where stock's loops would see anything
    but float32 or float64 inputs of one dtype, labels inside the tree and
    paths inside ``W`` (stock then raises, or wraps a negative label)."""
    if not numpy_struct_matches() or type(x) is not _ndarray:
        return None
    cdef int typenum = builtin_typenum(x)
    if typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE:
        return None
    if (not aligned_array(x, typenum, 2) or not aligned_array(W, typenum, 2)
            or type(t) is not _ndarray or builtin_typenum(t) != CFP_NPY_INT
            or cfp_nd(t) != 1 or not cfp_flags(t) & CFP_NPY_ALIGNED
            or cfp_dims(t)[0] != cfp_dims(x)[0]
            or cfp_dims(W)[1] != cfp_dims(x)[1]):
        return None
    paths = function.paths
    codes = function.codes
    begins = function.begins
    if (not _tree_array(paths, CFP_NPY_INT)
            or not _tree_array(codes, typenum)
            or not _tree_array(begins, CFP_NPY_INT)):
        return None
    cdef Py_ssize_t n_vocab = cfp_dims(begins)[0] - 1
    cdef Py_ssize_t n_paths = min(cfp_dims(paths)[0], cfp_dims(codes)[0])
    cdef Py_ssize_t n_nodes = cfp_dims(W)[0]
    cdef const int *b = <const int *>cfp_data(begins)
    cdef const int *p = <const int *>cfp_data(paths)
    cdef const char *tp = cfp_data(t)
    cdef Py_ssize_t ts = cfp_strides(t)[0]
    cdef _Tree tree = _Tree()
    tree.rows = cfp_dims(x)[0]
    tree.begin = empty1(_INTP, tree.rows)
    tree.length = empty1(_INTP, tree.rows)
    tree.max_length = 0
    cdef Py_ssize_t total = _paths_length(tp, ts, b, tree.rows, n_vocab,
                                          n_paths)
    if total < 0:
        return None
    # The samples' paths and codes, copied as checked: the loops index W by
    # these, whatever Python code runs meanwhile (a finalizer, or another
    # thread while NumPy's dot has released the lock).
    used_paths = empty1(_INTC, total)
    used_codes = empty1(x.dtype, total)
    cdef Py_ssize_t i, label, begin, end, at = 0
    cdef Py_ssize_t itemsize = 4 if typenum == CFP_NPY_FLOAT else 8
    cdef int *up = <int *>cfp_data(used_paths)
    cdef char *uc = cfp_data(used_codes)
    cdef const char *c = cfp_data(codes)
    # Every bound checked again as it is used: the allocations above may
    # have run Python code (a finalizer) that changed the arrays.
    for i in range(tree.rows):
        label = (<const int *>(tp + i * ts))[0]
        if label < 0 or label >= n_vocab:
            return None
        begin = b[label]
        end = b[label + 1]
        if (begin < 0 or end < begin or end > n_paths
                or at + end - begin > total):
            return None
        memcpy(up + at, p + begin, (end - begin) * sizeof(int))
        memcpy(uc + at * itemsize, c + begin * itemsize,
               (end - begin) * itemsize)
        tree.begin[i] = at
        tree.length[i] = end - begin
        tree.max_length = max(tree.max_length, end - begin)
        at += end - begin
    # The nodes are checked on the copy, which nothing else changes.
    if at != total or not indices_within(up, total, n_nodes):
        return None
    tree.x, tree.t, tree.W = x, t, W
    tree.paths, tree.codes = used_paths, used_codes
    tree.typenum = typenum
    tree.units = cfp_dims(x)[1]
    return tree


cdef bint _forward_rows(_Tree tree, _Loops loops, int flags,
                        real *loss) except -1:
    # Per sample: v = logaddexp(0.0, -(w.dot(x) * codes)); loss += sum(v).
    # False where a watched flag was raised. The flags are tested once, so
    # a flag the BLAS calls raised, on which stock's dot does not act, also
    # sends the call to stock: rare (non-finite or tiny values), and it
    # only costs the speed. The tests per sample took 5% of word2vec_hsm's
    # perf samples.
    x, W = tree.x, tree.W
    dtype = x.dtype
    cdef object w_array = empty2(dtype, tree.max_length, tree.units)
    cdef object v_array = empty1(dtype, tree.max_length)
    cdef real *w = <real *>cfp_data(w_array)
    cdef real *v = <real *>cfp_data(v_array)
    cdef const char *Wp = cfp_data(W)
    cdef Py_ssize_t s0 = cfp_strides(W)[0], s1 = cfp_strides(W)[1]
    cdef const char *xp = cfp_data(x)
    cdef Py_ssize_t xs0 = cfp_strides(x)[0], xs1 = cfp_strides(x)[1]
    cdef const int *paths = <const int *>cfp_data(tree.paths)
    cdef const real *codes = <const real *>cfp_data(tree.codes)
    cdef list ws = _prefixes(w_array, tree.max_length)
    cdef list vs = _prefixes(v_array, tree.max_length)
    cdef real zero = 0
    cdef real total = 0
    cdef char *args[3]
    cdef Py_ssize_t steps[3]
    cdef Py_ssize_t i, n, begin
    steps[0] = 0
    steps[1] = steps[2] = sizeof(real)
    args[0] = <char *>&zero
    args[1] = args[2] = <char *>v
    clear_flags(flags)
    for i in range(tree.rows):
        n = tree.length[i]
        begin = tree.begin[i]
        if n:
            gather_rows(Wp, s0, s1, paths + begin, n, tree.units, w)
            if not gemv(tree.typenum, False, <char *>w, n, tree.units,
                        xp + i * xs0, xs1, <char *>v):
                _dot(ws[n], x[i], vs[n])
        neg_times(v, codes + begin, n)
        loops.logaddexp.function(args, &n, steps, loops.logaddexp.data)
        total = total + (zero + pairwise_sum(v, n))
    if fetestexcept(flags):
        return False
    loss[0] = total
    return True


cdef object _forward(object node, tuple in_data, ConfigView config):
    if len(in_data) != 3 or node._is_chainerx_fallback_mode:
        return NOT_HANDLED
    x, t, W = in_data
    cdef _Tree tree = _tree(node._function, x, t, W)
    if tree is None:
        return NOT_HANDLED
    cdef int flags = watched()
    loss = empty(x.dtype, 0, NULL)
    cdef bint done
    if tree.typenum == CFP_NPY_FLOAT:
        if not _loops_float.ready():
            return NOT_HANDLED
        done = _forward_rows[float](tree, _loops_float, flags,
                                    <float *>cfp_data(loss))
    else:
        if not _loops_double.ready():
            return NOT_HANDLED
        done = _forward_rows[double](tree, _loops_double, flags,
                                     <double *>cfp_data(loss))
    if not done:
        return NOT_HANDLED
    retain_inputs(node, range(3))
    return loss,


cdef bint _backward_rows(_Tree tree, _Loops loops, int flags, real gloss,
                         object gx, object gW) except -1:
    # Per sample, stock's _backward_cpu_one: wxy = w.dot(x) * codes;
    # g = -gloss * codes / (1.0 + exp(wxy)); gx[i] = g.dot(w);
    # gW[path] += outer(g, x). False where a watched flag was raised, as
    # _forward_rows tests them.
    x, W = tree.x, tree.W
    dtype = x.dtype
    cdef object w_array = empty2(dtype, tree.max_length, tree.units)
    cdef object v_array = empty1(dtype, tree.max_length)
    cdef object e_array = empty1(dtype, tree.max_length)
    cdef object gx_row = empty1(dtype, tree.units)
    cdef real *w = <real *>cfp_data(w_array)
    cdef real *v = <real *>cfp_data(v_array)
    cdef real *e = <real *>cfp_data(e_array)
    cdef const char *Wp = cfp_data(W)
    cdef Py_ssize_t s0 = cfp_strides(W)[0], s1 = cfp_strides(W)[1]
    cdef const char *xp = cfp_data(x)
    cdef Py_ssize_t xs0 = cfp_strides(x)[0], xs1 = cfp_strides(x)[1]
    cdef char *gxp = cfp_data(gx)
    cdef Py_ssize_t gxs0 = cfp_strides(gx)[0], gxs1 = cfp_strides(gx)[1]
    cdef char *gWp = cfp_data(gW)
    cdef Py_ssize_t gs0 = cfp_strides(gW)[0], gs1 = cfp_strides(gW)[1]
    cdef real *row = <real *>cfp_data(gx_row)
    cdef const int *paths = <const int *>cfp_data(tree.paths)
    cdef const real *codes = <const real *>cfp_data(tree.codes)
    cdef list ws = _prefixes(w_array, tree.max_length)
    cdef list vs = _prefixes(v_array, tree.max_length)
    cdef real ng = -gloss
    cdef char *args[2]
    cdef Py_ssize_t steps[2]
    cdef Py_ssize_t i, n, begin, units = tree.units
    steps[0] = steps[1] = sizeof(real)
    args[0] = <char *>v
    args[1] = <char *>e
    clear_flags(flags)
    for i in range(tree.rows):
        n = tree.length[i]
        begin = tree.begin[i]
        if n:
            gather_rows(Wp, s0, s1, paths + begin, n, units, w)
            if not gemv(tree.typenum, False, <char *>w, n, units,
                        xp + i * xs0, xs1, <char *>v):
                _dot(ws[n], x[i], vs[n])
        times(v, codes + begin, n)
        loops.exp.function(args, &n, steps, loops.exp.data)
        over_one_plus(v, ng, codes + begin, e, n)
        if n:
            if not gemv(tree.typenum, True, <char *>w, n, units, <char *>v,
                        sizeof(real), <char *>row):
                _dot(vs[n], ws[n], gx_row)
        else:
            memset(row, 0, units * sizeof(real))   # what dot gives for n 0
        store_row(gxp + i * gxs0, gxs1, row, units)
        add_outer_rows(gWp, gs0, gs1, paths + begin, v, n, xp + i * xs0, xs1,
                       units)
    return not fetestexcept(flags)


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # FunctionAdapter.backward over the Function's backward_cpu: every
    # gradient computed, those asked for returned as Variables that
    # remember the Function's label.
    if len(grad_outputs) != 1 or func._is_chainerx_fallback_mode:
        return NOT_HANDLED
    gloss = grad_array(grad_outputs[0])
    if gloss is None or cfp_nd(gloss) != 0:
        return NOT_HANDLED
    if func._input_indexes_to_retain != range(3):
        return NOT_HANDLED
    xs = retained_inputs(func, [])
    if xs is None:
        return NOT_HANDLED
    x, t, W = xs
    function = func._function
    cdef _Tree tree = _tree(function, x, t, W)
    # gloss is read as a C float: a misaligned one goes to stock.
    if tree is None or not aligned_array(gloss, tree.typenum, 0):
        return NOT_HANDLED
    gx = _empty_like(x)
    gW = _zeros_like(W)
    cdef int flags = watched()
    cdef bint done
    if tree.typenum == CFP_NPY_FLOAT:
        if not _loops_float.ready():
            return NOT_HANDLED
        done = _backward_rows[float](tree, _loops_float, flags,
                                     (<float *>cfp_data(gloss))[0], gx, gW)
    else:
        if not _loops_double.ready():
            return NOT_HANDLED
        done = _backward_rows[double](tree, _loops_double, flags,
                                      (<double *>cfp_data(gloss))[0], gx, gW)
    if not done:
        return NOT_HANDLED
    label = function.label
    gxs = (gx, None, gW)
    ret = []
    for i in indexes:
        g = gxs[i]
        if g is not None:
            g = new_variable(g, True, None, 0)
            g.node._old_style_grad_generator = label
        ret.append(g)
    return tuple(ret)


ENTRIES = (
    compiled(_Function,
             _forward, ('forward', 'forward_cpu', '_forward_cpu_one'),
             _backward, (), None, NULL, -1,
             ('backward', 'backward_cpu', '_backward_cpu_one', 'label')),
)
