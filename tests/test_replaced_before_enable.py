"""Code replaced before chainer_fastpath first reads it (a mock set up
before ``enable()``) is not taken for Chainer's: the compiled code that
stands for it is not used, so the replacement runs as it does in stock.

Each case runs in a fresh process: the test session has enabled already.
chainer_fastpath is imported first, as on Python 3.12 Chainer needs.
"""
import subprocess
import sys
import textwrap

import pytest

from chainer_fastpath._core._audit import is_chainers

import chainer
from chainer.functions.math import basic_math


def _run(code):
    done = subprocess.run([sys.executable, '-c', textwrap.dedent(code)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_method_of_a_compiled_function_mocked_before_enable():
    out, _ = _run('''
        from unittest import mock
        import chainer_fastpath, numpy, chainer
        from chainer.functions.math import basic_math
        stock = basic_math.Add.forward
        def forward(self, inputs):
            return tuple(y + 1 for y in stock(self, inputs))
        with mock.patch.object(basic_math.Add, 'forward', forward):
            chainer_fastpath.enable()
            x = chainer.Variable(numpy.ones(2, numpy.float32))
            print((x + x).array.tolist())
    ''')
    assert out.split() == ['[3.0,', '3.0]']


def test_constant_node_class_replaced_before_enable_is_made_by_its_init():
    out, _ = _run('''
        import chainer_fastpath, numpy, chainer
        from chainer.functions.math import basic_math
        class AddConstant(basic_math.AddConstant):
            def __init__(self, value):
                print('init', value)
                super().__init__(value * 2)
        basic_math.AddConstant = AddConstant
        chainer_fastpath.enable()
        x = chainer.Variable(numpy.ones(2, numpy.float32))
        print((x + 1).array.tolist())
    ''')
    assert out.split() == ['init', '1', '[3.0,', '3.0]']


def test_patch_target_mocked_before_enable_is_left_with_a_warning():
    out, err = _run('''
        from unittest import mock
        import chainer_fastpath, chainer
        with mock.patch.object(chainer.Variable, 'backward') as backward:
            chainer_fastpath.enable()
            print(chainer.Variable.backward is backward)
            print(chainer.FunctionNode.apply is not
                  chainer_fastpath.get_original(chainer.FunctionNode,
                                                'apply'))
    ''')
    assert out.split() == ['True', 'True']
    assert 'Variable.backward was replaced before' in err


@pytest.mark.parametrize('obj, expected', [
    (basic_math.Add.forward, True),
    (chainer.Variable.array, True),              # a property
    (chainer.Link.__init__, True),
    (object.__init__, True),                     # a built-in slot
    (lambda self: None, False),
    (len, False),
])
def test_is_chainers(obj, expected):
    assert is_chainers(obj) is expected


def test_a_mock_is_not_chainers():
    from unittest import mock
    assert not is_chainers(mock.MagicMock())
    assert not is_chainers(mock.create_autospec(basic_math.Add.forward))
