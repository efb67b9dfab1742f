cpdef object lstm_forward(object c_prev, object x)
cpdef object lstm_grad(object c_prev, object x, object c_next, object gc,
                       object gh)
