"""What the machinery's differential tests compare: results with every
array's layout, the error raised, the calls recorded."""
import numpy

from chainer_fastpath.testing import error_of


def described(x):
    """``x`` with every array replaced by its type, dtype, shape, strides,
    flags, whether it owns its data, and bytes; containers kept."""
    if isinstance(x, numpy.ndarray):
        return ('ndarray', type(x), x.dtype.str, x.shape, x.strides,
                x.flags.c_contiguous, x.flags.f_contiguous,
                x.flags.owndata, x.flags.writeable, x.tobytes())
    if isinstance(x, numpy.generic):
        return ('scalar', type(x), x.tobytes())
    if isinstance(x, (list, tuple)):
        return (type(x), [described(e) for e in x])
    if isinstance(x, dict):
        return (type(x), [(k, described(v)) for k, v in x.items()])
    return (type(x), x)


def outcome(fn):
    """``described(fn())``, or the type and message of what it raised."""
    box = []
    error = error_of(lambda: box.append(fn()))
    return error if error is not None else described(box[0])
