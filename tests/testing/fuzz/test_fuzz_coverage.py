"""The grammar reaches every compiled FunctionNode and every optimizer."""
from chainer_fastpath import functions
from chainer_fastpath._core import _registry
from chainer_fastpath.testing.fuzz import coverage
from chainer_fastpath.testing.fuzz import grammar


def test_grammar_reaches_every_compiled_function_and_optimizer():
    functions.register_all()
    # 2500: with the training machinery among the operations, the rarest
    # node (MaxPoolingNDWithIndexes, from double backprop through max
    # pooling) is reached 3 times, as 1500 programs reached it before.
    result = coverage.measure(programs=2500, seed=0)
    missing = [c.__name__ for c in _registry.registered()
               if not result['nodes'][c]]
    assert missing == []
    assert set(result['optimizers']) == set(grammar.OPTIMIZERS)


# The compiled classes whose int, bool, float or str arguments the
# argument-edge operations draw at their edges.
EDGE_NODES = {
    'Convolution2DFunction', 'Deconvolution2DFunction', 'Sum', 'Mean',
    'Max', 'Min', 'LogSumExp', 'Softmax', 'Concat', 'Stack', 'SplitAxis',
    'ExpandDims', 'Separate', 'Swapaxes', 'Squeeze', 'Reshape',
    'BroadcastTo', 'Transpose', 'GetItem', 'EmbedIDFunction',
    'SoftmaxCrossEntropy', 'LeakyReLU', 'Dropout', 'HuberLoss',
    'LinearFunction', 'MatMul',
}


def test_argument_edges_reach_compiled_forwards():
    # Edge arguments that the compiled code takes, and those it hands to
    # stock: both must occur, and the convolutions among the compiled.
    functions.register_all()
    result = coverage.reach('argument-edges', programs=200)
    # Every class with edge arguments went through the patch's apply
    # (which ran it compiled or handed it to stock's forward).
    registered = {c.__name__ for c in _registry.registered()}
    assert EDGE_NODES <= registered
    assert EDGE_NODES - set(result['functions']) == set()
    compiled = {name for name, (fast, _) in result['functions'].items()
                if fast}
    python = {name for name, (_, slow) in result['functions'].items()
              if slow}
    assert {'Convolution2DFunction', 'Deconvolution2DFunction',
            'Sum'} <= compiled
    assert python & {'Convolution2DFunction', 'Deconvolution2DFunction'}
    assert result['raised']     # invalid geometry raises stock's errors


def test_convolution_backwards_reach_compiled_code():
    # Backwards through the convolutions: compiled where no hook is
    # registered and no graph recorded (a third of the programs' hooks).
    result = coverage.reach('convolutions', programs=400)
    compiled = {name for name, (fast, _) in result['backwards'].items()
                if fast}
    assert {'Convolution2DFunction', 'Deconvolution2DFunction'} <= compiled


def test_grammar_reaches_compiled_backwards():
    # Backward passes through the nodes just applied, drawn per operation:
    # most compiled backwards run in a campaign's first programs (before
    # the per-operation draw, 16 of 58 in 1500 programs).
    functions.register_all()
    result = coverage.reach(None, programs=1500)
    expected = {cls.__name__ for cls, entry in _registry.registered().items()
                if {'backward', 'backward_into'} & set(entry.parts)}
    reached = {name for name, (fast, _) in result['backwards'].items()
               if fast}
    assert len(expected & reached) >= 0.7 * len(expected), sorted(
        expected - reached)


def test_replaced_methods_are_called_through_the_patch():
    result = coverage.reach('replaced-methods', programs=200)
    called = {what for kind, what in result['events'] if kind == 'call'}
    assert {'FunctionNode.apply', 'Link.__call__'} <= called
    assert any(w.endswith('update_core_cpu') for w in called)
    assert result['entries']['FunctionNode.apply'] > 0


def test_recursive_links_run_the_compiled_link_call_under_hooks():
    result = coverage.reach('recursive-links', programs=100)
    assert result['entries']['Link.__call__'] > 1000
    kinds = {kind for kind, _ in result['events']}
    assert 'link_pre' in kinds


def test_n_step_rnns_run_the_compiled_loop():
    result = coverage.reach('n-step-rnns', programs=60)
    assert result['entries']['n_step_rnn.n_step_rnn_impl'] > 0
    assert {'LSTM', 'Dropout', 'Stack'} <= set(result['functions'])


def test_grammar_reaches_the_compiled_link_methods():
    # Linear links called and gradients cleared, compiled and handed to
    # stock (a Parameter subclass, a replaced cleargrad, debug mode); the
    # replacements are called.
    result = coverage.reach(None, programs=300)
    assert result['entries']['Linear.forward'] > 0
    assert result['entries']['Link.cleargrads'] > 0
    assert {'not a Parameter', 'Parameter methods replaced'} <= set(
        result['fallbacks']['Link.cleargrads'])
    called = {what for kind, what in result['events'] if kind == 'call'}
    assert {'Link.cleargrads', 'Parameter.cleargrad'} <= called
