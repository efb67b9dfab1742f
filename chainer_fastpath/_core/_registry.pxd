from chainer_fastpath._core._audit cimport StockFunctions, StockMethods
from chainer_fastpath._core._config cimport ConfigView

# What a compiled function returns for a case it leaves to stock.
cdef object NOT_HANDLED

# ``node.forward(in_data)`` for an exact, audited node; for a ``nodeless``
# entry, ``node`` may be None (no node is made, see
# ``_runtime._apply_node.apply_new``): the forward then reads nothing from
# it, and what it would store on it (``retain_inputs``, ``retain_outputs``,
# flags) goes nowhere.
ctypedef object (*forward_t)(object node, tuple in_data, ConfigView config)
# ``node.backward(indexes, grad_outputs)`` on NumPy arrays, for a caller
# that records no graph and has no function hook.
ctypedef object (*backward_t)(object node, tuple indexes, tuple grad_outputs)
# Adds the gradient ``backward`` would give for input ``into_index`` straight
# into ``acc_var``, the caller's gradient sum so far, as an in-place sum of
# the two would; False, with nothing done, where it cannot.
ctypedef bint (*backward_into_t)(object node, tuple grad_outputs,
                                 object acc_var) except -1
# Whether stock's ``check_type_forward`` of ``node`` passes on the NumPy
# ``in_data``, decided by its own comparisons: False where it would fail
# and where the checker cannot tell (stock's check then runs).
ctypedef bint (*checker_t)(object node, tuple in_data) except -1


cdef class Compiled:
    cdef readonly object cls    # a class (of any metaclass)
    cdef readonly bint adapted      # cls is an old-style Function's
    cdef forward_t forward
    cdef readonly StockMethods forward_methods
    # The module functions the forward stands for, audited per call where
    # any is declared (else None): ``.pairs``, ``(module, name)``.
    cdef readonly StockFunctions forward_functions
    cdef backward_t backward
    cdef readonly StockMethods backward_methods
    cdef backward_into_t backward_into
    cdef readonly Py_ssize_t into_index
    cdef readonly tuple backward_callees
    # Forwards and backwards run compiled (nodeless ones included).
    cdef public Py_ssize_t forward_calls
    cdef public Py_ssize_t backward_calls
    cdef readonly StockMethods check_methods
    cdef readonly tuple check_attributes
    # Where given, decides the checks it can before the cache is searched.
    cdef checker_t checker
    # Where the forward takes a node of None: what of the class stock's
    # ``apply`` reads from a new node, as it was when registered.
    cdef readonly StockMethods nodeless
    # _type_check's: the inputs' part of the key of the last check of cls
    # that passed, and the values of its check_attributes then.
    cdef bytes passed_memo
    cdef tuple passed_values


cdef Compiled compiled(object cls, forward_t forward, tuple forward_methods,
                       backward_t backward, tuple backward_callees,
                       tuple type_check, backward_into_t backward_into=*,
                       Py_ssize_t into_index=*, tuple backward_methods=*,
                       object check_owner=*)
cdef Compiled forward_callees(Compiled entry, tuple pairs)
cdef Compiled nodeless(Compiled entry)
cdef Compiled checked(Compiled entry, checker_t checker)
cdef Compiled lookup(object cls)
cdef Compiled lookup_node(object node)
cdef object node_class(object node)
cdef object run_forward(object node, tuple in_data, ConfigView config)
cdef bint forward_functions_stock(Compiled entry) except -1
cdef bint stock_callees() except -1
cdef bint applies_as_stock(object cls) except -1
cdef object run_backward(Compiled entry, object func, tuple indexes,
                         tuple grad_outputs, bint callees_stock)
cdef bint run_backward_into(Compiled entry, object func, tuple grad_outputs,
                            object acc_var, bint callees_stock) except -1
