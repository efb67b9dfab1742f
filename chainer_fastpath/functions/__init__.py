"""The compiled functions, one module per Chainer function, laid out as
``chainer/functions/<family>/<name>.py`` is.

Each module holds a function's compiled forward, compiled backward, the
methods they stand for and its type-check key, and exposes them as
``ENTRIES`` (``chainer_fastpath._core._registry.Compiled``). Adding a
function is its module, its test file and one line below.

A module may also replace the public function that applies its node
(``F.relu``, ``F.sum``): it then speaks the patch protocol (``TARGETS``,
``bind``), and this package gathers those targets into one patch-table
module.
"""
import importlib

MODULES = (
    'activation.leaky_relu',
    'activation.log_softmax',
    'activation.relu',
    'activation.sigmoid',
    'activation.softmax',
    'activation.softplus',
    'activation.tanh',
    'array.broadcast',
    'array.concat',
    'array.copy',
    'array.expand_dims',
    'array.get_item',
    'array.permutate',
    'array.reshape',
    'array.select_item',
    'array.separate',
    'array.split_axis',
    'array.squeeze',
    'array.stack',
    'array.swapaxes',
    'array.transpose',
    'array.transpose_sequence',
    'array.where',
    'connection.convolution_2d',
    'connection.deconvolution_2d',
    'connection.embed_id',
    'connection.linear',
    'distributions.bernoulli',
    'evaluation.accuracy',
    'loss.huber_loss',
    'loss.hierarchical_softmax',
    'loss.mean_squared_error',
    'loss.negative_sampling',
    'loss.softmax_cross_entropy',
    'loss.squared_error',
    'math.average',
    'math.basic_math',
    'math.clip',
    'math.exponential',
    'math.identity',
    'math.linear_interpolate',
    'math.logsumexp',
    'math.matmul',
    'math.maximum',
    'math.minimum',
    'math.minmax',
    'math.sqrt',
    'math.square',
    'math.sum',
    'noise.dropout',
    'normalization.batch_normalization',
    'pooling.average_pooling_2d',
    'pooling.max_pooling_nd',
    'rnn.lstm',
    'rnn.n_step_rnn',
)

_registered = False

# The public functions the modules replace, filled by register_all().
TARGETS = ()
_module_of = {}


def register_all():
    """Puts every module's entries in the registry, and gathers the
    targets of their public wrappers (once)."""
    global _registered, TARGETS
    if _registered:
        return
    from chainer_fastpath._core import _registry

    for name in MODULES:
        module = importlib.import_module(__name__ + '.' + name)
        _registry.register(module.ENTRIES)
        for target in getattr(module, 'TARGETS', ()):
            _module_of[target] = module
    TARGETS = tuple(_module_of)
    _registered = True


def bind(owner, attribute, original):
    """The replacement of the public function ``original``, from the
    module that compiles its node."""
    return _module_of[owner, attribute].bind(owner, attribute, original)
