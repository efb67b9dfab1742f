"""Function hooks changed while a function runs, stock vs patched: stock's
``apply`` iterates a live view of the hook dict, so which hooks get the
postprocess call, and which changes raise, must be the same."""
import collections

import numpy
import pytest

import chainer
from chainer import function_hook
import chainer.functions as F
from chainer.functions.activation.relu import ReLU

from chainer_fastpath.testing import run_both, variable as _v


class _Hook(function_hook.FunctionHook):
    """Logs its calls as ``(tag, event, label)``; ``on_pre(node)`` and
    ``on_bpre(node)`` run inside its preprocess calls."""

    def __init__(self, log, tag, on_pre=None, on_bpre=None):
        self.log = log
        self.tag = tag
        self.on_pre = on_pre
        self.on_bpre = on_bpre

    def forward_preprocess(self, function, in_data):
        self.log.append((self.tag, 'pre', function.label))
        if self.on_pre is not None:
            self.on_pre(function)

    def forward_postprocess(self, function, in_data):
        self.log.append((self.tag, 'post', function.label))

    def backward_preprocess(self, function, in_data, out_grad):
        self.log.append((self.tag, 'bpre', function.label))
        if self.on_bpre is not None:
            self.on_bpre(function)

    def backward_postprocess(self, function, in_data, out_grad):
        self.log.append((self.tag, 'bpost', function.label))


class _AddsHookInForward(chainer.FunctionNode):
    """Registers a global hook from inside its forward."""

    def __init__(self, log):
        self.log = log

    def forward(self, inputs):
        chainer.get_function_hooks()['late'] = _Hook(self.log, 'late')
        return inputs[0] * 2,


class _Old(chainer.Function):
    def forward(self, inputs):
        return inputs[0] * 2,


def _add(name, tag):
    """An ``on_pre`` that registers a global hook ``name``."""
    def on_pre(node):
        hooks = chainer.get_function_hooks()
        hooks[name] = _Hook(hooks['a'].log, tag)
    return on_pre


def _pop(name):
    return lambda node: chainer.get_function_hooks().pop(name)


def _add_local(node):
    node.add_hook(_Hook(node.local_function_hooks['L'].log, 'L2'), name='L2')


# name -> (global hooks as (name, tag, on_pre), local hooks likewise, the
# node to apply to one input, or None for ReLU, compiled).
CASES = {
    'added by the last hook': ([('a', 'a', _add('b', 'b'))], [], None),
    'added by an earlier hook': (
        [('a', 'a', _add('c', 'c')), ('b', 'b', None)], [], None),
    'next removed': ([('a', 'a', _pop('b')), ('b', 'b', None)], [], None),
    'previous removed by the last': (
        [('a', 'a', None), ('b', 'b', _pop('a'))], [], None),
    'removes itself': ([('a', 'a', _pop('a'))], [], None),
    'replaces itself': ([('a', 'a', _add('a', 'a2'))], [], None),
    'moved to the end': (
        [('a', 'a', lambda node: chainer.get_function_hooks().move_to_end(
            'a')), ('b', 'b', None)], [], None),
    'local adds a local': ([], [('L', 'L', _add_local)], None),
    'global adds a local': ([('a', 'a', _add_local)], [('L', 'L', None)],
                            None),
    'local adds a global': (
        [('a', 'a', None)],
        [('L', 'L', lambda node: chainer.get_function_hooks().__setitem__(
            'g', _Hook(node.local_function_hooks['L'].log, 'g')))], None),
    'added in forward, none before': ([], [], _AddsHookInForward),
    'old-style Function': ([('a', 'a', _add('b', 'b'))], [], _Old),
    'old-style Function, local': ([], [('L', 'L', _add_local)], _Old),
}


def _outcome(fn, log):
    try:
        fn()
        error = None
    except Exception as e:
        error = (type(e).__name__, str(e))
    return error, list(log)


def _run_case(name):
    global_hooks, local_hooks, make_node = CASES[name]
    log = []
    hooks = chainer.get_function_hooks()
    saved = collections.OrderedDict(hooks)
    hooks.clear()
    try:
        for key, tag, on_pre in global_hooks:
            hooks[key] = _Hook(log, tag, on_pre)
        if make_node is None:
            node = ReLU()
        elif make_node is _Old:
            node = _Old()
        else:
            node = make_node(log)
        for key, tag, on_pre in local_hooks:
            node.add_hook(_Hook(log, tag, on_pre), name=key)
        x = _v(3)
        if make_node is _Old:
            return _outcome(lambda: node(x), log)
        return _outcome(lambda: node.apply((x,)), log)
    finally:
        hooks.clear()
        hooks.update(saved)


@pytest.mark.parametrize('name', sorted(CASES))
def test_hooks_changed_during_forward_same_calls(name):
    stock, patched = run_both(lambda: _run_case(name))
    assert stock == patched


def test_hook_added_by_the_last_hook_gets_the_postprocess_call():
    stock, patched = run_both(lambda: _run_case('added by the last hook'))
    assert ('b', 'post', 'ReLU') in patched[1]


def test_hook_dict_of_another_type():
    # A plain dict set as the thread's hooks: its own RuntimeError.
    def run():
        log = []
        thread_local = chainer._thread_local
        saved = chainer.get_function_hooks()
        thread_local.function_hooks = {}
        try:
            hooks = thread_local.function_hooks
            hooks['a'] = _Hook(log, 'a', lambda node: hooks.__setitem__(
                'b', _Hook(log, 'b')))
            return _outcome(lambda: F.relu(_v(3)), log)
        finally:
            thread_local.function_hooks = saved

    stock, patched = run_both(run)
    assert stock == patched
    assert stock[0][0] == 'RuntimeError'


def test_hook_added_in_backward_preprocess():
    # The hook sees the forwards that double backprop applies in the same
    # backward, and that node's backward postprocess.
    def run():
        log = []
        hooks = chainer.get_function_hooks()
        saved = collections.OrderedDict(hooks)
        hooks.clear()

        def on_bpre(node):
            if 'late' not in hooks:
                hooks['late'] = _Hook(log, 'late')

        try:
            x = _v(3)
            y = F.sum(x * x * 3)
            hooks['a'] = _Hook(log, 'a', on_bpre=on_bpre)
            y.backward(enable_double_backprop=True)
            return log, x.grad
        finally:
            hooks.clear()
            hooks.update(saved)

    stock, patched = run_both(run)
    assert stock[0] == patched[0]
    numpy.testing.assert_array_equal(stock[1], patched[1])
    assert ('late', 'post', '_ * _') in stock[0]
