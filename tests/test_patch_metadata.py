"""Every replacement in the patch table looks like the original it
replaces: name, module, qualified name, doc, annotations, ``__wrapped__``,
signature, help text, and pickles to the original's bytes."""
import importlib.util
import inspect
import pickle
import pydoc
import subprocess
import sys

import pytest

import chainer_fastpath
from chainer_fastpath import _numpy_distutils
from chainer_fastpath import _patch

ROWS = {row.name: row for row in _patch.table()}

METADATA = ('__module__', '__name__', '__qualname__', '__doc__',
            '__annotations__')


@pytest.mark.parametrize('name', sorted(ROWS))
def test_replacement_carries_the_original_metadata(name):
    row = ROWS[name]
    for attribute in METADATA:
        assert (getattr(row.replacement, attribute)
                == getattr(row.original, attribute)), attribute
    assert row.replacement.__wrapped__ is row.original
    extra = {'__wrapped__': row.original}
    if row.original.__doc__ is None and isinstance(row.owner, type):
        extra['__objclass__'] = row.owner
    assert row.replacement.__dict__ == dict(row.original.__dict__, **extra)


@pytest.mark.parametrize('name', sorted(ROWS))
def test_replacement_has_the_original_signature_and_help(name):
    row = ROWS[name]
    stock = _signature_and_help(row)
    with chainer_fastpath.enabled():
        assert _signature_and_help(row) == stock


def _signature_and_help(row):
    """What ``inspect`` and ``help()`` say of what the row's owner holds:
    help's text below its title, whose type name cannot be the original's
    (cython_function_or_method)."""
    obj = getattr(row.owner, row.attribute)
    return (inspect.signature(obj), inspect.getdoc(obj),
            _help_body(obj))


def _help_body(obj):
    return pydoc.render_doc(obj, renderer=pydoc.plaintext).split('\n', 1)[1]


def _pickled(protocol):
    """``{row name: pickle.dumps(what the row's owner holds now)}``."""
    return {name: pickle.dumps(getattr(row.owner, row.attribute), protocol)
            for name, row in ROWS.items()}


@pytest.mark.parametrize('protocol', [0, pickle.DEFAULT_PROTOCOL])
def test_patched_callables_pickle_as_the_originals(protocol):
    stock = _pickled(protocol)
    with chainer_fastpath.enabled():
        patched = _pickled(protocol)
        for name, data in patched.items():
            row = ROWS[name]
            assert pickle.loads(data) is row.replacement, name
    assert patched == stock


_UNPICKLE = '''
import pickle, sys
loaded = {name: pickle.loads(data)
          for name, data in pickle.loads(sys.stdin.buffer.read()).items()}
assert not [m for m in sys.modules if m.startswith('chainer_fastpath')]
print(repr({name: (f.__module__, f.__qualname__)
            for name, f in loaded.items()}))
'''


def _numpy_has_distutils():
    # This interpreter may hold chainer_fastpath's stand-in.
    spec = importlib.util.find_spec('numpy.distutils')
    return spec is not None and spec.loader is not _numpy_distutils.FINDER


@pytest.mark.skipif(
    not _numpy_has_distutils(),
    reason='stock Chainer 7.8.1 imports only with numpy.distutils, which '
           'NumPy lacks on Python 3.12: chainer_fastpath must supply it')
def test_pickled_patched_callables_load_without_the_plugin():
    with chainer_fastpath.enabled():
        patched = _pickled(pickle.DEFAULT_PROTOCOL)
    out = subprocess.run(
        [sys.executable, '-c', _UNPICKLE], input=pickle.dumps(patched),
        stdout=subprocess.PIPE, check=True).stdout
    assert eval(out) == {name: (row.original.__module__,
                                row.original.__qualname__)
                         for name, row in ROWS.items()}


OWNERS = {row_name.partition('.')[0]: row.owner
          for row_name, row in ROWS.items()}


@pytest.mark.parametrize('name', sorted(OWNERS))
def test_help_on_the_owner_is_the_same(name):
    owner = OWNERS[name]
    stock = pydoc.render_doc(owner, renderer=pydoc.plaintext)
    with chainer_fastpath.enabled():
        assert pydoc.render_doc(owner, renderer=pydoc.plaintext) == stock


def test_one_replacement_cannot_stand_for_two_originals():
    def first():
        pass

    def second():
        pass

    def replacement():
        pass

    assert _patch._dressed(replacement, first, None) is replacement
    assert _patch._dressed(replacement, first, None) is replacement
    with pytest.raises(RuntimeError, match='already stands for'):
        _patch._dressed(replacement, second, None)


# Module functions whose replacements word a call Python rejects as Cython
# does (the README's known differences): the rest word it as stock.
CYTHON_WORDED = {'force_array', 'sub', 'rsub', 'mul', 'n_step_rnn_impl',
                 '_backprop_to_all'}


def _error(f, *args, **kwargs):
    try:
        f(*args, **kwargs)
    except Exception as e:
        return type(e), str(e)
    return None


@pytest.mark.parametrize('name', sorted(
    n for n, r in ROWS.items() if not isinstance(r.owner, type)))
def test_module_function_rejects_bad_calls_in_stocks_words(name):
    row = ROWS[name]
    calls = [((), {}), ((None,) * 12, {}), ((), {'no_such_argument': 1})]
    errors = [(_error(row.original, *a, **k),
               _error(row.replacement, *a, **k)) for a, k in calls]
    for stock, patched in errors:
        assert stock is not None and patched is not None
        assert stock[0] is patched[0]
    if row.attribute in CYTHON_WORDED:
        assert any(stock != patched for stock, patched in errors)
    else:
        assert [s for s, _ in errors] == [p for _, p in errors]
