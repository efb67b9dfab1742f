"""The grammar reaches every compiled FunctionNode and every optimizer."""
from chainer_fastpath import functions
from chainer_fastpath._core import _registry
from chainer_fastpath.testing.fuzz import coverage
from chainer_fastpath.testing.fuzz import grammar


def test_grammar_reaches_every_compiled_function_and_optimizer():
    functions.register_all()
    result = coverage.measure(programs=1500, seed=0)
    missing = [c.__name__ for c in _registry.registered()
               if not result['nodes'][c]]
    assert missing == []
    assert set(result['optimizers']) == set(grammar.OPTIMIZERS)
