cdef tuple lstm_functions(object f)
cdef tuple lstm_step(tuple functions, object x, object h, object c,
                     object w, object b)
