cdef bint is_stock_gru(object f)
cdef tuple gru_step(object x, object h, object w, object b)
