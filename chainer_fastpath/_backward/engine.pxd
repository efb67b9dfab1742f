cdef object backprop(outputs, retain_grad, loss_scale)
