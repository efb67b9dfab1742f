"""What a generated program may name: Chainer's modules, the array and model
helpers below, and the recording hooks.

A program runs as ``exec`` in a fresh copy of :func:`namespace`, once stock
and once patched, from the same seeds; everything here draws its numbers from
NumPy's global generator, which the runner seeds, so both runs see the same
values.
"""
import contextlib
import importlib
import math
import sys
from unittest import mock

import numpy

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import optimizer_hooks
from chainer import optimizers

from chainer_fastpath.testing.differential import misaligned

__all__ = ['F', 'L', 'chainer', 'numpy', 'optimizers', 'optimizer_hooks',
           'Variable', 'Parameter', 'MyVariable', 'MyParameter', 'arr',
           'ints', 'Model', 'FunctionRecorder', 'LinkRecorder',
           'AddingHook', 'record_optimizer', 'quiet',
           'ElementwiseConstant', 'mock', 'counting', 'Recursive',
           'recursion_limit', 'Reversed', 'MyTupleDataset',
           'PlainTupleDataset', 'reloaded', 'Stand', 'train', 'log_of',
           'linear', 'MySerialIterator']

Variable = chainer.Variable
Parameter = chainer.Parameter


class MyVariable(chainer.Variable):
    """A user's Variable subclass."""


class MyParameter(chainer.Parameter):
    """A user's Parameter subclass."""


# Values that reach the corners: signed zeros, infinities, NaNs of both
# signs, subnormals and numbers that overflow float16 when squared.
_SPECIAL = numpy.array([0.0, -0.0, 1.0, -1.0, numpy.inf, -numpy.inf,
                        numpy.nan, -numpy.nan, 1e-40, 300.0, -70000.0, 0.5])


def arr(shape, dtype='float32', layout='C', values='normal'):
    """A NumPy array of ``shape`` and ``dtype`` laid out as ``layout``: 'C',
    'F', 'last' (axis 1 last in memory, as a convolution's output),
    'strided' (every other element of a larger array), 'readonly',
    'misaligned' (data at an odd address) or 'swapped' (the other byte
    order); ``values`` 'normal' (uniform in [-1, 1)), 'special' (zeros,
    infinities, NaNs, subnormals, overflowing numbers) or 'big'."""
    dtype = numpy.dtype(dtype)
    size = math.prod(shape)
    if values == 'special':
        base = _SPECIAL[numpy.random.randint(0, len(_SPECIAL), size)]
    elif values == 'big':
        base = numpy.random.uniform(-1e4, 1e4, size)
    else:
        base = numpy.random.uniform(-1, 1, size)
    if dtype.kind in 'iub':
        # Small integers: NaNs and infinities read as zero.
        base = numpy.clip(numpy.where(numpy.isfinite(base), base * 3, 0),
                          0 if dtype.kind == 'u' else -9, 9)
    with numpy.errstate(all='ignore'):
        a = base.astype(dtype).reshape(shape)
    if layout == 'F':
        return numpy.asfortranarray(a)
    if layout == 'last' and a.ndim > 2:
        order = (0,) + tuple(range(2, a.ndim)) + (1,)
        return numpy.ascontiguousarray(a.transpose(order)).transpose(
            numpy.argsort(order))
    if layout == 'strided':
        wide = numpy.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype) \
            if a.ndim else numpy.zeros(2, dtype)
        if a.ndim:
            wide[..., ::2] = a
            return wide[..., ::2]
        wide[0] = a
        return wide[:1].reshape(())
    if layout == 'readonly':
        a.flags.writeable = False
        return a
    if layout == 'misaligned':
        return misaligned(a)
    if layout == 'swapped':
        return a.astype(dtype.newbyteorder())
    return a


def ints(shape, high, dtype='int32', ignore=False):
    """Labels in ``[0, high)`` (and -1, the ignore label, when ``ignore``)."""
    low = -1 if ignore else 0
    return numpy.random.randint(low, max(high, 1), shape).astype(dtype)


class Model(chainer.Chain):
    """A Linear link times a parameter of class ``pclass``, ``dtype``
    throughout; ``n_in`` None leaves the Linear's weight to be initialized on
    the first call."""

    def __init__(self, n_in, n_out, dtype='float32', pclass=Parameter,
                 nobias=False):
        super().__init__()
        with chainer.using_config('dtype', numpy.dtype(dtype)):
            with self.init_scope():
                self.l = L.Linear(n_in, n_out, nobias=nobias)
                self.p = pclass(arr((n_out,), dtype))

    def forward(self, x):
        return self.l(x) * self.p


def linear(n_in, n_out, dtype='float32'):
    """An L.Linear with parameters of ``dtype``."""
    with chainer.using_config('dtype', numpy.dtype(dtype)):
        return L.Linear(n_in, n_out)


class FunctionRecorder(chainer.FunctionHook):
    """Appends every hook call, with the function's label and its inputs'
    shapes, to ``events``."""

    name = 'FunctionRecorder'

    def __init__(self, events, name=None):
        self.events = events
        if name is not None:
            self.name = name

    def _record(self, what, function, in_data):
        self.events.append((what, function.label,
                            tuple(getattr(x, 'shape', None)
                                  for x in in_data)))

    def forward_preprocess(self, function, in_data):
        self._record('forward_pre', function, in_data)

    def forward_postprocess(self, function, in_data):
        self._record('forward_post', function, in_data)

    def backward_preprocess(self, function, in_data, out_grad):
        self._record('backward_pre', function, in_data)

    def backward_postprocess(self, function, in_data, out_grad):
        self._record('backward_post', function, in_data)


class AddingHook(FunctionRecorder):
    """A recorder that, in its first ``forward_preprocess``, adds a second
    recorder to the global hooks (removed when this one is)."""

    name = 'AddingHook'

    def __init__(self, events):
        super().__init__(events)
        self._extra = None

    def forward_preprocess(self, function, in_data):
        super().forward_preprocess(function, in_data)
        if self._extra is None:
            self._extra = FunctionRecorder(self.events)
            self._extra.name = 'AddedRecorder'
            self._extra.__enter__()

    def __exit__(self, *args):
        if self._extra is not None:
            self._extra.__exit__(*args)
        super().__exit__(*args)


class LinkRecorder(chainer.LinkHook):
    """Appends every Link call's link class and argument count to
    ``events``."""

    name = 'LinkRecorder'

    def __init__(self, events, name=None):
        self.events = events
        if name is not None:
            self.name = name

    def forward_preprocess(self, args):
        self.events.append(('link_pre', type(args.link).__name__,
                            len(args.args)))

    def forward_postprocess(self, args):
        self.events.append(('link_post', type(args.link).__name__,
                            type(args.out).__name__))


def record_optimizer(events):
    """An optimizer hook that appends the optimizer's ``t`` to ``events``."""
    def hook(optimizer):
        events.append(('optimizer_hook', optimizer.t))
    return hook


def quiet():
    """NumPy's floating-point errors ignored (the context an update runs in
    when the optimizer kernels' error-state difference is left out)."""
    return numpy.errstate(all='ignore')


class ElementwiseConstant(chainer.FunctionNode):
    """A user's elementwise node that needs no input."""

    is_elementwise = True

    def forward(self, inputs):
        return numpy.ones(2, numpy.float32),


class Reversed:
    """A user's order sampler: the order reversed at each epoch's end."""

    def __call__(self, current_order, current_position):
        return current_order[::-1].copy()


class MyTupleDataset(chainer.datasets.TupleDataset):
    """A user's TupleDataset that overrides ``__getitem__``."""

    def __getitem__(self, index):
        return super().__getitem__(index)


class PlainTupleDataset(chainer.datasets.TupleDataset):
    """A user's TupleDataset subclass that overrides nothing."""


class MySerialIterator(chainer.iterators.SerialIterator):
    """A user's SerialIterator that overrides ``epoch_detail``."""

    @property
    def epoch_detail(self):
        return super().epoch_detail


def reloaded(iterator, fresh):
    """``fresh`` (a new iterator) with ``iterator``'s state, saved and
    loaded through Chainer's serializers."""
    saved = chainer.serializers.DictionarySerializer()
    iterator.serialize(saved)
    fresh.serialize(chainer.serializers.NpzDeserializer(saved.target))
    return fresh


class Stand:
    """A trainer as an extension sees it, without the loop: the updater,
    the observation, and an elapsed time that does not change (a real
    one differs from run to run)."""

    is_before_training = False
    elapsed_time = 1.5
    out = '.'

    def __init__(self, updater, observation):
        self.updater = updater
        self.observation = observation


def train(updater, iterations, *extensions):
    """Runs a Trainer over ``updater`` for ``iterations`` iterations with
    ``extensions``, in a temporary directory (removed after)."""
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        trainer = chainer.training.Trainer(updater, (iterations, 'iteration'),
                                           out=out)
        for extension in extensions:
            trainer.extend(extension)
        # The loop's exception is compared; stock's printout of it is not.
        trainer.run(show_loop_exception_msg=False)


def log_of(log_report):
    """``log_report.log`` with each entry's elapsed time left out (it is
    the clock's)."""
    return [{k: v for k, v in entry.items() if k != 'elapsed_time'}
            for entry in log_report.log]


def _changed(result):
    # A replacement's changed result: float arrays negated, gradients and
    # outputs (Variables) doubled, containers element by element.
    if isinstance(result, (tuple, list)):
        return type(result)(_changed(r) for r in result)
    if isinstance(result, numpy.ndarray) and result.dtype.kind == 'f':
        return -result
    if isinstance(result, chainer.Variable):
        return result * 2
    return result


def counting(original, label, events, mode='count'):
    """A replacement for a method (``original``, as looked up before the
    replacement): appends ``('call', label)`` to ``events`` on every call,
    then, by ``mode``, calls ``original`` and returns its result ('count'),
    its result changed (float arrays negated, Variables doubled: 'change'),
    or returns None without calling it ('skip')."""
    def replacement(*args, **kwargs):
        events.append(('call', label))
        if mode == 'skip':
            return None
        result = original(*args, **kwargs)
        return _changed(result) if mode == 'change' else result
    return replacement


# The attributes a program may replace (after enable(), in a patched run)
# and restore; execute.run_once puts back whatever a program left replaced.
REPLACEABLE = (
    (chainer.FunctionNode, 'apply'),
    (chainer.FunctionNode, 'backward'),
    (chainer.Link, '__call__'),
    (chainer.Link, 'forward'),
    (L.Linear, '__call__'),
    (L.Linear, 'forward'),
    (chainer.Variable, 'backward'),
    (chainer.Variable, 'cleargrad'),
    (chainer.Parameter, 'cleargrad'),
    (chainer.Link, 'cleargrads'),
    (chainer.optimizer.UpdateRule, 'update'),
    (chainer.optimizer.GradientMethod, 'update'),
)


def _replaceable():
    from chainer.functions.activation import relu
    from chainer.functions.connection import linear
    from chainer.functions.math import basic_math
    from chainer.functions.math import sum as sum_mod

    pairs = list(REPLACEABLE)
    for cls in (relu.ReLU, basic_math.Add, linear.LinearFunction,
                sum_mod.Sum):
        for name in ('apply', 'forward', 'forward_cpu', 'backward'):
            pairs.append((cls, name))
    # Every method the grammar replaces, whichever class it is on.
    from chainer_fastpath.testing.fuzz import grammar
    for owner, name, _ in grammar.REPLACED:
        pairs.append((_resolve(owner), name))
    # Every rule class (chainer.optimizers exports the optimizers, not
    # their rules): a program may assign a rule's inherited method to its
    # class, which must not outlive the program.
    rules, todo = [], [chainer.optimizer.UpdateRule]
    while todo:
        cls = todo.pop()
        rules.append(cls)
        todo.extend(cls.__subclasses__())
    for rule in rules:
        for method in ('update', 'update_core', 'update_core_cpu'):
            pairs.append((rule, method))
    return pairs


def _resolve(name):
    """The object a program names ``name`` (a dotted path from ``chainer``,
    or from ``L``, chainer.links)."""
    if name.startswith('L.'):
        name = 'chainer.links.' + name[2:]
    parts = name.split('.')
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 2):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module('.'.join(parts[:i]))
    return obj


_MISSING = object()


@contextlib.contextmanager
def restoring():
    """Puts back, on exit, every attribute of :data:`REPLACEABLE` (and the
    classes' methods the grammar replaces) and stops every patch
    ``mock.patch`` started: what a program replaced and did not restore."""
    saved = [(owner, name, owner.__dict__.get(name, _MISSING))
             for owner, name in _replaceable()]
    limit = sys.getrecursionlimit()
    try:
        yield
    finally:
        mock.patch.stopall()
        for owner, name, value in reversed(saved):
            if value is _MISSING:
                if name in owner.__dict__:
                    delattr(owner, name)
            elif owner.__dict__.get(name, _MISSING) is not value:
                setattr(owner, name, value)
        sys.setrecursionlimit(limit)


class Recursive(chainer.Chain):
    """A chain over ``units`` features of ``dtype`` that, called with
    ``(x, n)``, calls itself n times ('self'), its child Linear n times in a
    loop ('child'), or a chain of n nested chains ('nested', built on the
    first call) before its Linear."""

    def __init__(self, units, how='self', dtype='float32'):
        super().__init__()
        self.how = how
        with chainer.using_config('dtype', numpy.dtype(dtype)):
            with self.init_scope():
                self.l = L.Linear(units, units)

    def forward(self, x, n):
        if self.how == 'child':
            for _ in range(n):
                x = self.l(x)
            return x
        if self.how == 'nested':
            link = _Nested(self.l)
            for _ in range(n):
                link = _Nested(link)
            return link(x)
        if n <= 0:
            return self.l(x)
        return self(F.relu(x), n - 1)


class _Nested(chainer.Chain):
    def __init__(self, child):
        super().__init__()
        with self.init_scope():
            self.child = child

    def forward(self, x):
        return self.child(x)


def _depth():
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


@contextlib.contextmanager
def recursion_limit(frames, events=None):
    """The recursion limit ``frames`` above the caller's depth (put back on
    exit), so a deep recursion raises RecursionError cheaply.

    When an exception leaves the block, what the hooks appended to
    ``events`` inside it gives way to one ``('raised', type name)``: how
    far a recursion got before the limit depends on the frames each call
    takes, and compiled calls take fewer; whether (and what) it raised is
    compared."""
    previous = sys.getrecursionlimit()
    start = None if events is None else len(events)
    sys.setrecursionlimit(_depth() + frames)
    try:
        yield
    except BaseException as e:
        if start is not None:
            del events[start:]
            events.append(('raised', type(e).__name__))
        raise
    finally:
        sys.setrecursionlimit(previous)


def namespace():
    """A fresh namespace for one run of a program."""
    ns = {name: globals()[name] for name in __all__}
    ns['EVENTS'] = []
    return ns
