# cython: boundscheck=True, wraparound=True
"""What applying a FunctionNode does around its forward, shared by the
patched ``apply`` and by the compiled backwards that apply gradient nodes."""
import numpy

import chainer
from chainer import variable

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._ndarray cimport (
    cfp_dims, cfp_nd, numpy_struct_matches)
from chainer_fastpath._core._grads cimport new_grad
from chainer_fastpath._core._registry cimport NOT_HANDLED, run_forward
from chainer_fastpath._core._type_check cimport check_types

cdef type _ndarray = numpy.ndarray
cdef type _Variable = variable.Variable

# (None,) * n for small n: input and output layouts without allocation.
cdef tuple _NONE_LAYOUTS = tuple([(None,) * n for n in range(16)])


cdef tuple none_layouts(Py_ssize_t n):
    if n < 16:
        return <tuple>_NONE_LAYOUTS[n]
    return (None,) * n


cdef tuple apply_detached(object node, tuple in_data, bint requires_grad):
    """``node.apply(in_data)`` for a new node that nobody else references,
    while no graph is recorded and no function hook is registered, on NumPy
    arrays: stock's type check, forward and output checks, and output
    gradients (``_grads``) where stock builds Variables. The graph
    bookkeeping stock does on the node is skipped: the node is dropped as
    soon as this returns.
    """
    cdef ConfigView config = ConfigView.current()
    node._input_layouts = none_layouts(len(in_data))
    if config.get('type_check'):
        check_types(node, in_data)
    outputs = run_forward(node, in_data, config)
    if outputs is NOT_HANDLED:
        outputs = node.forward(in_data)
    check_outputs(node, outputs, node.is_elementwise)
    cdef tuple out = <tuple>outputs
    cdef Py_ssize_t i, n_out = len(out)
    cdef list ret = [None] * n_out
    for i in range(n_out):
        y = out[i]
        if type(y) is _ndarray:
            ret[i] = new_grad(y, requires_grad)
        else:
            ret[i] = _Variable(y, requires_grad=requires_grad)
    return tuple(ret)


cdef int check_outputs(object self, object outputs,
                       bint elementwise) except -1:
    """Stock's validation of ``forward``'s result, with stock's errors;
    ``elementwise`` is ``self.is_elementwise``."""
    cdef object y, first
    if type(outputs) is not tuple:
        raise TypeError(
            'forward output must be a tuple ({})\n'
            'Actual: {}'.format(self.label, type(outputs)))
    cdef tuple out = <tuple>outputs
    cdef bint all_numpy = True
    for y in out:
        if type(y) is not _ndarray:
            all_numpy = False
    if elementwise and len(out) > 0 and not (all_numpy
                                             and _same_shapes(out)):
        first = out[0].shape
        for y in out:
            if y.shape != first:
                raise RuntimeError(
                    'An elementwise function returned outputs with '
                    'different shapes.\n'
                    'Function: {}\n'
                    'Input shapes: {}\n'
                    'Output shapes: {}'.format(
                        self.label,
                        ', '.join(repr(x.shape) for x in out),
                        ', '.join(repr(z.shape) for z in out),
                    ))
    if not all_numpy and not chainer.is_arrays_compatible(out):
        if not all(isinstance(z, chainer.get_array_types()) for z in out):
            raise TypeError(
                'forward output must be a tuple of ndarrays.\n'
                'Function: {}\n'
                'Actual output types: {}'
                .format(self.label, tuple(type(z) for z in out)))
        raise TypeError(
            'incompatible array types are mixed in the forward output '
            '({}).\n'
            'Actual: {}'.format(
                self.label, ', '.join(str(type(z)) for z in out)))
    return 0


cdef bint _same_shapes(tuple arrays):
    """Whether the NumPy ``arrays`` all have the first one's shape, read off
    the arrays without making their shape tuples; False where that cannot
    be read."""
    if not numpy_struct_matches():
        return False
    cdef object first = arrays[0]
    cdef int nd = cfp_nd(first)
    cdef Py_ssize_t *dims = cfp_dims(first)
    cdef Py_ssize_t i, k
    for i in range(1, len(arrays)):
        a = arrays[i]
        if cfp_nd(a) != nd:
            return False
        for k in range(nd):
            if cfp_dims(a)[k] != dims[k]:
                return False
    return True
