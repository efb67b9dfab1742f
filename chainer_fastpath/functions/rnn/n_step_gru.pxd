cdef tuple gru_functions(object f)
cdef tuple gru_step(tuple functions, object x, object h, object w, object b)
