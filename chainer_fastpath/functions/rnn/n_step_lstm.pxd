cdef bint is_stock_lstm(object f)
cdef tuple lstm_step(object x, object h, object c, object w, object b)
