from chainer_fastpath._backward.grad_table cimport GradTable


cdef list run_step(GradTable table, func, tuple inputs,
                   tuple target_input_indexes, tuple out_grad, list in_data,
                   list out_grad_array, hooks, bint detached,
                   bint callees_stock)
