"""``chainer.reporter`` (``machinery/reporter.pyx``), stock vs patched: the
same observations, the same summaries (values and types, bit for bit), the
same calls seen by mocks and subclasses, the same errors; and every case
the fast path does not take run through the original, counted."""
import copy
from unittest import mock

import numpy
import pytest

import chainer
from chainer import reporter

import chainer_fastpath
from chainer_fastpath.testing import check_same, error_of, warned


def _counts(name):
    return chainer_fastpath.stats().get(name, {'fast': 0, 'fallback': {}})


def _summary_state(s):
    return [s._x, s._x2, s._n]


# Values a loop reports: NumPy scalars and 0-d arrays of each float dtype,
# Python numbers, Variables; large, tiny, zero, negative, NaN and inf.
_MAGNITUDES = (0.5, 0.1, 3.25e-3, 1.0 / 3, 7e5, 2.5e9, 1e-9, 0.0, -0.0,
               -2.75, 1e12, 1e-13, 3e38, float('nan'), float('inf'),
               -float('inf'))
_KINDS = ('float', 'int', 'float16', 'float32', 'float64', '0d-float16',
          '0d-float32', '0d-float64', '0d-int32', 'variable', 'bool')


def _value(kind, x):
    if kind == 'float':
        return float(x)
    if kind == 'int':
        return int(x) if numpy.isfinite(x) else 7
    if kind == 'bool':
        return bool(x)
    if kind == 'variable':
        return chainer.Variable(numpy.array(x, numpy.float32))
    if kind == '0d-int32':
        return numpy.array(int(x) if abs(x) < 2 ** 31 else -5, numpy.int32)
    if kind.startswith('0d-'):
        with numpy.errstate(all='ignore'):
            return numpy.array(x, kind[3:])
    with numpy.errstate(all='ignore'):
        return getattr(numpy, kind)(x)


def _weight(weight):
    if weight == 'float32':
        return numpy.float32(0.25)
    if weight == '0d-float64':
        return numpy.array(1.5)
    return weight


# (chainer.testing.parameterize is not importable under this suite's
# pytest configuration: its module marks tests with unregistered marks.)
@pytest.mark.parametrize('kind', _KINDS)
@pytest.mark.parametrize('weight', [None, 1, 2, 0.5, 'float32', '0d-float64'])
def test_summary_add_same_as_stock(kind, weight):
    def fn():
        s = reporter.Summary()
        states = []
        for x in _MAGNITUDES:
            with numpy.errstate(all='ignore'):
                v = _value(kind, x)
                if isinstance(v, chainer.Variable):
                    v = v.array
                if weight is None:
                    s.add(v)
                else:
                    s.add(v, weight=_weight(weight))
            states.append(_summary_state(s))
        with numpy.errstate(all='ignore'):
            return states, list(s.make_statistics()), s.compute_mean()
    check_same(fn)


@pytest.mark.parametrize('dtype', [numpy.float32, numpy.float64])
def test_summary_of_random_losses_is_bit_identical(dtype):
    def fn():
        s = reporter.Summary()
        for x in numpy.random.lognormal(0, 3, 300).astype(dtype):
            s.add(numpy.array(x) if x > 1 else x)
        return _summary_state(s) + list(s.make_statistics())
    check_same(fn)


def test_usual_reports_take_the_fast_path():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        s = reporter.Summary()
        s.add(numpy.float32(0.5))
        s.add(numpy.array(0.25, numpy.float32))
        s.add(numpy.float64(2.0), weight=3)
        assert _counts('Summary.add') == {'fast': 3, 'fallback': {}}
        s.add(numpy.float32('nan'))
        assert _counts('Summary.add')['fallback'] == {
            'not a CPU scalar of a safe magnitude': 1}


@pytest.mark.parametrize('setting', ['over', 'under', 'invalid'])
def test_floating_point_errors_act_as_stock(setting):
    # Values whose square overflows, underflows or is inf * 0: stock acts
    # from its own line, as errstate says.
    value = {'over': numpy.float32(3e30), 'under': numpy.float32(1e-30),
             'invalid': numpy.float32('inf')}[setting]
    weight = 0 if setting == 'invalid' else 1

    def fn():
        s = reporter.Summary()
        with numpy.errstate(**{setting: 'raise'}):
            error = error_of(lambda: s.add(value, weight))
        with numpy.errstate(all='ignore'):
            return error, _summary_state(s)
    check_same(fn)


def test_summary_bad_calls_raise_as_stock():
    def fn():
        s = reporter.Summary()
        return [error_of(lambda: s.add()),
                error_of(lambda: s.add(1.0, 1, 2)),
                error_of(lambda: s.add(1.0, wieght=2)),
                error_of(lambda: s.add('a')),
                error_of(lambda: s.add(numpy.zeros(3))),
                error_of(lambda: reporter.Summary.add(object(), 1.0))]
    check_same(fn)


def test_summary_without_its_attributes_raises_as_stock():
    def fn():
        s = reporter.Summary()
        del s._x2
        error = error_of(lambda: s.add(numpy.float32(0.5)))
        return error, s._x, s._n
    check_same(fn)


class MySummary(reporter.Summary):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __setattr__(self, name, value):
        if hasattr(self, 'calls'):
            self.calls.append((name, type(value).__name__))
        super().__setattr__(name, value)


def test_summary_subclass_runs_stock():
    def fn():
        s = MySummary()
        s.add(numpy.float32(0.5))
        return s.calls, _summary_state(s)
    stock, _ = check_same(fn)
    assert stock[0] == [('_x', 'float64'), ('_x2', 'float64'), ('_n', 'int')]


def test_mocked_device_lookup_is_called_as_stock():
    def fn():
        with mock.patch.object(chainer.backend, 'get_device_from_array',
                               wraps=chainer.backend.get_device_from_array
                               ) as m:
            s = reporter.Summary()
            s.add(numpy.float32(0.5))
            return [c.args for c in m.call_args_list], _summary_state(s)
    stock, _ = check_same(fn)
    assert len(stock[0]) == 1


# -- DictSummary.add ----------------------------------------------------------

def _entries():
    v32 = numpy.float32
    return [
        {'loss': v32(0.5), 'acc': numpy.array(0.75, v32)},
        {'loss': chainer.Variable(numpy.array(0.25, v32)), 'acc': 1.0,
         'n': 3},
        {'loss': (v32(0.5), 4), 'acc': (numpy.array(0.5), v32(2))},
        {'loss': (chainer.Variable(numpy.array(1.5, v32)),
                  chainer.Variable(numpy.array(2.0, v32)))},
        {'vec': numpy.ones(3, v32), 'none': None, 'list': [1.0],
         'nan': v32('nan'), 'loss': numpy.float16(0.125)},
        {'big': numpy.float64(1e300), 'int': numpy.int32(4)},
    ]


def test_dict_summary_same_as_stock():
    def fn():
        d = reporter.DictSummary()
        # The overflow's warning comes from stock's line, patched too.
        seen = [warned(lambda: d.add(entry)) for entry in _entries()]
        with numpy.errstate(all='ignore'):
            return (seen,
                    {k: _summary_state(s) for k, s in d._summaries.items()},
                    d.compute_mean(), d.make_statistics())
    check_same(fn)


def test_dict_summary_bad_weight_raises_as_stock():
    def fn():
        d = reporter.DictSummary()
        return (error_of(lambda: d.add({'a': 1.0, 'b': (1.0, [1, 2])})),
                error_of(lambda: d.add({'c': (1.0,)})),
                error_of(lambda: d.add({'s': 'text'})),
                error_of(lambda: d.add([1])),
                error_of(lambda: d.add()),
                {k: _summary_state(s) for k, s in d._summaries.items()})
    check_same(fn)


def test_dict_summary_calls_summary_add_as_stock():
    def fn():
        calls = []
        original = reporter.Summary.add

        def recording(self, value, weight=1):
            calls.append((type(value).__name__, weight))
            return original(self, value, weight)
        d = reporter.DictSummary()
        with mock.patch.object(reporter.Summary, 'add', recording):
            d.add({'a': numpy.float32(0.5), 'b': (2.0, 3), 'c': [1]})
        return calls, {k: _summary_state(s) for k, s in d._summaries.items()}
    stock, _ = check_same(fn)
    assert stock[0] == [('float32', 1), ('float', 3)]


def test_dict_summary_takes_the_fast_path():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        d = reporter.DictSummary()
        d.add({'a': numpy.float32(0.5), 'b': numpy.array(0.5)})
        assert _counts('DictSummary.add') == {'fast': 1, 'fallback': {}}
        assert _counts('Summary.add') == {'fast': 2, 'fallback': {}}


# -- Reporter.report, report --------------------------------------------------

def _observed(keep_graph, observer_kind):
    model = chainer.Link()
    r = reporter.Reporter()
    r.add_observer('main', model)
    r.add_observers('sub/', [('a', 'not a link')])
    observation = {}
    x = chainer.Variable(numpy.array([1.5], numpy.float32))
    y = x * 2
    values = {'loss': y, 'acc': numpy.float32(0.5), 3: 1.0}
    observer = {'none': None, 'model': model}[observer_kind]
    with chainer.using_config('keep_graph_on_report', keep_graph):
        with r.scope(observation):
            reporter.report(values, observer)
            chainer.report({'x': x}, observer)
            r.report({'direct': 2}, observer)
    out = {}
    for k, v in observation.items():
        if isinstance(v, chainer.Variable):
            out[k] = (v.array, v.creator is None, v is y or v is x)
        else:
            out[k] = v
    return out


@pytest.mark.parametrize('keep_graph', [False, True])
@pytest.mark.parametrize('observer_kind', ['none', 'model'])
def test_reports_same_as_stock(keep_graph, observer_kind):
    check_same(lambda: _observed(keep_graph, observer_kind))


def test_report_with_no_current_reporter_does_nothing():
    def fn():
        reporter.report({'a': 1})
        return reporter._get_reporters() == []
    check_same(fn)


def test_report_scope_and_nested_reporters():
    def fn():
        outer, inner = reporter.Reporter(), reporter.Reporter()
        obs = object()
        outer.add_observer('o', obs)
        inner.add_observer('i', obs)
        seen_outer, seen_inner, scoped = {}, {}, {}
        with outer.scope(seen_outer):
            reporter.report({'a': 1}, obs)
            with inner.scope(seen_inner):
                reporter.report({'b': 2}, obs)
                with reporter.report_scope(scoped):
                    reporter.report({'c': 3}, obs)
            reporter.report({'d': 4})
        return seen_outer, seen_inner, scoped
    check_same(fn)


def test_unregistered_observer_and_bad_values_raise_as_stock():
    def fn():
        r = reporter.Reporter()
        observation = {}
        with r.scope(observation):
            errors = [error_of(lambda: reporter.report({'a': 1}, object())),
                      error_of(lambda: r.report({'a': 1}, object())),
                      error_of(lambda: reporter.report([1, 2])),
                      error_of(lambda: reporter.report(None)),
                      error_of(lambda: r.report()),
                      error_of(lambda: reporter.report({}, None, 3))]
        return errors, observation
    check_same(fn)


def test_report_takes_the_fast_path():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        r = reporter.Reporter()
        with r.scope({}):
            reporter.report({'a': 1})
        assert _counts('reporter.report') == {'fast': 1, 'fallback': {}}
        assert _counts('Reporter.report') == {'fast': 1, 'fallback': {}}


class CountingReporter(reporter.Reporter):
    def __init__(self):
        super().__init__()
        self.calls = []

    def report(self, values, observer=None):
        self.calls.append((sorted(values), observer))
        super().report(values, observer)


def test_reporter_subclass_and_instance_method_are_called():
    def fn():
        r = CountingReporter()
        plain = reporter.Reporter()
        calls = []
        plain.report = lambda values, observer=None: calls.append(
            sorted(values))
        with r.scope({}):
            reporter.report({'a': 1, 'b': 2})
        with plain:
            reporter.report({'c': 3})
        return r.calls, r.observation, calls
    stock, _ = check_same(fn)
    assert stock[2] == [['c']]


def test_mocked_reporter_report_sees_the_calls():
    def fn():
        r = reporter.Reporter()
        obs = object()
        r.add_observer('main', obs)
        values = {'loss': 1.0}
        with mock.patch.object(reporter.Reporter, 'report') as m:
            with r:
                reporter.report(values, obs)
        return [(c.args[0] is values, c.args[1] is obs) for c in
                m.call_args_list]
    stock, _ = check_same(fn)
    assert stock == [(True, True)]


def test_copy_and_helpers_mocked_are_called_as_stock():
    def fn():
        r = reporter.Reporter()
        v = chainer.Variable(numpy.array(1.0, numpy.float32))
        with mock.patch.object(copy, 'copy', wraps=copy.copy) as m, \
                mock.patch.object(reporter, '_copy_variable',
                                  wraps=reporter._copy_variable) as h:
            with r.scope({}):
                reporter.report({'v': v, 'w': 2})
        return m.call_count, h.call_count
    stock, _ = check_same(fn)
    assert stock == (2, 2)   # the Variable, then its __dict__


def test_helpers_replaced_are_counted():
    with chainer_fastpath.enabled():
        chainer_fastpath.reset_stats()
        with mock.patch.object(reporter, '_get_reporters',
                               wraps=reporter._get_reporters):
            reporter.report({'a': 1})
        assert _counts('reporter.report')['fallback'] == {
            'chainer.reporter helper replaced': 1}
