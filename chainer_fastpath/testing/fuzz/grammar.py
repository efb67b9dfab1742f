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

from chainer_fastpath.testing.fuzz import machinery
from chainer_fastpath.testing.fuzz.execute import ERRSTATES
from chainer_fastpath.testing.fuzz.execute import WARNING_FILTERS
from chainer_fastpath.testing.fuzz.program import Program

SHAPES = ((3,), (2, 3), (), (1,), (0,), (3, 2), (2, 1), (1, 3), (2, 0),
          (2, 3, 1), (2, 1, 3), (4,), (1, 1))
FLOATS = ('float32', 'float64', 'float16')
DTYPES = FLOATS + ('int32', 'int64', 'int8', 'uint8', 'bool')
LAYOUTS = ('C', 'F', 'last', 'strided', 'readonly', 'misaligned',
           'swapped')
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
        self.config = {}
        # Statements to emit later: [operations to wait, lines], the
        # restores of replaced methods.
        self.pending = []

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
    # Slopes NumPy multiplies float32 by in float32, in float64 (beyond
    # its value-based bound), as NumPy scalars, NaN, and ones that overflow
    # or underflow the products.
    slope = b.choice(('0.2', '0.0', '-1.0', '1.0', '-0.0', '1e-40', '3.5e38',
                      'numpy.float32(0.1)', 'numpy.float64(-0.5)',
                      'numpy.float16(0.3)', 'float("nan")', '2'))
    b.add('F.leaky_relu({}, slope={})'.format(x.name, slope), x.shape,
          x.dtype)


def _softmax(b):
    x = b.pick_float(lambda v: len(v.shape) >= 2, shape=(2, 3))
    f = b.choice(('softmax', 'log_softmax'))
    b.add('F.{}({})'.format(f, x.name), x.shape, x.dtype)


def _softplus(b):
    # beta as floats, ints and NumPy scalars; ones float16 cannot hold
    # (1e5, and 1e-9's inverse) make NumPy compute in float32; 0 raises.
    x = b.pick_float()
    beta = b.choice(('1.0', '2.5', '-0.5', '1e5', '1e-9', '3',
                     'numpy.float32(0.5)', '0'))
    b.add('F.softplus({}, beta={})'.format(x.name, beta),
          None if beta == '0' else x.shape, x.dtype)


# Clip's bounds: floats, ints, NumPy scalars, one of them None, ones
# float16 cannot hold, NaN, a 0-d array; the last four raise stock's errors
# from Clip.__init__ (both None, equal, reversed, arrays it cannot compare).
_CLIP_BOUNDS = (('-0.5', '0.5'), ('None', '0.0'), ('0', 'None'),
                ('-1e5', '1e5'), ('numpy.float32(-0.5)', 'numpy.float64(1)'),
                ("float('nan')", '1.0'), ('numpy.array(-0.5)', 'None'),
                ('None', 'None'), ('1.0', '1.0'), ('1', '-1'),
                ('numpy.zeros(2)', '1.0'))


def _clip(b):
    x = b.pick_float()
    i = b.integer(0, len(_CLIP_BOUNDS) - 1)
    b.add('F.clip({}, {}, {})'.format(x.name, *_CLIP_BOUNDS[i]),
          x.shape if i < len(_CLIP_BOUNDS) - 4 else None, x.dtype)


def _extremum(b):
    # F.maximum or F.minimum of operands of one shape, or that broadcast.
    f = b.choice(('maximum', 'minimum'))
    x = b.pick_float()
    same = b.flag()
    y = b.pick(lambda v: v.dtype == x.dtype and (
        v.shape == x.shape if same else
        _broadcast(v.shape, x.shape) is not None),
        shape=x.shape if same else (1,) + x.shape[1:], dtype=x.dtype)
    b.add('F.{}({}, {})'.format(f, x.name, y.name),
          _broadcast(x.shape, y.shape), x.dtype)


def _pass_through(b):
    # F.copy to the CPU under its names (the backward-compatible
    # DummyDevice among them), F.identity of one to three values (an int
    # array among them), F.linear_interpolate of three operands of one
    # float dtype and shape.
    x = b.pick_float()
    f = b.choice(('copy', 'identity', 'linear_interpolate'))
    if f == 'copy':
        dst = b.choice(('-1', "'@numpy'", "chainer.get_device('@numpy')",
                        'chainer.backends.cuda.DummyDevice'))
        b.add('F.copy({}, {})'.format(x.name, dst), x.shape, x.dtype)
    elif f == 'identity':
        others = [b.pick(lambda v: True) for _ in range(b.integer(0, 2))]
        t = b.add('F.identity({})'.format(', '.join(
            v.name for v in [x] + others)), None, x.dtype)
        if others:
            b.add('{}[0]'.format(t.name), x.shape, x.dtype)
        else:
            b.vals.append(Val(t.name, x.shape, x.dtype, 'var'))
    else:
        p, y = (b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
                       shape=x.shape, dtype=x.dtype) for _ in range(2))
        b.add('F.linear_interpolate({}, {}, {})'.format(
            p.name, x.name, y.name), x.shape, x.dtype)


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
    # Constants a float32 holds exactly, and ones its conversion rounds
    # (0.1, 1e-3) or keeps signed (-0.0).
    c = b.choice(('2.0', '0.5', '-1', '3', 'numpy.float32(2)', '0.1',
                  '-0.0', '1e-3'))
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
    # Labels of int32 or int64, counted from the end (negative), or out of
    # range: NumPy's indexing error, stock's and the patch's alike. The
    # items picked from floats, or from integers (an argmax's indices, as
    # CRF1d's Viterbi path picks them).
    if b.flag():
        items = b.choice(('int32', 'int64'))
        x = b.add('ints((2, 3), 7, {!r})'.format(items), (2, 3), items,
                  'nd')
    else:
        x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
    n, c = x.shape
    high = max(c, 1)
    labels = b.choice(('in_range', 'int64', 'negative', 'out_of_range'))
    dtype = 'int64' if labels == 'int64' else 'int32'
    shift = {'negative': ' - {}'.format(high),
             'out_of_range': ' + {}'.format(high)}.get(labels, '')
    t = b.add('ints({!r}, {}, {!r}){}'.format((n,), high, dtype, shift),
              (n,), dtype, 'nd')
    b.add('F.select_item({}, {})'.format(x.name, t.name), (n,), x.dtype)


def _output_layer(b):
    # word2vec's output layers: old-style Functions through FunctionAdapter
    # (BinaryHierarchicalSoftmaxFunction; NegativeSamplingFunctionGrad in
    # the backward), on rows of ``x`` with labels among three words.
    x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
    n, units = x.shape
    shape, options = (), ''
    if b.flag():
        t = b.add('ints({!r}, 3)'.format((n,)), (n,), 'int32', 'nd')
        link = 'L.BinaryHierarchicalSoftmax({}, ((0, 1), 2))'.format(units)
    else:
        # Negative sampling drops the rows labelled -1 (copies the rest).
        t = b.add('ints({!r}, 3, ignore={})'.format((n,), b.flag()),
                  (n,), 'int32', 'nd')
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
    delta = b.choice((1.0, 0.5, 1e30, 0.0, 2, 1e-20, 2 ** 60))
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


def _linear_nd(b):
    # F.linear of an input of more than two dimensions, or of several batch
    # axes: stock reshapes the input (and the output) around the node.
    x = b.pick_float(lambda v: len(v.shape) >= 3,
                     shape=b.choice(((2, 1, 3), (2, 3, 2), (1, 2, 1, 2))))
    n = b.choice((2, 1, 3, 4))
    n_out = b.choice((2, 1, 0))
    head = x.shape[:n] if n > 1 else x.shape[:1]
    units = int(numpy.prod(x.shape[len(head):]))
    w = b.input((n_out, units), x.dtype, 'var')
    bias = ''
    if b.flag():
        bias = ', ' + b.input((n_out,), x.dtype, 'var').name
    shape = (head if n > 1 else head[:1]) + (n_out,)
    b.add('F.linear({}, {}{}, n_batch_axes={})'.format(
        x.name, w.name, bias, n), shape, x.dtype)


def _where(b):
    # F.where with a condition of the operands' shape, a 0-d one, or one
    # the type check rejects (not bool).
    x = b.pick_float()
    y = b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
               shape=x.shape, dtype=x.dtype)
    c = b.choice(('chainer.as_array({}) > 0', 'numpy.array(False)',
                  'chainer.Variable(chainer.as_array({}) < 0.5)',
                  'chainer.as_array({})')).format(x.name)
    b.add('F.where({}, {}, {})'.format(c, x.name, y.name), x.shape, x.dtype)


def _bernoulli(b):
    # Bernoulli's log-probability of 0s and 1s, or of any values (stock
    # raises on a negative one, or one above 1).
    logit = b.pick_float()
    x = b.pick(lambda v: v.shape == logit.shape, shape=logit.shape,
               dtype=logit.dtype)
    data = b.choice(('numpy.asarray(chainer.as_array({}) > 0, {!r})',
                     'chainer.as_array({})')).format(x.name, logit.dtype)
    b.add('chainer.distributions.Bernoulli(logit={}, binary_check={}).'
          'log_prob({})'.format(logit.name, b.flag(), data), logit.shape,
          logit.dtype)


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
    backward = b.flag()
    x = b.pick_float(lambda v: len(v.shape) == 4, shape=b.choice(
        ((2, 2, 4, 3), (1, 1, 3, 3), (0, 2, 3, 3))))
    n, c, h, w = x.shape
    (kh, kw), out_c = b.choice(((2, 2), (3, 1), (1, 1))), b.choice((2, 1))
    stride, pad, dilate = b.choice((1, 2)), b.choice((0, 1)), b.choice((1, 2))
    deconv = b.flag()
    wdtype = b.choice(FLOATS) if b.flag() else x.dtype
    wshape = (c, out_c, kh, kw) if deconv else (out_c, c, kh, kw)
    if backward:
        # A W that requires grad, whose gradient is Convolution2DGradW (an
        # input drawn past the slot's end would not).
        w_var = b.add('Variable({})'.format(b.array(wshape, wdtype)), wshape,
                      wdtype)
    else:
        w_var = b.input(wshape, wdtype, 'var')
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
    y = b.add('F.{}({})'.format(f, ', '.join(args)), shape, x.dtype)
    if backward and shape is not None:
        # Drawn first: the slot's bytes may run out before here.
        b.emit('F.sum({}).backward()'.format(y.name))


def _embed_id(b):
    shape = b.choice(((3,), (2, 2), (0,)))
    vocab, width = b.choice((3, 1)), b.choice((2, 1))
    w = b.input((vocab, width), b.choice(FLOATS), 'var')
    ignore = b.flag()
    view = b.choice(('', '', 'column', 'reversed'))
    index = b.choice(('int32', 'int64'))
    if view and len(shape) == 1:
        # A token of each sequence in a batch (ids[:, j]), or ids read
        # backwards: a vector with a stride of its own.
        ids = b.add('ints({!r}, {}, {!r}, ignore={}){}'.format(
            (shape[0], 2), vocab, index, ignore,
            '[:, 1]' if view == 'column' else '[::-1, 0]'),
            shape, index, 'nd')
    else:
        ids = b.add('ints({!r}, {}, {!r}, ignore={})'.format(
            shape, vocab, index, ignore), shape, index, 'nd')
    y = b.add('F.embed_id({}, {}{})'.format(
        ids.name, w.name, ', ignore_label=-1' if ignore else ''),
        shape + (width,), w.dtype)
    for _ in range(b.choice((0, 0, 1, 2))):
        # Tokens of a sequence: lookups into one W, whose gradients the
        # backward sums (the first dense, the next ones by rows into it).
        more = b.add('ints({!r}, {}, {!r}, ignore={})'.format(
            shape, vocab, index, ignore), shape, index, 'nd')
        y = b.add('{} + F.embed_id({}, {}{})'.format(
            y.name, more.name, w.name,
            ', ignore_label=-1' if ignore else ''), y.shape, w.dtype)
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
    y = b.add('F.softmax_cross_entropy({})'.format(', '.join(args)),
              () if reduce == 'mean' else (n,), x.dtype)
    if x.kind == 'var' and b.flag():
        # A backward that records a graph: stock's backward applies the
        # gradient node (_SoftmaxCrossEntropyGrad_NoDoubleBackprop), under
        # F.sum a broadcast gradient with reduce='no'.
        b.emit('F.sum({}).backward(enable_double_backprop=True)'.format(
            y.name))


def _accuracy(b):
    # F.accuracy on scores of 2 or 4 dimensions (classes on the second),
    # labels of int32 or int64 (-1 among them with ``ignore``), an ignore
    # label sometimes, sometimes of another type or out of any label's range.
    x = b.pick_float(lambda v: len(v.shape) in (2, 4) and v.shape[1] > 0,
                     shape=b.choice(((4, 3), (2, 3, 2, 2))))
    shape = (x.shape[0],) + x.shape[2:]
    t = b.add('ints({!r}, {}, {!r}, ignore={})'.format(
        shape, x.shape[1], b.choice(('int32', 'int64', 'int8')), b.flag()),
        shape, 'int32', 'nd')
    args = [x.name, t.name]
    if b.flag():
        args.append('ignore_label={}'.format(b.choice(
            ('-1', '0', '2 ** 40', 'numpy.int32(-1)', '1.0', "'a'"))))
    b.add('F.accuracy({})'.format(', '.join(args)), (), x.dtype)


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


def _sequences(b):
    # What NStepRNN links apply to their batches: F.permutate along an axis
    # (-1 repeats no slice, so stock permutes axis 0), sometimes inverted,
    # sometimes with an index out of range; F.transpose_sequence of an
    # input and its first rows (sometimes growing: stock's error).
    x = b.pick_float(lambda v: len(v.shape) >= 1, shape=(3, 2))
    if b.flag():
        axis = b.integer(-1, len(x.shape) - 1)
        n = x.shape[max(axis, 0)]
        order = list(range(n))[::-1]
        if b.flag():
            order = order[1:] + order[:1]
        shape = x.shape
        if n and b.flag():
            order[0], shape = n, None
        b.add('F.permutate({}, numpy.array({!r}, numpy.int32), axis={}, '
              'inv={})'.format(x.name, order, axis, b.flag()), shape,
              x.dtype)
        return
    k = b.integer(0, x.shape[0])
    first = [x.name, '{}[:{}]'.format(x.name, k)]
    if b.flag():
        first.reverse()
    ys = b.name('ts')
    b.emit('{} = F.transpose_sequence([{}])'.format(ys, ', '.join(first)))
    if x.shape[0] > 0:
        b.add('{}[0]'.format(ys), (2 if k else 1,) + x.shape[1:], x.dtype)


# kind -> (the public function, weights per layer and direction, whether
# it takes cell states, its activation argument)
N_STEP = {
    'lstm': ('n_step_lstm', 8, True, None),
    'bilstm': ('n_step_bilstm', 8, True, None),
    'gru': ('n_step_gru', 6, False, None),
    'bigru': ('n_step_bigru', 6, False, None),
    'rnn': ('n_step_rnn', 2, False, 'tanh'),
    'birnn': ('n_step_birnn', 2, False, 'relu'),
}


def _n_step_rnn(b):
    # F.n_step_lstm, _gru, _rnn or their bi-directional kinds over a
    # sequence whose first step is a drawn 2-D float value and whose later
    # steps are its first rows (lengths sorted down, as the functions take
    # them); 1 or 2 layers, dropout or none; new weights and states.
    kind = b.choice(tuple(N_STEP))
    name, weights, cells, activation = N_STEP[kind]
    dtype = b.choice(FLOATS)
    x = b.pick(lambda v: v.dtype == dtype and len(v.shape) == 2
               and v.shape[0] >= 1, shape=(2, 3), dtype=dtype, kind='var')
    batch, in_size = x.shape
    layers, units = b.choice((1, 2)), b.choice((2, 1))
    directions = 2 if kind.startswith('bi') else 1
    steps = [batch] + [b.integer(1, batch) for _ in range(b.integer(0, 2))]
    steps = sorted(steps, reverse=True)
    xs = b.name('xs')
    b.emit('{} = [{}]'.format(xs, ', '.join(
        x.name if n == batch else '{}[:{}]'.format(x.name, n)
        for n in steps)))

    def variable(shape):
        return 'Variable(arr({!r}, {!r}))'.format(shape, dtype)

    ws, bs = b.name('ws'), b.name('bs')
    w_rows, b_rows = [], []
    for layer in range(layers):
        inputs = in_size if layer == 0 else units * directions
        for _ in range(directions):
            w_rows.append('[{}]'.format(', '.join(
                variable((units, inputs if j < weights // 2 else units))
                for j in range(weights))))
            b_rows.append('[{}]'.format(', '.join(
                variable((units,)) for _ in range(weights))))
    b.emit('{} = [{}]'.format(ws, ', '.join(w_rows)))
    b.emit('{} = [{}]'.format(bs, ', '.join(b_rows)))
    state = (layers * directions, batch, units)
    args = [str(layers), repr(b.choice((0.0, 0.5))),
            b.add(variable(state), state, dtype).name]
    if cells:
        args.append(b.add(variable(state), state, dtype).name)
    args += [ws, bs, xs]
    if activation is not None:
        args.append('activation={!r}'.format(activation))
    outputs = b.name('nstep')
    b.emit('{} = F.{}({})'.format(outputs, name, ', '.join(args)))
    b.add('{}[0]'.format(outputs), state, dtype)
    b.add('{}[-1][-1]'.format(outputs), (steps[-1], units * directions),
          dtype)


def _recurrent(b):
    # One draw of OPERATIONS for both: the other operations' draws stay.
    b.choice((_lstm, _n_step_rnn))(b)


def _dropout(b):
    x = b.pick_float()
    ratio = b.choice((0.5, 0.0, 0.99))
    b.add('F.dropout({}, {})'.format(x.name, ratio), x.shape, x.dtype)


def _batch_normalization(b):
    # F.batch_normalization (with running averages, updated in place, or
    # without), F.fixed_batch_normalization or L.BatchNormalization in
    # train or test mode, over the channels of an input of two or more
    # dimensions; parameters of the input's dtype or another, the axis
    # sometimes at its edges; sometimes a double backprop through it.
    x = b.pick_float(lambda v: len(v.shape) >= 2, shape=b.choice(
        ((4, 3), (2, 3, 2, 2), (1, 3), (2, 0))), dtype=b.choice(FLOATS))
    c = x.shape[1]
    dtype = b.choice((x.dtype,) + FLOATS)
    form = b.choice(('F', 'running', 'fixed', 'link'))
    axis = ', axis={}'.format(_axis(b, len(x.shape))) if b.integer(
        0, 3) == 3 else ''
    if form == 'link':
        link = b.name('link')
        b.emit('{} = L.BatchNormalization({}, dtype=numpy.{})'.format(
            link, c, dtype))
        y = b.name()
        b.emit("with chainer.using_config('train', {}):\n"
               "    {} = {}({})".format(b.flag(), y, link, x.name))
        y = Val(y, x.shape, x.dtype, 'var')
        b.vals.append(y)
    else:
        gamma, beta = [b.pick(lambda v: v.shape == (c,) and v.dtype == dtype,
                              shape=(c,), dtype=dtype) for _ in 'gb']
        args = [x.name, gamma.name, beta.name]
        eps = b.choice((2e-5, 1e-3, 0.0))
        if form == 'fixed':
            args += [b.pick(lambda v: v.shape == (c,) and v.dtype == dtype,
                            shape=(c,), dtype=dtype).name for _ in 'mv']
            call = 'F.fixed_batch_normalization({}, eps={!r}{})'
        else:
            if form == 'running':
                stats = b.choice((dtype,) + FLOATS)
                args += ['running_mean=' + b.input((c,), stats, 'nd').name,
                         'running_var=' + b.input((c,), stats, 'nd').name,
                         'decay={!r}'.format(b.choice((0.9, 0.0, 1.0)))]
            call = 'F.batch_normalization({}, eps={!r}{})'
        y = b.add(call.format(', '.join(args), eps, axis), x.shape, x.dtype)
    if x.kind == 'var' and b.flag():
        b.emit('chainer.grad([F.sum({} * {})], [{}], '
               'enable_double_backprop=True)'.format(y.name, y.name,
                                                     x.name))
    _then_backward(b, y)


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


# -- argument edges: NumPy scalars, floats and bools where Chainer expects an
# int or a bool; negative, zero, huge and out-of-range values ---------------

# Values that make stock (or the patch) ask for arrays of 2**31 elements or
# more: MemoryError or ValueError at once (the worker's address space is
# limited), never a slow allocation.
HUGE = (2 ** 31, 2 ** 63)
# How an int is written: plainly first, then as a NumPy integer, a float, a
# NumPy float, a bool or NumPy bool (0 and 1 only), a 0-d array.
_INT_FORMS = ('{}', 'numpy.int64({})', 'numpy.int32({})', 'float',
              'numpy.float64({})', 'bool', 'numpy.bool_({})',
              'numpy.array({})')
# Where a bool is expected.
BOOL_EDGES = ('False', 'True', 'numpy.bool_(True)', 'numpy.bool_(False)',
              '1', '0', 'numpy.int64(1)', '1.0', 'None', 'numpy.float64(0)')
# Where a float is expected (a slope, a ratio, a delta).
FLOAT_EDGES = ('0.2', 'numpy.float32(0.2)', 'numpy.float64(-1.0)', 'True',
               '1', 'numpy.int64(2)', 'numpy.float16(0.5)',
               'numpy.array(0.2)', '0', '-0.0', '1e39', "float('nan')",
               'numpy.bool_(False)')


def _int(b, value):
    """``value``, an int, written in a drawn form (where the form can hold
    it)."""
    form = b.choice(_INT_FORMS)
    if form == 'float':
        return repr(float(value))
    if 'bool' in form:
        if value not in (0, 1):
            return repr(value)
        return repr(bool(value)) if form == 'bool' else form.format(
            bool(value))
    bits = 32 if 'int32' in form else 64
    if 'int' in form and not -2 ** (bits - 1) <= value < 2 ** (bits - 1):
        return repr(value)
    return form.format(value)


def _bool(b):
    return b.choice(BOOL_EDGES)


def _value(text):
    """What an edge expression evaluates to (None when it raises)."""
    try:
        return eval(text, {'numpy': numpy})
    except Exception:
        return None


def _plain(text, low=0, high=64):
    """The int ``text`` stands for when it is a plain int in ``[low,
    high]``, else None."""
    v = _value(text)
    return v if type(v) is int and low <= v <= high else None


def _conv_edge(b):
    # F.convolution_2d or F.deconvolution_2d with strides, pads, dilations,
    # groups, cover_all and outsize at their edges, kernels larger than the
    # image.
    # plain: plain float32/float64 Variables of a batch of two and every
    # geometry value a plain valid int, the case the compiled code takes.
    plain = b.flag()
    if plain:
        dtype = b.choice(('float32', 'float64'))
        shape = b.choice(((2, 2, 4, 3), (2, 2, 6, 5)))
        x = b.add('Variable(arr({!r}, {!r}))'.format(shape, dtype), shape,
                  dtype)
    else:
        x = b.pick_float(lambda v: len(v.shape) == 4, shape=b.choice(
            ((2, 2, 4, 3), (1, 1, 3, 3), (0, 2, 3, 3), (2, 2, 6, 5))),
            dtype=b.choice(FLOATS))
    n, c, h, w = x.shape
    deconv = b.flag()
    kh, kw = b.choice(((2, 2), (5, 5), (1, 4), (3, 1), (4, 6)))
    out_c = b.choice((2, 1))
    w_shape = (c, out_c, kh, kw) if deconv else (out_c, c, kh, kw)
    if plain:
        w_var = b.add('Variable(arr({!r}, {!r}))'.format(w_shape, x.dtype),
                      w_shape, x.dtype)
    else:
        w_var = b.input(w_shape, x.dtype, 'var')
    args = [x.name, w_var.name]
    if b.flag():
        args.append(b.input((out_c,), x.dtype, 'var').name)

    def geometry(name, values, valid):
        if plain:
            text = repr(b.choice(valid))
        elif b.flag():
            text = _int(b, b.choice(values))
        else:
            text = '({}, {})'.format(_int(b, b.choice(values)),
                                     _int(b, b.choice(values)))
        args.append('{}={}'.format(name, text))
        return text

    stride = geometry('stride', (1, 2, 0, -1) + HUGE, (1, 2))
    pad = geometry('pad', (0, 1, -1) + HUGE, (0, 1))
    dilate = geometry('dilate', (1, 2, 0, -1, 2 ** 31), (1, 2))
    if not plain and b.flag():
        args.append('groups={}'.format(_int(b, b.choice((1, 2, 0, -1)))))
    s, p, d = (_plain(stride, 1), _plain(pad), _plain(dilate, 1))
    known = None not in (s, p, d) and 'groups' not in args[-1]
    if deconv:
        right = [_conv_outsize(size, k, s, p, d, deconv=True)
                 for size, k in ((h, kh), (w, kw))] if known else [3, 3]
        outsize = b.choice((None, 'right', (1, 1), (0, 0), 'off', 'huge',
                            (-1, -1)))
        if outsize == 'right':
            outsize = tuple(right)
        elif outsize == 'off':
            outsize = (right[0] + 1, right[1])
        elif outsize == 'huge':
            outsize = (2 ** 31, 2 ** 31)
        if outsize is not None:
            args.append('outsize=({}, {})'.format(_int(b, outsize[0]),
                                                  _int(b, outsize[1])))
            known = known and tuple(outsize) == tuple(right)
        out = right
        f = 'deconvolution_2d'
    else:
        cover_all = _bool(b)
        args.append('cover_all={}'.format(cover_all))
        cover = _value(cover_all)
        out = [_conv_outsize(size, k, s, p, d, cover is True)
               for size, k in ((h, kh), (w, kw))] if known else [0]
        known = known and type(cover) is bool
        f = 'convolution_2d'
    shape = (n, out_c) + tuple(out) if known and min(out) > 0 else None
    _then_backward(b, b.add('F.{}({})'.format(f, ', '.join(args)), shape,
                            x.dtype))


def _pooling(b, kind=None):
    # F.max_pooling_2d (cover_all, return_indices) or F.average_pooling_2d
    # on a small image; its geometry sometimes at its edges (a stride or
    # kernel below 1, a negative pad, a kernel larger than the image, a
    # NumPy int or a float), which stock rejects or takes as its slices do;
    # sometimes double backprop through the gradient nodes.
    backward, double = b.flag(), b.flag()
    x = b.pick_float(lambda v: len(v.shape) == 4 and (
        v.kind == 'var' or not double), shape=b.choice(
        ((2, 2, 5, 4), (1, 1, 3, 3), (2, 3, 6, 6))),
        kind='var' if double else None)
    n, c, h, w = x.shape
    kind = kind or b.choice(('max', 'average'))
    edge = b.flag() and b.flag()

    def geometry(values, edges):
        value = b.choice(edges if edge else values)
        if type(value) is tuple:
            return '({}, {})'.format(*[_int(b, v) if edge else repr(v)
                                       for v in value]), value
        return (_int(b, value) if edge else repr(value)), (value, value)

    ktext, k = geometry((2, 3, (2, 3), 1), (0, -1, 7, (3, 0)) + HUGE)
    args = [x.name, ktext]
    s = k
    if b.flag():
        stext, s = geometry((1, 2, (1, 3)), (0, -1, (2, -1)) + HUGE)
        args.append('stride=' + stext)
    ptext, p = geometry((0, 1, (1, 0)), (-1, (0, -2), 2 ** 31))
    args.append('pad=' + ptext)
    cover_all = False
    indices = False
    if kind == 'max':
        cover_all = b.flag()
        args.append('cover_all={}'.format(cover_all))
        indices = b.flag()
        if indices:
            args.append('return_indices=True')
    # Edge geometry: the shape is stock's to say (or its error).
    out = [_conv_outsize(size, kk, ss, pp, 1, cover_all)
           for size, kk, ss, pp in zip((h, w), k, s, p)] if not edge else [0]
    shape = (n, c) + tuple(out) if min(out) > 0 else None
    call = 'F.{}_pooling_2d({})'.format(kind, ', '.join(args))
    y = b.add(call + ('[0]' if indices else ''), shape, x.dtype)
    if shape is None:
        return
    if not double:
        # Drawn first: the slot's bytes may run out before here.
        _then_backward(b, y, always=backward)
    else:
        # Double backprop: the gradient's backward applies the gradient
        # nodes' own backward nodes.
        g = b.name('g')
        b.emit('{} = chainer.grad([F.sum({} * {})], [{}], '
               'enable_double_backprop=True)'.format(g, y.name, y.name,
                                                     x.name))
        b.emit('F.sum({}[0] * {}[0]).backward()'.format(g, g))


def _then_backward(b, y, always=False):
    # Sometimes a backward through the node just applied.
    if (y.shape is not None and y.kind == 'var' and y.float
            and (always or b.flag())):
        b.emit('F.sum({}).backward()'.format(y.name))


def _axis(b, nd, tuples=True):
    # An axis in range or out of it, in a drawn form; or a tuple or list
    # of axes (repeated ones among them).
    kind = b.choice(('one', 'none', 'tuple', 'list')) if tuples else 'one'
    if kind == 'none':
        return 'None'
    one = b.integer(-nd - 1, nd)
    if kind == 'one':
        return _int(b, one)
    two = (_int(b, one), _int(b, b.integer(-nd, max(nd - 1, 0))))
    return ('({}, {})' if kind == 'tuple' else '[{}, {}]').format(*two)


def _reduction_edge(b):
    # The reductions' axis and keepdims at their edges.
    x = b.pick_float()
    nd = len(x.shape)
    f = b.choice(('sum', 'mean', 'max', 'min', 'average', 'logsumexp',
                  'softmax', 'log_softmax', 'argmax'))
    args = [x.name, 'axis={}'.format(_axis(b, nd, f not in (
        'softmax', 'log_softmax')))]
    if f in ('sum', 'mean', 'max', 'min', 'average') and b.flag():
        args.append('keepdims={}'.format(_bool(b)))
    axis, keepdims = _value(args[1][5:]), _value(
        args[2][9:]) if len(args) > 2 else False
    shape = None
    if axis is None or type(axis) is int or type(axis) is tuple and all(
            type(a) is int for a in axis):
        if keepdims in (True, False) and type(keepdims) is bool:
            try:
                shape = numpy.empty(x.shape).sum(
                    axis=axis, keepdims=keepdims).shape
                if f in ('softmax', 'log_softmax'):
                    shape = x.shape
            except Exception:
                shape = None
    y = b.add('F.{}({})'.format(f, ', '.join(args)), shape,
              'int32' if f == 'argmax' else x.dtype)
    _then_backward(b, y)


def _array_edge(b):
    # The array functions' axes, sections and shapes at their edges.
    x = b.pick_float(lambda v: len(v.shape) >= 1, shape=(2, 3))
    nd = len(x.shape)
    f = b.choice(('concat', 'stack', 'split_axis', 'expand_dims',
                  'swapaxes', 'squeeze', 'reshape', 'broadcast_to',
                  'transpose', 'separate'))
    if f in ('concat', 'stack'):
        y = b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
                   shape=x.shape, dtype=x.dtype)
        call = 'F.{}(({}, {}), axis={})'.format(f, x.name, y.name,
                                               _axis(b, nd + 1, False))
    elif f == 'split_axis':
        sections = b.choice(('2', 'numpy.int64(2)', '[1]', '[numpy.int64(1)]',
                             'numpy.array([1])', '2.0', '0', '-1',
                             '[3, 1]', '()', '[]', 'True', '2**63'))
        call = 'F.split_axis({}, {}, {}, force_tuple={})'.format(
            x.name, sections, _axis(b, nd, False), _bool(b))
        t = b.add(call, None, x.dtype)
        b.add('{}[0]'.format(t.name), None, x.dtype)
        return
    elif f in ('expand_dims', 'separate'):
        call = 'F.{}({}, {})'.format(f, x.name, _axis(b, nd + 1, False))
        if f == 'separate':
            call += '[0]'
    elif f == 'swapaxes':
        call = 'F.swapaxes({}, {}, {})'.format(x.name, _axis(b, nd, False),
                                               _axis(b, nd, False))
    elif f == 'squeeze':
        call = 'F.squeeze({}, axis={})'.format(x.name, _axis(b, nd))
    elif f == 'transpose':
        axes = b.choice(('reversed', 'repeated', 'list', 'short'))
        order = list(reversed(range(nd)))
        if axes == 'repeated':
            order[-1] = order[0]
        elif axes == 'short':
            order = order[:-1]
        text = ', '.join(_int(b, a) for a in order)
        call = 'F.transpose({}, {})'.format(
            x.name, '[{}]'.format(text) if axes == 'list' else
            '({},)'.format(text) if text else '()')
    else:
        size = int(numpy.prod(x.shape))
        target = b.choice(('flat', 'minus', 'minus2', 'zero', 'array',
                           'extra'))
        dims = {'flat': (size,), 'minus': (-1,) + x.shape[1:],
                'minus2': (-1, -1), 'zero': (0,) + x.shape,
                'array': x.shape, 'extra': (2,) + x.shape}[target]
        text = ', '.join(_int(b, d) for d in dims)
        text = 'numpy.array([{}])'.format(text) if target == 'array' \
            else '({},)'.format(text)
        call = 'F.{}({}, {})'.format(f, x.name, text)
    _then_backward(b, b.add(call, None, x.dtype))


# Indices in NumPy scalars and edge forms.
ITEM_EDGES = ('numpy.int64(0)', 'numpy.int32(-1)', 'numpy.bool_(True)',
              'True', 'numpy.array(0)', '1.0', '2**63', '-2**63',
              '[numpy.int64(0)]', '..., numpy.int64(-1)',
              'numpy.int64(0), None', 'slice(numpy.int64(1), None)',
              'slice(None, None, numpy.int64(-1))', 'slice(None, None, 0)',
              '(numpy.intp(0),)', 'numpy.array([0, -1])', '()', '9',
              'numpy.array([], dtype=numpy.intp)', 'numpy.uint8(1)')


def _item_edge(b):
    x = b.pick(lambda v: True)
    index = b.choice(ITEM_EDGES)
    if b.flag():
        expr = 'F.get_item({}, {})'.format(
            x.name, '({},)'.format(index) if ',' in index and not
            index.startswith(('(', '[', 'slice', 'numpy.array')) else index)
        kind = 'var'
    else:
        expr, kind = '{}[{}]'.format(x.name, index), x.kind
    _then_backward(b, b.add(expr, _index_shape(x.shape, index), x.dtype,
                            kind))


def _label_edge(b):
    # Ignore labels, reduce, normalize and cache_score in NumPy scalars and
    # edge values.
    ignore = _int(b, b.choice((-1, 0, 2, 2 ** 63, -2 ** 63)))
    if b.flag():
        vocab = b.choice((3, 1))
        w = b.input((vocab, 2), b.choice(FLOATS), 'var')
        ids = b.add('ints({!r}, {}, ignore=True)'.format((3,), vocab),
                    (3,), 'int32', 'nd')
        y = b.add('F.embed_id({}, {}, ignore_label={})'.format(
            ids.name, w.name, ignore), None, w.dtype)
        if b.flag():
            b.emit('F.sum({}).backward()'.format(y.name))
        return
    x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
    n, c = x.shape
    t = b.add('ints({!r}, {}, ignore=True)'.format((n,), c), (n,),
              'int32', 'nd')
    args = [x.name, t.name, 'ignore_label={}'.format(ignore)]
    for key in ('normalize', 'cache_score', 'enable_double_backprop'):
        if b.flag():
            args.append('{}={}'.format(key, _bool(b)))
    reduce = b.choice(("'mean'", "'no'", "'sum'", "numpy.str_('no')"))
    args.append('reduce={}'.format(reduce))
    y = b.add('F.softmax_cross_entropy({})'.format(', '.join(args)), None,
              x.dtype)
    if b.flag():
        b.emit('F.sum({}).backward()'.format(y.name))


def _scalar_edge(b):
    # Float and bool arguments in other types: leaky_relu's slope,
    # dropout's ratio, huber_loss's delta, linear's n_batch_axes, matmul's
    # transa and transb.
    x = b.pick_float()
    f = b.choice(('leaky_relu', 'dropout', 'huber_loss', 'linear',
                  'matmul'))
    if f == 'leaky_relu':
        call = 'F.leaky_relu({}, slope={})'.format(x.name,
                                                   b.choice(FLOAT_EDGES))
        shape = x.shape
    elif f == 'dropout':
        ratio = b.choice(('0.5', 'numpy.float32(0.5)', 'numpy.float64(0.0)',
                          '0', 'True', '1.0', '-0.1', 'numpy.array(0.5)',
                          "float('nan')", 'numpy.int64(0)'))
        call, shape = 'F.dropout({}, {})'.format(x.name, ratio), x.shape
    elif f == 'huber_loss':
        y = b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
                   shape=x.shape, dtype=x.dtype)
        call = "F.huber_loss({}, {}, {}, reduce='no')".format(
            x.name, y.name, b.choice(FLOAT_EDGES))
        shape = x.shape
    elif f == 'linear':
        x = b.pick_float(lambda v: len(v.shape) >= 2, shape=(2, 3))
        axes = b.choice((1, 2, 0, -1, 2 ** 63))
        units = int(numpy.prod(x.shape[axes:])) if 0 < axes < len(
            x.shape) else x.shape[-1]
        w = b.input((2, units), x.dtype, 'var')
        call = 'F.linear({}, {}, n_batch_axes={})'.format(
            x.name, w.name, _int(b, axes))
        shape = None
    else:
        x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3))
        y = b.pick(lambda v: v.dtype == x.dtype and len(v.shape) == 2,
                   shape=(2, 3), dtype=x.dtype)
        call = 'F.matmul({}, {}, transa={}, transb={})'.format(
            x.name, y.name, _bool(b), _bool(b))
        shape = None
    _then_backward(b, b.add(call, shape, x.dtype))


EDGE_OPERATIONS = (_conv_edge, _reduction_edge, _array_edge, _item_edge,
                   _label_edge, _scalar_edge)


# -- methods replaced after enable() and restored --------------------------

_RELU = 'chainer.functions.activation.relu.ReLU'
_ADD = 'chainer.functions.math.basic_math.Add'
_LINEAR = 'chainer.functions.connection.linear.LinearFunction'
_SUM = 'chainer.functions.math.sum.Sum'
_CONV = 'chainer.functions.connection.convolution_2d'
_DECONV = 'chainer.functions.connection.deconvolution_2d'
_BN = 'chainer.functions.normalization.batch_normalization'
_POOLING = 'chainer.functions.pooling.'
_NSTEP = 'chainer.functions.rnn.n_step_'
# What a program replaces (in a patched run, after enable()): the owner as
# the program names it, the method, and the statement that then reaches it.
# runtime.restoring puts back whatever a program leaves replaced.
REPLACED = (
    ('chainer.FunctionNode', 'apply', 'relu'),
    (_RELU, 'apply', 'relu'), (_RELU, 'forward', 'relu'),
    (_RELU, 'forward_cpu', 'relu'), (_RELU, 'backward', 'relu'),
    (_ADD, 'apply', 'add'), (_ADD, 'forward', 'add'),
    (_ADD, 'backward', 'add'),
    (_LINEAR, 'apply', 'linear'), (_LINEAR, 'forward', 'linear'),
    (_LINEAR, 'backward', 'linear'),
    (_SUM, 'forward', 'sum'), (_SUM, 'backward', 'sum'),
    ('chainer.Link', '__call__', 'link'), ('L.Linear', 'forward', 'link'),
    ('L.Linear', '__call__', 'link'),
    ('chainer.Variable', 'backward', 'relu'),
    # What the convolutions' compiled backwards stand for.
    (_CONV + '.Convolution2DFunction', 'backward', 'conv'),
    (_CONV + '.Convolution2DGradW', 'forward_cpu', 'conv'),
    (_DECONV + '.Deconvolution2DFunction', 'forward_cpu', 'conv'),
    (_DECONV + '.Deconvolution2DFunction', '_set_cover_all', 'conv'),
    (_BN + '.BatchNormalization', 'forward', 'bn'),
    (_BN + '.BatchNormalization', 'backward', 'bn'),
    (_BN + '.GeneralBatchNormalizationImpl', 'forward', 'bn'),
    (_BN + '.FixedBatchNormalization', 'forward', 'bn'),
    (_POOLING + 'max_pooling_nd.MaxPoolingND', 'forward_cpu', 'max_pooling'),
    (_POOLING + 'max_pooling_nd.MaxPoolingNDGrad', 'forward_cpu',
     'max_pooling'),
    (_POOLING + 'average_pooling_2d.AveragePooling2D', 'backward',
     'average_pooling'),
    # What the compiled NStep RNN loop stands for.
    (_NSTEP + 'rnn', '_one_directional_loop', 'n_step'),
    (_NSTEP + 'rnn', '_dropout_sequence', 'n_step'),
    (_NSTEP + 'lstm', '_lstm', 'n_step'),
    (_NSTEP + 'lstm', '_stack_weight', 'n_step'),
    (_NSTEP + 'gru', '_gru', 'n_step'),
)
# How a replacement is written: unittest.mock.patch.object with a counting
# replacement, or autospec'd with the original as side effect (its
# call_count compared), or assigned and assigned back.
REPLACE_FORMS = ('mock', 'autospec', 'assign')
# The methods the patch replaces with compiled functions (apply as
# inherited, Link.__call__, the update loop and kernels).
_PATCHED_METHODS = ('apply', '__call__', 'update', 'update_core_cpu',
                    'add', 'report')
# Methods of these names that are compiled on these classes alone.
_COMPILED_METHODS = frozenset([('L.Linear', 'forward'),
                               ('chainer.Link', 'cleargrads')])


def _use_binary(symbol):
    def op(b):
        x = b.pick_float()
        y = b.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape,
                   shape=x.shape, dtype=x.dtype)
        b.add('{} {} {}'.format(x.name, symbol, y.name), x.shape, x.dtype,
              'var' if 'var' in (x.kind, y.kind) else 'nd')
    return op


def _use_conv(b):
    # F.convolution_2d or F.deconvolution_2d of float Variables, with a
    # geometry the compiled code takes.
    dtype = b.choice(FLOATS)
    x = b.add('Variable(arr((2, 2, 4, 3), {!r}))'.format(dtype),
              (2, 2, 4, 3), dtype)
    deconv = b.flag()
    w = b.add('Variable(arr((2, 2, 2, 2), {!r}))'.format(dtype),
              (2, 2, 2, 2), dtype)
    stride, pad = b.choice((1, 2)), b.choice((0, 1))
    out = [_conv_outsize(size, 2, stride, pad, 1, deconv=deconv)
           for size in (4, 3)]
    b.add('F.{}({}, {}, stride={}, pad={})'.format(
        'deconvolution_2d' if deconv else 'convolution_2d', x.name, w.name,
        stride, pad), (2, 2) + tuple(out), dtype)


_USES = {'relu': _unary('F.relu({x})'), 'add': _use_binary('+'),
         'linear': _linear, 'sum': _sum, 'link': _linear,
         'conv': _use_conv, 'bn': _batch_normalization,
         'max_pooling': lambda b: _pooling(b, 'max'),
         'average_pooling': lambda b: _pooling(b, 'average'),
         'n_step': _n_step_rnn}
# The nodes of the operations a VAE runs: a quotient, a log, a where and
# Bernoulli's log-probability, with their methods replaced.
REPLACED += (
    ('chainer.functions.math.basic_math.Div', 'forward', 'div'),
    ('chainer.functions.math.basic_math.Div', 'backward', 'div'),
    ('chainer.functions.math.exponential.Log', 'forward_cpu', 'log'),
    ('chainer.functions.array.where.Where', 'forward', 'where'),
    ('chainer.distributions.bernoulli.BernoulliLogProb', 'forward',
     'bernoulli'),
)
# What a training loop's reports and summaries run (machinery/reporter).
REPLACED += (
    ('chainer.Reporter', 'report', 'report'),
    ('chainer.reporter.Summary', 'add', 'report'),
    ('chainer.reporter.DictSummary', 'add', 'report'),
)
_USES.update({'div': _use_binary('/'),
              'log': _unary('F.log({x})'), 'where': _where,
              'bernoulli': _bernoulli})
# The nodes of NStepLSTM's batches and of its loss.
_ARRAY = 'chainer.functions.array.'
_SCE = 'chainer.functions.loss.softmax_cross_entropy.'
REPLACED += (
    (_ARRAY + 'permutate.Permutate', 'forward', 'sequences'),
    (_ARRAY + 'permutate.Permutate', 'backward', 'sequences'),
    (_ARRAY + 'transpose_sequence.TransposeSequence', 'forward',
     'sequences'),
    (_ARRAY + 'transpose_sequence.TransposeSequence', 'backward',
     'sequences'),
    (_SCE + '_SoftmaxCrossEntropyGrad_NoDoubleBackprop', 'forward_cpu',
     'softmax_cross_entropy'),
)
_USES.update({'sequences': _sequences,
              'softmax_cross_entropy': _softmax_cross_entropy})
# The elementwise roots, squares and absolute values, with their methods
# replaced.
REPLACED += (
    ('chainer.functions.math.sqrt.Sqrt', 'forward', 'sqrt'),
    ('chainer.functions.math.sqrt.Sqrt', 'backward', 'sqrt'),
    ('chainer.functions.math.square.Square', 'forward', 'square'),
    ('chainer.functions.math.square.Square', 'backward', 'square'),
    ('chainer.functions.math.basic_math.Absolute', 'forward', 'absolute'),
    ('chainer.functions.math.basic_math.Absolute', 'backward', 'absolute'),
)
_USES.update({'sqrt': _unary('F.sqrt({x})'),
              'square': _unary('F.square({x})'),
              'absolute': _unary('F.absolute({x})')})
# The training machinery's compiled methods (machinery.py's entries).
REPLACED += machinery.REPLACED
_USES.update(machinery.USES)


def _replacement(b, owner, method, modes=('count',)):
    """Emits the statements that replace ``owner.method`` in a drawn form;
    returns the statements that restore it."""
    label = '{}.{}'.format(owner.rsplit('.', 1)[-1], method)
    forms = REPLACE_FORMS
    if method in _PATCHED_METHODS or owner == 'chainer.Variable' or \
            (owner, method) in machinery.COMPILED or \
            (owner, method) in _COMPILED_METHODS:
        # autospec makes a MagicMock, not a function, of a compiled
        # callable: not a method (by design, README section 6).
        forms = tuple(f for f in forms if f != 'autospec')
    form = b.choice(forms)
    mode = b.choice(modes)
    new = 'counting({}.{}, {!r}, EVENTS, {!r})'.format(owner, method, label,
                                                      mode)
    # The original and the mock are named with '_': not compared (a
    # patched run's are compiled functions).
    p = b.name('_p')
    if form == 'assign':
        b.emit('{} = {}.{}'.format(p, owner, method))
        b.emit('{}.{} = counting({}, {!r}, EVENTS, {!r})'.format(
            owner, method, p, label, mode))
        return ['{}.{} = {}'.format(owner, method, p)]
    if form == 'autospec':
        m = b.name('_m')
        b.emit('{} = mock.patch.object({}, {!r}, autospec=True, '
               'side_effect={}.{})'.format(p, owner, method, owner, method))
        b.emit('{} = {}.start()'.format(m, p))
        return ['{} = {}.call_count'.format(b.name('calls'), m),
                '{}.stop()'.format(p)]
    b.emit('{} = mock.patch.object({}, {!r}, {})'.format(p, owner, method,
                                                        new))
    b.emit('{}.start()'.format(p))
    return ['{}.stop()'.format(p)]


def _replace(b, table=None):
    # A method replaced, a statement that reaches it (and sometimes a
    # backward), the restore after a few more operations.
    owner, method, use = b.choice(table or REPLACED)
    changing = method in ('forward', 'forward_cpu', 'backward', '__call__')
    restore = _replacement(b, owner, method, ('count', 'change')
                           if changing and owner != 'chainer.Variable'
                           else ('count',))
    before = len(b.vals)
    _USES[use](b)
    if len(b.vals) > before:
        _then_backward(b, b.vals[-1])
    b.pending.append([b.integer(0, 3), restore])


# -- recursive links under link and function hooks --------------------------

def _recursive(b):
    # A chain calling itself (or its child, or nested chains) n times,
    # under a local link hook and global link and function hooks, with the
    # recursion limit set (high enough for both) above the current depth:
    # the hooks' calls are compared.
    x = b.pick_float(lambda v: len(v.shape) == 2, shape=(2, 3),
                     dtype=b.choice(FLOATS))
    how = b.choice(('self', 'child', 'nested'))
    n = b.choice((1, 10, 100, 300, 0, 200))
    frames = b.choice((None, 1000, 400, 150, 50, 600))
    rec = b.add('Recursive({}, {!r}, {!r})'.format(x.shape[1], how,
                                                  x.dtype), None, 'object',
                'nd')
    context = []
    if frames is not None or n > 50:
        # Above what either reaches: the compiled calls take fewer frames
        # than stock's Python, so where a limit is hit differs by design
        # (README, "Known differences"); what is compared is the hooks'
        # calls around a deep recursion.
        frames = max(frames or 0, 12 * n + 100)
        context.append('recursion_limit({}, EVENTS)'.format(frames))
    if b.flag():
        context.append("FunctionRecorder(EVENTS, 'outer')")
    if b.flag():
        b.emit("{}.add_hook(LinkRecorder(EVENTS), name='local')".format(
            rec.name))
    if b.flag():
        context.append("LinkRecorder(EVENTS, 'outer')")
    if b.config.get('debug'):
        # Well within the depth both reach in debug mode, where the depth
        # differs by design (README, "Known differences").
        n = min(n, 50)
        if context and context[0].startswith('recursion_limit'):
            context.pop(0)
    call = '{}({}, {})'.format(rec.name, x.name, n)
    if not context:
        _then_backward(b, b.add(call, x.shape, x.dtype))
        return
    y = b.name()
    b.emit('with {}:\n    {} = {}'.format(', '.join(context), y, call))
    b.vals.append(Val(y, x.shape, x.dtype, 'var'))


# Operations drawn for each category of the grammar the coverage check
# follows (coverage.reach).
CATEGORY_OPERATIONS = {
    'argument-edges': EDGE_OPERATIONS,
    'replaced-methods': (_replace,),
    'recursive-links': (_recursive,),
    'convolutions': (_convolution, _conv_edge),
    'n-step-rnns': (_n_step_rnn,),
    'machinery': machinery.ENTRIES,
    'replaced-machinery': (lambda b: _replace(b, machinery.REPLACED),),
}


def _report(b):
    # A reduction of a picked float reported as a Classifier reports its
    # loss (a Variable, its array, a NumPy or Python scalar, a weighted
    # pair) and summed as LogReport sums the observations. Drawn through
    # REPLACED (one of the methods replaced): one more entry in OPERATIONS
    # moves the coverage tests' fixed draws off functions they must reach.
    x = b.pick_float()
    value = b.choice(('F.sum({x})', 'F.sum({x}).array',
                      'F.sum({x}).array[()]', 'float(F.sum({x}).array)',
                      '(F.sum({x}).array, {w})')).format(
        x=x.name, w=b.choice(('2', '0.5', 'numpy.float32(3)',
                              'numpy.array(1.5)')))
    obs, summary = b.name('_observation'), b.name('_summary')
    b.emit('{} = {{}}'.format(obs))
    b.emit('with chainer.Reporter().scope({}):'.format(obs))
    b.emit("    chainer.report({{'v': {}, 'w': {}}})".format(value, value))
    b.emit('{} = chainer.reporter.DictSummary()'.format(summary))
    for _ in range(b.integer(1, 3)):
        b.emit('{}.add({})'.format(summary, obs))
    b.add("{}.compute_mean()['v']".format(summary), None, 'object', 'nd')


_USES['report'] = _report


OPERATIONS = (
    _arith, _arith_scalar, _unary('F.relu({x})'), _unary('F.sigmoid({x})'),
    _unary('F.tanh({x})'), _unary('F.exp({x})'), _unary('-{x}'),
    _leaky_relu, _sum, _linear, _matmul, _reshape, _transpose,
    _broadcast_to, _get_item, _concat, _split, _softmax_cross_entropy,
    _squared_error, _embed_id, _recurrent, _dropout, _f_add, _apply,
    _as_variable, _softmax, _misc,
    _unary('F.log({x})'), _unary('F.sqrt({x})'), _unary('F.square({x})'),
    _unary('F.absolute({x})'), _softplus, _clip, _extremum,
    _pass_through,
    _unary('F.elu({x})'), _unary('F.identity({x})'),
    _broadcast_many, _logsumexp, _select_item, _huber_loss,
    _constant_arith, _shape_op, _output_layer, _arg_extreme, _convolution,
    _linear_nd, _where, _bernoulli, _batch_normalization, _accuracy,
) + EDGE_OPERATIONS + (_replace, _recursive, _pooling, _sequences,
                       machinery.machinery)
# Operations that reach a category's difference, drawn unless skipped.
FEATURE_OPERATIONS = {
    'node-arity': _node_arity,
    'callable-metadata': _callable_metadata,
}


# -- backward passes --------------------------------------------------

def _target(b):
    return b.pick_float(lambda v: v.kind == 'var', kind='var')


def _loss_target(b):
    # Often the newest float Variable, so that the pass goes through the
    # nodes the operations just applied; else any.
    newest = [v for v in b.vals if v.kind == 'var' and v.float]
    if newest and b.flag():
        return newest[-1]
    return _target(b)


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
    t = _loss_target(b)
    how = b.choice(('sum', 'grad', 'direct'))
    if how == 'sum':
        t = b.add('F.sum({})'.format(t.name), (), t.dtype)
    elif how == 'grad':
        b.emit('{}.grad = {}'.format(t.name, b.array(t.shape, t.dtype)))
    b.emit('{}.backward({})'.format(t.name, _backward_options(b)))


def _grad(b):
    t = _loss_target(b)
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
    restore = _replaced_update(b) + _replaced_cleargrad(b)
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
                what = b.choice(('grad = None', 'update_rule.enabled = False',
                                 'grad'))
                if what == 'grad':
                    # A gradient of any layout set by the user, which the
                    # update kernels would read as C floats.
                    what = 'grad = ' + b.array((n_out,), dtype)
                b.emit('model.p.' + what)
            update = 'opt.update()'
        b.emit('with quiet():\n    ' + update if quiet else update)
    for line in restore:
        b.emit(line)


# The update methods a program replaces after setup: on the rule's class
# (restored after the updates) or on the rule or optimizer itself.
UPDATE_METHODS = ('update_core_cpu', 'update_core', 'update')


def _replaced_cleargrad(b):
    # A method of the gradients' clearing replaced (restored after the
    # updates): Link.cleargrads itself, or what it calls per parameter.
    owner, method = b.choice(((None, None), ('chainer.Link', 'cleargrads'),
                              ('chainer.Parameter', 'cleargrad'),
                              ('chainer.Variable', 'cleargrad')))
    if owner is None:
        return []
    return _replacement(b, owner, method, ('count',))


def _replaced_update(b):
    where = b.choice((None, 'class', 'rule', 'optimizer'))
    if where is None:
        return []
    mode = b.choice(('count', 'skip'))
    if where == 'optimizer':
        b.emit("opt.update = counting(opt.update, 'opt.update', EVENTS, "
               "{!r})".format(mode))
        return []
    method = b.choice(UPDATE_METHODS)
    if where == 'rule':
        for p in ('model.p', 'model.l.W'):
            b.emit("{0}.update_rule.{1} = counting({0}.update_rule.{1}, "
                   "'rule.{1}', EVENTS, {2!r})".format(p, method, mode))
        return []
    b.emit('rule = type(model.p.update_rule)')
    return _replacement(b, 'rule', method, (mode,))


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
    hooks = ('recorder',)
    if 'hook-added-during-forward' not in b.skip:
        hooks += ('adding',)
    # Half of the programs without a hook: where one is registered,
    # backward passes run stock's code.
    config['function_hook'] = None if b.flag() else b.choice(hooks)
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


def _restores(b, all_=False):
    # The restores whose wait is over (all of them at the end), the latest
    # replacement's first.
    due = [p for p in b.pending if all_ or p[0] <= 0]
    for p in reversed(due):
        b.pending.remove(p)
        for line in p[1]:
            b.emit(line)
    for p in b.pending:
        p[0] -= 1


def _operation(b, table):
    # Drawn first (a slot's bytes may run out before its end): whether a
    # backward pass goes through the node the operation applies, so that
    # every compiled backward is reached.
    backward = b.flag()
    count = len(b.vals)
    b.choice(table)(b)
    if backward and len(b.vals) > count:
        _then_backward(b, b.vals[-1], always=True)


def build(data, skip=frozenset(), operations=None):
    """The Program that ``data`` (:data:`SIZE` bytes, or fewer: the rest
    read as zeros) stands for; its operations drawn from ``operations``
    (all of them when None)."""
    b = Builder(skip)
    b.read(data[:HEADER])
    config = b.config = _config(b)
    counts = {'input': b.integer(1, 3), 'operation': b.integer(0, 6),
              'tail': b.integer(0, 2), 'optimizer': b.integer(0, 2) // 2}
    table = OPERATIONS + tuple(
        op for category, op in FEATURE_OPERATIONS.items()
        if category not in skip) if operations is None else operations
    if operations is not None:
        counts['operation'] = max(counts['operation'], 1)
    parts = {'input': lambda b: b.input(),
             'operation': lambda b: _operation(b, table),
             'tail': lambda b: b.choice(TAILS)(b),
             'optimizer': _optimizer}
    slots = _slots(data)
    for part, _, _ in SLOTS:
        for chunk in slots[part][:counts[part]]:
            b.read(chunk)
            parts[part](b)
            if part == 'operation':
                _restores(b)
    _restores(b, all_=True)
    return Program('\n'.join(b.lines) + '\n', config)


def programs(skip=frozenset()):
    """A strategy of Programs; features of the categories in ``skip`` are
    not drawn."""
    return st.binary(min_size=SIZE, max_size=SIZE).map(
        lambda data: build(data, skip))
