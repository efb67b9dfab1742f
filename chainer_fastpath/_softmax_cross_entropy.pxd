cpdef object forward(object x, object t, object ignore_label,
                     bint normalize, str reduce, bint cache_score)
cpdef object grad(object y, object t, object ignore_label, object gloss,
                  object coeff)
