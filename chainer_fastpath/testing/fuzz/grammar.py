"""The grammar: Hypothesis strategies that draw small Chainer programs.

A program is a few inputs (arrays of every layout, wrapped as ndarrays,
Variables, Parameters or their subclasses), a few operations over them
(``F.*`` calls, Variable operators with Variable, ndarray and scalar
operands, links, direct ``FunctionNode.apply``), then backward passes
(``backward`` with its options, ``chainer.grad``, double backprop,
``unchain_backward``) and an optimizer section (every rule, edge
hyperparameters, hooks), under a drawn configuration (``type_check``,
``debug``, ``enable_backprop``, ``train``, NumPy's error state, warning
filters, function and link hooks). Every choice lists its plainest option
first, which is where Hypothesis shrinks to.

Shapes are tracked while drawing so most operations get operands they
accept; the rest raise, and the exceptions are compared too.
"""
import numpy
from hypothesis import strategies as st

from chainer_fastpath.testing.fuzz.execute import ERRSTATES
from chainer_fastpath.testing.fuzz.execute import WARNING_FILTERS
from chainer_fastpath.testing.fuzz.program import Program

SHAPES = ((3,), (2, 3), (), (1,), (0,), (3, 2), (2, 1), (1, 3), (2, 0),
          (2, 3, 1), (2, 1, 3), (4,), (1, 1))
FLOATS = ('float32', 'float64', 'float16')
DTYPES = FLOATS + ('int32', 'int64', 'int8', 'uint8', 'bool')
LAYOUTS = ('C', 'F', 'strided', 'readonly', 'misaligned', 'swapped')
VALUES = ('normal', 'special', 'big')
WRAPPERS = ('Variable', 'ndarray', 'Parameter', 'MyVariable', 'MyParameter')
SCALARS = ('2', '0.5', '-1', '0', '3.0', 'numpy.float32(2)',
           'numpy.float64(-0.5)', 'numpy.float16(3)', 'numpy.int32(2)',
           'numpy.array(1.5)', 'True', '1e39')

# Each optimizer's hyperparameters: the first value is stock's default or
# near it, the others are the edges (tiny eps, huge lr, beta 1.0).
_LR = (0.01, 1e30, 0.0, -1.0, 1e-45)
_EPS = (1e-8, 1e-45, 0.0)
_BETA = (0.9, 1.0, 0.0)
OPTIMIZERS = {
    'SGD': {'lr': _LR},
    'MomentumSGD': {'lr': _LR, 'momentum': _BETA},
    'CorrectedMomentumSGD': {'lr': _LR, 'momentum': _BETA},
    'NesterovAG': {'lr': _LR, 'momentum': _BETA},
    'Adam': {'alpha': (0.001, 1e30, 0.0), 'beta1': _BETA,
             'beta2': (0.999, 1.0, 0.0), 'eps': _EPS, 'eta': (1.0, 0.0),
             'weight_decay_rate': (0, 0.5), 'amsgrad': (False, True),
             'adabound': (False, True)},
    'AdamW': {'alpha': (0.001, 1e30), 'beta1': _BETA,
              'weight_decay_rate': (0, 0.5)},
    'AMSGrad': {'alpha': (0.001, 1e30), 'beta2': (0.999, 1.0)},
    'AdaBound': {'alpha': (0.001, 1e30), 'final_lr': (0.1, 0.0),
                 'gamma': (0.001, 1.0)},
    'AMSBound': {'alpha': (0.001, 1e30), 'final_lr': (0.1, 0.0)},
    'RMSprop': {'lr': _LR, 'alpha': (0.99, 1.0, 0.0), 'eps': _EPS,
                'eps_inside_sqrt': (False, True)},
    'RMSpropGraves': {'lr': _LR, 'alpha': (0.95, 1.0), 'momentum': _BETA,
                      'eps': (1e-4,) + _EPS},
    'AdaGrad': {'lr': _LR, 'eps': _EPS},
    'AdaDelta': {'rho': (0.95, 1.0, 0.0), 'eps': (1e-6,) + _EPS},
    'SMORMS3': {'lr': _LR, 'eps': (1e-16,) + _EPS},
    'MSVAG': {'lr': (0.1,) + _LR, 'beta': _BETA, 'eta': (1.0, 0.0),
              'weight_decay_rate': (0, 0.5)},
}
OPTIMIZER_HOOKS = ('record_optimizer(EVENTS)',
                   'optimizer_hooks.WeightDecay(0.1)',
                   'optimizer_hooks.Lasso(0.1)',
                   'optimizer_hooks.GradientClipping(0.5)',
                   'optimizer_hooks.GradientHardClipping(-0.1, 0.1)',
                   'optimizer_hooks.GradientNoise(0.1)',
                   'optimizer_hooks.GradientLARS(0.1)')
# Values that divide by zero inside an update (stock has then updated part
# of the state: a known difference): betas of 1.0, Adam's alpha 0.0 (with
# adabound).
_DIVIDING = {'beta1': 1.0, 'beta2': 1.0, 'alpha': 0.0}


def _broadcast(a, b):
    try:
        return tuple(numpy.broadcast_shapes(a, b))
    except ValueError:
        return None


def _index_shape(shape, index):
    try:
        return eval('d[{}]'.format(index),
                    {'d': numpy.empty(shape, bool)}).shape
    except Exception:
        return None


class Val:
    """A named value of the program as drawn: its shape (None when
    unknown), dtype and kind ('var' for Variables, 'nd' for arrays)."""

    __slots__ = ('name', 'shape', 'dtype', 'kind')

    def __init__(self, name, shape, dtype, kind):
        self.name, self.shape, self.dtype, self.kind = name, shape, dtype, \
            kind

    @property
    def float(self):
        return self.dtype in FLOATS


class Builder:
    """Draws a program's statements one at a time from Hypothesis's bytes,
    keeping track of the values it has named.

    Each part of the program (the configuration, each input, operation,
    backward pass, the optimizer section) reads its choices from its own
    slot of bytes (:data:`SLOTS`), so a part's choices do not move when
    another part changes. Hypothesis shrinks by lowering bytes: a lower
    count drops parts, a zero byte takes an option's first, plainest, value
    (as do choices read past a slot's end).
    """

    def __init__(self, skip):
        self.skip = skip
        self.lines = []
        self.vals = []
        self.count = 0
        self.data = b''
        self.pos = 0

    def read(self, chunk):
        """Makes ``chunk`` the bytes the next choices come from."""
        self.data, self.pos = chunk, 0

    def integer(self, low, high):
        """An integer in ``[low, high]``."""
        if self.pos >= len(self.data):
            return low
        byte = self.data[self.pos]
        self.pos += 1
        return low + byte % (high - low + 1)

    def choice(self, options):
        return options[self.integer(0, len(options) - 1)]

    def flag(self):
        return bool(self.integer(0, 1))

    def emit(self, line):
        self.lines.append(line)

    def name(self, prefix='v'):
        self.count += 1
        return '{}{}'.format(prefix, self.count)

    def add(self, expr, shape, dtype, kind='var'):
        """Names ``expr``'s value; returns its Val."""
        val = Val(self.name(), shape, dtype, kind)
        self.emit('{} = {}'.format(val.name, expr))
        if shape is not None:
            self.vals.append(val)
        return val

    def array(self, shape, dtype):
        layout = self.choice(LAYOUTS)
        values = self.choice(VALUES)
        args = [repr(shape), repr(dtype)]
        if values != 'normal':
            args += [repr(layout), repr(values)]
        elif layout != 'C':
            args.append(repr(layout))
        return 'arr({})'.format(', '.join(args))

    def input(self, shape=None, dtype=None, kind=None):
        """A new input: drawn shape, dtype, layout, values, wrapper and
        ``requires_grad`` unless given."""
        if shape is None:
            shape = self.choice(SHAPES)
        if dtype is None:
            dtype = self.choice(DTYPES)
        wrapper = 'ndarray' if kind == 'nd' else self.choice(
            WRAPPERS[:1] + WRAPPERS[2:] if kind == 'var' else WRAPPERS)
        expr = self.array(shape, dtype)
        if wrapper == 'ndarray':
            return self.add(expr, shape, dtype, 'nd')
        if wrapper in ('Variable', 'MyVariable') and not self.flag():
            expr += ', requires_grad=False'
        return self.add('{}({})'.format(wrapper, expr), shape, dtype)

    def pick(self, test, shape=None, dtype=None, kind=None):
        """An existing value that passes ``test``, or a new input (of
        ``shape``, ``dtype`` and ``kind`` where given)."""
        options = [v for v in self.vals if test(v)]
        i = self.integer(0, len(options))
        if i < len(options):
            return options[i]
        return self.input(shape, dtype, kind)

    def pick_float(self, test=lambda v: True, **kwargs):
        return self.pick(lambda v: v.float and test(v), **kwargs)


# -- operations: each draws its operands and emits one or two statements --

def _unary(call):
    def op(b):
        x = b.pick_float()
        b.add(call.format(x=x.name), x.shape, x.dtype, 'var')
    op.__name__ = call
    return op


def _leaky_relu(b):
    x = b.pick_float()
    slope = b.choice((0.2, 0.0, -1.0, 1.0))
    b.add('F.leaky_relu({}, slope={!r})'.format(x.name, slope), x.shape,
          x.dtype)


def _softmax(b):
    x = b.pick_float(lambda v: len(v.shape) >= 2, shape=(2, 3))
    f = b.choice(('softmax', 'log_softmax'))
    b.add('F.{}({})'.format(f, x.name), x.shape, x.dtype)


def _arith(b, other=None):
    symbol = b.choice(('+', '*', '-', '/', '**'))
    x = b.pick(lambda v: True)
    if other is None:
        other = b.choice(('var', 'nd'))
    if other == 'scalar':
        y_name, y_shape, kind = b.choice(SCALARS), x.shape, x.kind
    else:
        same = b.flag()
        y = b.pick(lambda v: v.dtype == x.dtype and (
            v.shape == x.shape if same else
            _broadcast(v.shape, x.shape) is not None),
            shape=x.shape if same else b.choice((x.shape[1:], (1,) +
                                                 x.shape[1:])),
            dtype=x.dtype, kind=other)
        y_name, y_shape = y.name, _broadcast(x.shape, y.shape)
        kind = 'var' if 'var' in (x.kind, y.kind) else 'nd'
    if b.flag():
        expr = '{} {} {}'.format(x.name, symbol, y_name)
    else:
        expr = '{} {} {}'.format(y_name, symbol, x.name)
    b.add(expr, y_shape, x.dtype, kind)


def _arith_scalar(b):
    _arith(b, 'scalar')


def _constant_arith(b):
    # A float Variable and a constant, either side: the *Constant nodes
    # and PowVarConst, which _arith's mixed operands reach less often.
    x = b.pick_float(lambda v: v.kind == 'var', kind='var')
    symbol = b.choice(('-', '**', '+', '*', '/'))
    c = b.choice(('2.0', '0.5', '-1', '3', 'numpy.float32(2)'))
    expr = ('{} {} {}' if b.flag() else '{2} {1} {0}').format(
        x.name, symbol, c)
    b.add(expr, x.shape, x.dtype)


def _f_add(b):
    x = b.pick_float()
    ys = [b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
                 shape=x.shape, dtype=x.dtype)
          for _ in range(b.integer(1, 3))]
    b.add('F.add({})'.format(', '.join([x.name] + [y.name for y in ys])),
          x.shape, x.dtype)


def _apply(b):
    # FunctionNode.apply called directly, with ndarrays among the inputs.
    x = b.pick_float()
    y = b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
               shape=x.shape, dtype=x.dtype)
    node = b.choice(('chainer.functions.math.basic_math.Add()',
                     'chainer.functions.math.basic_math.Mul()',
                     'chainer.functions.math.basic_math.Sub()'))
    b.add('{}.apply(({}, {}))[0]'.format(node, x.name, y.name), x.shape,
          x.dtype)


def _matmul(b):
    x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
    k = b.choice((2, 0, 1))
    transa = b.flag()
    n = x.shape[0] if transa else x.shape[1]
    y = b.pick(lambda v: v.dtype == x.dtype and len(v.shape) == 2 and
               v.shape[0] == n, shape=(n, k), dtype=x.dtype)
    m = x.shape[1] if transa else x.shape[0]
    if transa:
        b.add('F.matmul({}, {}, transa=True)'.format(x.name, y.name),
              (m, y.shape[1]), x.dtype)
    else:
        b.add('{} @ {}'.format(x.name, y.name) if b.flag() else
              'F.matmul({}, {})'.format(x.name, y.name), (m, y.shape[1]),
              x.dtype)


def _sum(b):
    x = b.pick_float()
    f = b.choice(('sum', 'mean', 'max', 'min'))
    nd = len(x.shape)
    axis = b.choice((None,) + tuple(range(-nd, nd)) + ((0, -1) if nd >= 2
                                                      else ()))
    keepdims = b.flag()
    args = x.name
    if axis is not None:
        args += ', axis={!r}'.format(axis)
    if keepdims:
        args += ', keepdims=True'
    try:
        shape = numpy.empty(x.shape).sum(axis=axis, keepdims=keepdims)
        shape = numpy.shape(shape)
    except Exception:
        shape = None
    b.add('F.{}({})'.format(f, args), shape, x.dtype)


def _arg_extreme(b):
    x = b.pick_float()
    f = b.choice(('argmax', 'argmin'))
    nd = len(x.shape)
    axis = b.choice((None,) + tuple(range(-nd, nd)))
    args = x.name if axis is None else '{}, axis={}'.format(x.name, axis)
    try:
        shape = numpy.shape(numpy.empty(x.shape).argmax(axis=axis))
    except Exception:
        shape = None
    b.add('F.{}({})'.format(f, args), shape, 'int32', 'var')


def _reshape(b):
    x = b.pick_float()
    target = b.choice((tuple(reversed(x.shape)), (-1,), x.shape + (1,),
                       (1,) + x.shape))
    size = int(numpy.prod(x.shape))
    shape = (size,) if target == (-1,) else target
    if b.flag():
        b.add('F.reshape({}, {!r})'.format(x.name, target), shape, x.dtype)
    else:
        # The method form takes the sizes as separate arguments.
        b.add('{}.reshape({})'.format(x.name, ', '.join(map(str, target))),
              shape, x.dtype, x.kind)


def _transpose(b):
    x = b.pick_float()
    nd = len(x.shape)
    axes = b.choice((None, tuple(reversed(range(nd))),
                     tuple(range(1, nd)) + (0,)[:nd]))
    shape = tuple(reversed(x.shape)) if axes is None else tuple(
        x.shape[a] for a in axes)
    if axes is None and b.flag():
        b.add('{}.T'.format(x.name), shape, x.dtype, x.kind)
    else:
        b.add('F.transpose({}, {!r})'.format(x.name, axes), shape, x.dtype)


def _broadcast_to(b):
    x = b.pick_float()
    target = b.choice(((2,) + x.shape,
                       tuple(3 if d == 1 else d for d in x.shape),
                       x.shape))
    b.add('F.broadcast_to({}, {!r})'.format(x.name, target), target,
          x.dtype)


def _broadcast_many(b):
    x = b.pick_float()
    y = b.pick(lambda v: v.dtype == x.dtype and
               _broadcast(v.shape, x.shape) is not None,
               shape=(1,) + x.shape[1:], dtype=x.dtype)
    outputs = b.name('bc')
    b.emit('{} = F.broadcast({}, {})'.format(outputs, x.name, y.name))
    shape = _broadcast(x.shape, y.shape)
    b.add('{}[{}]'.format(outputs, b.integer(0, 1)), shape, x.dtype)


def _logsumexp(b):
    x = b.pick_float()
    nd = len(x.shape)
    axis = b.choice((None,) + tuple(range(-nd, nd)) + ((0, -1) if nd >= 2
                                                      else ()))
    try:
        shape = numpy.logaddexp.reduce(numpy.zeros(x.shape), axis=axis).shape
    except Exception:
        shape = None
    b.add('F.logsumexp({}{})'.format(
        x.name, '' if axis is None else ', axis={!r}'.format(axis)), shape,
        x.dtype)


def _select_item(b):
    x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
    n, c = x.shape
    t = b.add('ints({!r}, {})'.format((n,), max(c, 1)), (n,), 'int32', 'nd')
    b.add('F.select_item({}, {})'.format(x.name, t.name), (n,), x.dtype)


def _output_layer(b):
    # word2vec's output layers: old-style Functions through FunctionAdapter
    # (BinaryHierarchicalSoftmaxFunction; NegativeSamplingFunctionGrad in
    # the backward), on rows of ``x`` with labels among three words.
    x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
    n, units = x.shape
    t = b.add('ints({!r}, 3)'.format((n,)), (n,), 'int32', 'nd')
    shape, options = (), ''
    if b.flag():
        link = 'L.BinaryHierarchicalSoftmax({}, ((0, 1), 2))'.format(units)
    else:
        reduce = b.choice(('sum', 'no'))
        link = 'L.NegativeSampling({}, [3, 2, 1], 2)'.format(units)
        shape = (n,) if reduce == 'no' else ()
        options = ', reduce={!r}'.format(reduce)
    layer = b.add(link, None, 'object', 'nd')
    y = b.add('{}({}, {}{})'.format(layer.name, x.name, t.name, options),
              shape, x.dtype)
    if options or b.flag():
        # Negative sampling's backward (always taken: the grammar's only
        # way there) applies NegativeSamplingFunctionGrad.
        b.emit('F.sum({}).backward()'.format(y.name))


def _huber_loss(b):
    x = b.pick_float()
    y = b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
               shape=x.shape, dtype=x.dtype)
    delta = b.choice((1.0, 0.5, 1e30, 0.0))
    reduce = b.choice(('sum_along_second_axis', 'no'))
    shape = x.shape if reduce == 'no' else (
        x.shape[:1] + x.shape[2:] if len(x.shape) >= 2 else None)
    b.add('F.huber_loss({}, {}, {!r}, reduce={!r})'.format(
        x.name, y.name, delta, reduce), shape, x.dtype)


def _get_item(b):
    x = b.pick(lambda v: True)
    index = b.choice(('0', ':', '1:', '::-1', '..., None', '[0, -1]',
                      'None, ...', '-1, ...', 'numpy.array([True, False])'))
    y = b.add('{}[{}]'.format(x.name, index), _index_shape(x.shape, index),
              x.dtype, x.kind)
    if x.kind == 'var' and x.float and b.flag():
        # The backward applies GetItemGrad.
        b.emit('F.sum({}).backward()'.format(y.name))


def _concat(b):
    x = b.pick_float(lambda v: len(v.shape) >= 1, shape=(2, 3))
    axis = b.integer(0, len(x.shape) - 1)
    y = b.pick(lambda v: v.dtype == x.dtype and len(v.shape) == len(
        x.shape) and all(d == e for i, (d, e) in enumerate(
            zip(v.shape, x.shape)) if i != axis),
        shape=x.shape, dtype=x.dtype)
    shape = list(x.shape)
    shape[axis] += y.shape[axis]
    f = b.choice(('concat', 'stack', 'hstack'))
    if f == 'concat':
        b.add('F.concat(({}, {}), axis={})'.format(x.name, y.name, axis),
              tuple(shape), x.dtype)
    else:
        shape = None if x.shape != y.shape else (
            x.shape[:axis] + (2,) + x.shape[axis:] if f == 'stack' else
            None)
        b.add('F.{}(({}, {}))'.format(f, x.name, y.name), shape, x.dtype)


def _split(b):
    x = b.pick_float(lambda v: len(v.shape) >= 1, shape=(2, 3))
    axis = b.integer(0, len(x.shape) - 1)
    sections = b.choice((1, 2, 3, [1], [0, 2], [5]))
    try:
        parts = numpy.split(numpy.empty(x.shape), sections, axis=axis)
    except Exception:
        parts = [numpy.empty(x.shape)]
    i = b.integer(0, len(parts) - 1)
    t = b.add('F.split_axis({}, {!r}, axis={})'.format(
        x.name, sections, axis), None, x.dtype)
    b.add('{}[{}]'.format(t.name, i), parts[i].shape, x.dtype)


def _misc(b):
    x = b.pick_float()
    call = b.choice(('F.expand_dims({x}, 0)', 'F.squeeze({x})',
                     'F.cast({x}, numpy.float64)', 'F.flatten({x})',
                     'F.clip({x}, -0.5, 0.5)', 'F.swapaxes({x}, 0, -1)',
                     'F.cumsum({x})', 'F.separate({x})[0]'))
    b.add(call.format(x=x.name), None, x.dtype)


def _shape_op(b):
    # expand_dims, squeeze and swapaxes with axes the shape accepts (and
    # one it may not).
    x = b.pick_float()
    nd = len(x.shape)
    f = b.choice(('expand_dims', 'squeeze', 'swapaxes'))
    if f == 'expand_dims':
        args = (b.integer(-nd - 1, nd),)
    elif f == 'squeeze':
        ones = tuple(i for i, d in enumerate(x.shape) if d == 1)
        args = (b.choice((None,) + ones + (0,)),)
    else:
        args = (b.integer(-nd, max(nd - 1, 0)), b.integer(0, max(nd - 1, 0)))
    try:
        shape = getattr(numpy, f)(numpy.empty(x.shape), *args).shape
    except Exception:
        shape = None
    call = ', '.join([x.name] + [repr(a) for a in args if a is not None])
    b.add('F.{}({})'.format(f, call), shape, x.dtype)


def _linear(b):
    x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
    n_out = b.choice((2, 1, 0))
    if b.flag():
        w = b.input((n_out, x.shape[1]), x.dtype, 'var')
        bias = ''
        if b.flag():
            bias = ', ' + b.input((n_out,), x.dtype, 'var').name
        b.add('F.linear({}, {}{})'.format(x.name, w.name, bias),
              (x.shape[0], n_out), x.dtype)
        return
    link = b.name('link')
    n_in = b.choice((x.shape[1], None))
    b.emit("with chainer.using_config('dtype', numpy.{}):\n"
           "    {} = L.Linear({!r}, {}, nobias={})".format(
               x.dtype, link, n_in, n_out, b.flag()))
    b.add('{}({})'.format(link, x.name), (x.shape[0], n_out), x.dtype)


def _conv_outsize(size, k, s, p, d, cover_all=False, deconv=False):
    # chainer.utils.conv's get_conv_outsize / get_deconv_outsize (the
    # grammar runs where Chainer is not imported).
    dk = k + (k - 1) * (d - 1)
    if deconv:
        return s * (size - 1) + dk - 2 * p
    return (size + 2 * p - dk + (s - 1 if cover_all else 0)) // s + 1


def _convolution(b):
    # F.convolution_2d or F.deconvolution_2d on a small image; an output
    # of no pixel is stock's error.
    x = b.pick_float(lambda v: len(v.shape) == 4, shape=b.choice(
        ((2, 2, 4, 3), (1, 1, 3, 3), (0, 2, 3, 3))))
    n, c, h, w = x.shape
    (kh, kw), out_c = b.choice(((2, 2), (3, 1), (1, 1))), b.choice((2, 1))
    stride, pad, dilate = b.choice((1, 2)), b.choice((0, 1)), b.choice((1, 2))
    deconv = b.flag()
    wdtype = b.choice(FLOATS) if b.flag() else x.dtype
    w_var = b.input((c, out_c, kh, kw) if deconv else (out_c, c, kh, kw),
                    wdtype, 'var')
    args = [x.name, w_var.name]
    if b.flag():
        args.append(b.input((out_c,), x.dtype, 'var').name)
    args.append('stride={}, pad={}, dilate={}'.format(stride, pad, dilate))
    if deconv:
        out = [_conv_outsize(s, k, stride, pad, dilate, deconv=True)
               for s, k in ((h, kh), (w, kw))]
        f = 'deconvolution_2d'
    else:
        cover_all = b.flag()
        out = [_conv_outsize(s, k, stride, pad, dilate, cover_all)
               for s, k in ((h, kh), (w, kw))]
        args.append('cover_all={}'.format(cover_all))
        f = 'convolution_2d'
    shape = (n, out_c) + tuple(out) if min(out) > 0 else None
    b.add('F.{}({})'.format(f, ', '.join(args)), shape, x.dtype)


def _embed_id(b):
    shape = b.choice(((3,), (2, 2), (0,)))
    vocab, width = b.choice((3, 1)), b.choice((2, 1))
    w = b.input((vocab, width), b.choice(FLOATS), 'var')
    ignore = b.flag()
    ids = b.add('ints({!r}, {}, ignore={})'.format(shape, vocab, ignore),
                shape, 'int32', 'nd')
    y = b.add('F.embed_id({}, {}{})'.format(
        ids.name, w.name, ', ignore_label=-1' if ignore else ''),
        shape + (width,), w.dtype)
    if b.flag():
        # Double backprop: the gradient's own backward applies EmbedIDGrad.
        g = b.name('g')
        b.emit('{} = chainer.grad([F.sum({} * {})], [{}], '
               'enable_double_backprop=True)'.format(g, y.name, y.name,
                                                     w.name))
        b.emit('F.sum({}[0] * {}[0]).backward()'.format(g, g))


def _softmax_cross_entropy(b):
    x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
    n, c = x.shape
    ignore = b.flag()
    t = b.add('ints({!r}, {}, ignore={})'.format((n,), c, ignore), (n,),
              'int32', 'nd')
    args = [x.name, t.name]
    reduce = b.choice(('mean', 'no'))
    if reduce == 'no':
        args.append("reduce='no'")
    if b.flag():
        args.append('normalize={}'.format(b.flag()))
    if b.flag():
        args.append('cache_score={}'.format(b.flag()))
    if b.flag():
        args.append('class_weight=arr(({},), {!r})'.format(c, x.dtype))
    b.add('F.softmax_cross_entropy({})'.format(', '.join(args)),
          () if reduce == 'mean' else (n,), x.dtype)


def _squared_error(b):
    x = b.pick_float()
    y = b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
               shape=x.shape, dtype=x.dtype)
    f = b.choice(('squared_error', 'mean_squared_error',
                  'mean_absolute_error'))
    b.add('F.{}({}, {})'.format(f, x.name, y.name),
          x.shape if f == 'squared_error' else (), x.dtype)


def _lstm(b):
    units, batch = b.choice((1, 2)), b.choice((2, 1, 0))
    dtype = b.choice(FLOATS)
    c = b.pick(lambda v: v.dtype == dtype and len(v.shape) == 2,
               shape=(batch, units), dtype=dtype, kind='var')
    units = c.shape[1]
    x = b.pick(lambda v: v.dtype == dtype and v.shape[1:] == (
        4 * units,) and v.shape[0] <= c.shape[0], shape=(
        min(batch, c.shape[0]), 4 * units), dtype=dtype)
    outputs = b.name('lstm')
    b.emit('{} = F.lstm({}, {})'.format(outputs, c.name, x.name))
    b.add('{}[0]'.format(outputs), c.shape, dtype)
    b.add('{}[1]'.format(outputs), x.shape[:1] + (units,), dtype)


def _dropout(b):
    x = b.pick_float()
    ratio = b.choice((0.5, 0.0, 0.99))
    b.add('F.dropout({}, {})'.format(x.name, ratio), x.shape, x.dtype)


def _as_variable(b):
    x = b.pick(lambda v: True)
    if x.kind == 'var':
        b.add('{}.array'.format(x.name), x.shape, x.dtype, 'nd')
    else:
        b.add('Variable({})'.format(x.name), x.shape, x.dtype)


# Nodes applied directly to a wrong number of inputs; the inputs go as a
# list, which tells these calls apart (program.features_of).
_ARITY_NODES = ('ElementwiseConstant()',
                'chainer.functions.activation.relu.ReLU()',
                'chainer.functions.math.basic_math.Add()',
                'chainer.functions.connection.linear.LinearFunction()',
                'chainer.functions.connection.embed_id.EmbedIDFunction()',
                'chainer.functions.loss.squared_error.SquaredError()',
                'chainer.functions.loss.softmax_cross_entropy.'
                'SoftmaxCrossEntropy()')


def _node_arity(b):
    node = b.choice(_ARITY_NODES)
    xs = [b.pick_float().name for _ in range(b.integer(0, 3))]
    b.add('{}.apply([{}])[0]'.format(node, ', '.join(xs)), None, 'float32')


def _callable_metadata(b):
    f = b.choice(('F.add', 'chainer.Variable.backward',
                  'chainer.FunctionNode.apply', 'chainer.Link.__call__',
                  'chainer.Variable.__add__', 'F.relu'))
    attrs = ('__module__', '__qualname__', '__doc__', '__name__')
    what = b.choice(('attrs', 'pickle', 'wrapped'))
    if what == 'attrs':
        expr = '[getattr({}, a, None) for a in {!r}]'.format(f, attrs)
    elif what == 'pickle':
        expr = "__import__('pickle').dumps({})".format(f)
    else:
        # Replacements carry ``__wrapped__`` (as functools.wraps does), so
        # unwrapping either leads to stock's code.
        expr = "__import__('inspect').unwrap({}).__code__.co_filename".format(
            f)
    b.add(expr, None, 'object', 'nd')


OPERATIONS = (
    _arith, _arith_scalar, _unary('F.relu({x})'), _unary('F.sigmoid({x})'),
    _unary('F.tanh({x})'), _unary('F.exp({x})'), _unary('-{x}'),
    _leaky_relu, _sum, _linear, _matmul, _reshape, _transpose,
    _broadcast_to, _get_item, _concat, _split, _softmax_cross_entropy,
    _squared_error, _embed_id, _lstm, _dropout, _f_add, _apply,
    _as_variable, _softmax, _misc,
    _unary('F.log({x})'), _unary('F.sqrt({x})'), _unary('F.square({x})'),
    _unary('F.absolute({x})'), _unary('F.softplus({x})'),
    _unary('F.elu({x})'), _unary('F.identity({x})'),
    _broadcast_many, _logsumexp, _select_item, _huber_loss,
    _constant_arith, _shape_op, _output_layer, _arg_extreme, _convolution,
)
# Operations that reach a category's difference, drawn unless skipped.
FEATURE_OPERATIONS = {
    'node-arity': _node_arity,
    'callable-metadata': _callable_metadata,
}


# -- backward passes --------------------------------------------------

def _target(b):
    return b.pick_float(lambda v: v.kind == 'var', kind='var')


def _backward_options(b):
    options = []
    if b.flag():
        options.append('retain_grad=True')
    if b.flag():
        options.append('enable_double_backprop=True')
    if b.flag():
        options.append('loss_scale={!r}'.format(b.choice((2.0, 0.5,
                                                          1e30))))
    return ', '.join(options)


def _backward(b):
    t = _target(b)
    how = b.choice(('sum', 'grad', 'direct'))
    if how == 'sum':
        t = b.add('F.sum({})'.format(t.name), (), t.dtype)
    elif how == 'grad':
        b.emit('{}.grad = {}'.format(t.name, b.array(t.shape, t.dtype)))
    b.emit('{}.backward({})'.format(t.name, _backward_options(b)))


def _grad(b):
    t = _target(b)
    leaves = [v.name for v in b.vals if v.kind == 'var'][:3]
    double = b.flag()
    g = b.name('g')
    b.emit('{} = chainer.grad([F.sum({} * {})], [{}]{})'.format(
        g, t.name, t.name, ', '.join(leaves),
        ', enable_double_backprop=True' if double else ''))
    if double and leaves:
        b.emit('F.sum({}[0] * {}[0]).backward()'.format(g, g))


def _unchain(b):
    t = _target(b)
    b.emit('{}.{}()'.format(t.name, b.choice(('unchain_backward',
                                              'unchain'))))


def _cleargrad(b):
    t = _target(b)
    b.emit('{}.{}()'.format(t.name, b.choice(('cleargrad', 'zerograd'))))


TAILS = (_backward, _grad, _unchain, _cleargrad)


# -- the optimizer section ----------------------------------------------

def _optimizer(b):
    fpe = 'optimizer-fpe' not in b.skip
    name = b.choice(tuple(OPTIMIZERS))
    hyper = []
    for key, options in OPTIMIZERS[name].items():
        if not fpe and key in _DIVIDING:
            options = tuple(o for o in options if o != _DIVIDING[key])
        value = b.choice(options)
        if value != options[0]:
            hyper.append('{}={!r}'.format(key, value))
    dtype = b.choice(FLOATS)
    n_in, n_out = b.choice((3, None, 0)), b.choice((2, 1))
    pclass = b.choice(('Parameter', 'MyParameter'))
    batch = b.choice((2, 1, 0))
    b.emit('model = Model({!r}, {}, {!r}, {}, nobias={})'.format(
        n_in, n_out, dtype, pclass, b.flag()))
    b.emit('opt = optimizers.{}({})'.format(name, ', '.join(hyper)))
    b.emit('opt.setup(model)')
    if dtype == 'float16' and b.flag():
        b.emit('opt.use_fp32_update()')
    for _ in range(b.integer(0, 2)):
        b.emit('opt.add_hook({})'.format(b.choice(OPTIMIZER_HOOKS)))
    x = b.add(b.array((batch, 3 if n_in is None else n_in), dtype), None,
              dtype, 'nd')
    quiet = not fpe or b.flag()
    for _ in range(b.integer(1, 2)):
        how = b.choice(('backward', 'lossfun', 'partial'))
        if how == 'lossfun':
            update = 'opt.update(lambda x: F.sum(model(x)), {})'.format(
                x.name)
        else:
            b.emit('model.cleargrads()')
            b.emit('loss = F.sum(model({}))'.format(x.name))
            b.emit('loss.backward()')
            if how == 'partial':
                b.emit('model.p.{}'.format(b.choice((
                    'grad = None', 'update_rule.enabled = False'))))
            update = 'opt.update()'
        b.emit('with quiet():\n    ' + update if quiet else update)


# -- the configuration ----------------------------------------------------

def _config(b):
    config = {
        # debug mode is slow (a stack trace per node): drawn less often.
        'type_check': not b.flag(), 'debug': b.integer(0, 3) == 3,
        'enable_backprop': not b.flag(), 'train': not b.flag(),
        'errstate': b.choice(ERRSTATES), 'link_hook': b.flag(),
    }
    filters = tuple(WARNING_FILTERS)
    if 'warning-location' in b.skip:
        filters = tuple(f for f in filters if 'chainer' not in f)
    config['warnings'] = b.choice(filters)
    hooks = (None, 'recorder')
    if 'hook-added-during-forward' not in b.skip:
        hooks += ('adding',)
    config['function_hook'] = b.choice(hooks)
    return config


# The bytes a program is drawn from: the header (configuration, then how
# many inputs, operations and backward passes, and whether an optimizer
# section follows), then a fixed slot for each of those parts.
HEADER = 16
SLOTS = (('input', 8, 3), ('operation', 16, 6), ('tail', 12, 2),
         ('optimizer', 32, 1))
SIZE = HEADER + sum(size * count for _, size, count in SLOTS)


def _slots(data):
    offset = HEADER
    slots = {}
    for part, size, count in SLOTS:
        slots[part] = [data[offset + i * size:offset + (i + 1) * size]
                       for i in range(count)]
        offset += size * count
    return slots


def build(data, skip=frozenset()):
    """The Program that ``data`` (:data:`SIZE` bytes, or fewer: the rest
    read as zeros) stands for."""
    b = Builder(skip)
    b.read(data[:HEADER])
    config = _config(b)
    counts = {'input': b.integer(1, 3), 'operation': b.integer(0, 6),
              'tail': b.integer(0, 2), 'optimizer': b.integer(0, 2) // 2}
    table = OPERATIONS + tuple(
        op for category, op in FEATURE_OPERATIONS.items()
        if category not in skip)
    parts = {'input': lambda b: b.input(),
             'operation': lambda b: b.choice(table)(b),
             'tail': lambda b: b.choice(TAILS)(b),
             'optimizer': _optimizer}
    slots = _slots(data)
    for part, _, _ in SLOTS:
        for chunk in slots[part][:counts[part]]:
            b.read(chunk)
            parts[part](b)
    return Program('\n'.join(b.lines) + '\n', config)


def programs(skip=frozenset()):
    """A strategy of Programs; features of the categories in ``skip`` are
    not drawn."""
    return st.binary(min_size=SIZE, max_size=SIZE).map(
        lambda data: build(data, skip))
