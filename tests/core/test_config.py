"""Per-thread configuration and function hooks, read by the compiled paths
as stock reads them: each thread sees its own values, also when threads
take turns and when a thread ends and another starts."""
import threading

import numpy

import chainer
import chainer.functions as F

from chainer_fastpath.testing import run_both


class _Recorder(chainer.FunctionHook):
    name = 'recorder'

    def __init__(self, log, tag):
        self.log = log
        self.tag = tag

    def forward_preprocess(self, function, in_data):
        self.log.append((self.tag, function.label))


def _x():
    return chainer.Variable(numpy.ones(2, numpy.float32))


def _take_turns(*turns_per_thread):
    """Runs one thread per sequence of callables, the threads taking turns
    one callable at a time (thread 0's first, thread 1's first, thread 0's
    second...); returns each thread's results."""
    n = len(turns_per_thread)
    conditions = threading.Condition()
    state = {'turn': 0}
    results = [[] for _ in range(n)]
    errors = []

    def work(k):
        try:
            for step, fn in enumerate(turns_per_thread[k]):
                with conditions:
                    conditions.wait_for(lambda: state['turn'] == step * n + k)
                try:
                    results[k].append(fn())
                finally:
                    with conditions:
                        state['turn'] += 1
                        conditions.notify_all()
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def _has_creator():
    return F.add(_x(), _x()).creator is not None


def test_threads_taking_turns_each_see_their_own_configuration():
    def run():
        def no_backprop():
            chainer.config.enable_backprop = False   # this thread only
            return _has_creator()

        return _take_turns([no_backprop, _has_creator, _has_creator],
                           [_has_creator, _has_creator, _has_creator])

    stock, patched = run_both(run)
    assert stock == patched == [[False, False, False], [True, True, True]]


def test_a_new_thread_does_not_see_an_ended_threads_configuration():
    def run():
        seen = []

        def ended():
            chainer.config.enable_backprop = False
            seen.append(_has_creator())

        def new():
            seen.append(_has_creator())

        for target in (ended, new, ended, new):
            t = threading.Thread(target=target)
            t.start()
            t.join()
        seen.append(_has_creator())
        return seen

    stock, patched = run_both(run)
    assert stock == patched == [False, True, False, True, True]


def test_threads_taking_turns_each_call_their_own_function_hooks():
    def run():
        log = []

        def hooked():
            hook = _Recorder(log, 'a')
            hook.__enter__()    # left registered for this thread
            F.relu(_x())

        def plain():
            F.sigmoid(_x())

        _take_turns([hooked, plain, plain], [plain, plain, plain])
        return log

    stock, patched = run_both(run)
    assert stock == patched == [('a', 'ReLU'), ('a', 'Sigmoid'),
                                ('a', 'Sigmoid')]


class _TurnOffBackprop(chainer.FunctionHook):
    name = 'turn_off_backprop'

    def forward_preprocess(self, function, in_data):
        chainer.config.enable_backprop = False


def test_configuration_set_during_a_call_counts_for_that_call():
    # The thread's own dict is empty until the hook writes to it; stock
    # reads enable_backprop after the hooks' forward_preprocess.
    def run():
        seen = []

        def work():
            with _TurnOffBackprop():
                seen.append(_has_creator())
            seen.append(_has_creator())

        t = threading.Thread(target=work)
        t.start()
        t.join()
        return seen

    stock, patched = run_both(run)
    assert stock == patched == [False, False]


def test_changes_between_calls_are_seen():
    # The compiled paths keep the values they last read while neither the
    # thread's nor the global configuration changed: every change shows.
    import chainer_fastpath
    x = _x()
    recorded = []
    with chainer_fastpath.enabled():
        def call():
            recorded.append(F.relu(x).creator is not None)
        call()
        chainer.global_config.enable_backprop = False
        try:
            call()
            with chainer.using_config('enable_backprop', True):
                call()
            call()
        finally:
            chainer.global_config.enable_backprop = True
        call()
        with chainer.using_config('enable_backprop', False):
            call()
            with chainer.using_config('enable_backprop', True):
                call()
            call()
        call()
    assert recorded == [True, False, True, False, True, False, True, False,
                        True]
