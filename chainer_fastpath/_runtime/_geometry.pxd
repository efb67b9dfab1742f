"""The geometry the C loops of convolution and pooling take (``_im2col.h``,
``_pooling.h``).

Stock's ``im2col_cpu`` and ``col2im_cpu`` index with Python slices, which
raise or clip for a stride or dilation below 1, a negative pad or a kernel
of no size; the C loops index with the values as given. They take a
geometry only where every value is a plain ``int`` in ``[low, 2 ** 31)``:
then no product of two of them overflows ``Py_ssize_t``, and every index
they form lies where the callers' bounds checks look. Anything else (a
NumPy integer, a bool, a huge value) is stock's, with its errors.
"""


cdef inline bint within(object value, long low):
    return type(value) is int and low <= value <= 0x7fffffff


cdef inline bint strides_ok(object node):
    """Whether ``node``'s strides and dilations are at least 1 and its
    pads at least 0 (``sy, sx, dy, dx, ph, pw``)."""
    return (within(node.sy, 1) and within(node.sx, 1)
            and within(node.dy, 1) and within(node.dx, 1)
            and within(node.ph, 0) and within(node.pw, 0))


cdef inline bint fits(Py_ssize_t k, Py_ssize_t d, Py_ssize_t s, Py_ssize_t n,
                      Py_ssize_t size):
    """Whether stock's slice ``(k-1)*d : (k-1)*d + s*n : s`` of an axis of
    ``size`` (a padded image's) has n elements: else its in-place add
    raises, or broadcasts."""
    return n == 0 or (k - 1) * d + s * (n - 1) < size
