"""The attribute caches of ``_attrs.h``: every read, store and class check
through a cache gives what the generic way gives, whatever happens to the
class or the instance between two uses of the same cache."""
import platform
import sys
import weakref
from unittest import mock

import pytest

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs import Site


def test_fast_way_in_use_where_the_layout_is_known():
    known = (platform.python_implementation() == 'CPython'
             and sys.version_info[:2] in ((3, 11), (3, 12)))
    assert _attrs.FAST == known


def _twins(cls, names_values):
    """Two instances given the same attributes in the same order: one
    through caches, one the generic way."""
    cached, generic = cls(), cls()
    for name, value in names_values:
        Site(name, 'set').set(cached, value)
        setattr(generic, name, value)
    return cached, generic


class Plain:
    pass


@pytest.mark.parametrize('order', [
    ('a', 'b', 'c'), ('c', 'a', 'b'), ('b', 'c', 'a', 'b'), ('a',), ()])
def test_stores_leave_the_generic_dict(order):
    Plain().__dict__.update(dict.fromkeys('abc'))   # the class's key table
    cached, generic = _twins(Plain, [(n, n + '!') for n in order])
    get = {n: Site(n, 'get') for n in 'abc'}
    for name in 'abc':
        if name in order:
            assert get[name].get(cached) == getattr(generic, name)
        else:
            with pytest.raises(AttributeError):
                get[name].get(cached)
    assert list(cached.__dict__.items()) == list(generic.__dict__.items())


def test_store_of_a_name_new_to_the_class():
    class Fresh:
        pass

    site = Site('first', 'set')
    obj = Fresh()
    site.set(obj, 1)            # enters the class's key table here
    other = Fresh()
    site.set(other, 2)
    assert (obj.first, other.first) == (1, 2)
    assert list(other.__dict__) == ['first']


def test_store_replaces_and_releases_the_old_value():
    class Box:
        pass

    class Payload:
        pass

    site = Site('x', 'set')
    obj = Box()
    old = Payload()
    site.set(obj, old)
    ref = weakref.ref(old)
    del old
    site.set(obj, 'new')
    assert ref() is None
    assert obj.x == 'new'


def test_read_after_the_instance_got_a_dict_of_its_own():
    obj = Plain()
    obj.a = 1
    site = Site('a', 'get')
    assert site.get(obj) == 1
    obj.__dict__['a'] = 2       # the instance's dict, not its values
    assert site.get(obj) == 2
    Site('a', 'set').set(obj, 3)
    assert obj.__dict__['a'] == 3


def test_class_attribute_read_where_the_instance_has_none():
    class Defaults:
        rank = 0

    site = Site('rank', 'get')
    first = Defaults()
    assert site.get(first) == 0
    second = Defaults()
    second.rank = 5             # 'rank' enters the key table now
    assert site.get(second) == 5
    assert site.get(first) == 0
    Defaults.rank = 7           # a new version of the class
    assert site.get(first) == 7
    del second.rank
    assert site.get(second) == 7


def test_descriptors_on_the_class_decide():
    class Base:
        pass

    get, put = Site('value', 'get'), Site('value', 'set')
    obj = Base()
    put.set(obj, 'instance')
    assert get.get(obj) == 'instance'
    calls = []
    Base.value = property(lambda self: 'property',
                          lambda self, v: calls.append(v))
    assert get.get(obj) == 'property'
    put.set(obj, 'through the setter')
    assert calls == ['through the setter']
    del Base.value
    assert get.get(obj) == 'instance'


def test_getattribute_and_getattr_of_the_class_are_called():
    class Hooked:
        def __getattr__(self, name):
            return 'missing ' + name

    class Intercepting:
        def __getattribute__(self, name):
            return 'always'

    assert Site('nothing', 'get').get(Hooked()) == 'missing nothing'
    obj = Intercepting()
    Site('a', 'set').set(obj, 1)
    assert Site('a', 'get').get(obj) == 'always'


def test_mock_patch_of_the_class_is_seen():
    class Target:
        flag = False

    site = Site('flag', 'get')
    obj = Target()
    assert site.get(obj) is False
    with mock.patch.object(Target, 'flag', True):
        assert site.get(obj) is True
    assert site.get(obj) is False


def test_many_classes_through_one_cache():
    classes = [type('C%d' % i, (), {}) for i in range(40)]
    get, put = Site('v', 'get'), Site('v', 'set')
    objs = [cls() for cls in classes for _ in range(2)]
    for i, obj in enumerate(objs):
        put.set(obj, i)
    for _ in range(2):
        for i, obj in enumerate(objs):
            assert get.get(obj) == i == obj.v


def test_slots_and_builtins_go_the_generic_way():
    class Slotted:
        __slots__ = ('a',)

    obj = Slotted()
    Site('a', 'set').set(obj, 4)
    assert Site('a', 'get').get(obj) == 4
    assert Site('real', 'get').get(3.5) == 3.5
    with pytest.raises(AttributeError):
        Site('a', 'set').set(object(), 1)


def test_class_has():
    class Node:
        def forward(self):
            pass

    original = Node.forward
    site = Site('forward', 'lookup')
    obj = Node()
    assert site.class_has(obj, original) is _attrs.FAST
    assert site.class_has(obj, lambda self: None) is False
    obj.forward = 'shadowing'
    assert site.class_has(obj, original) is False
    assert site.class_has(Node(), original) is _attrs.FAST
    with mock.patch.object(Node, 'forward'):
        assert site.class_has(Node(), original) is False
    assert site.class_has(Node(), original) is _attrs.FAST


def test_class_has_sees_a_base_class_change():
    class Base:
        def forward(self):
            pass

    class Derived(Base):
        pass

    site = Site('forward', 'lookup')
    assert site.class_has(Derived(), Base.forward) is _attrs.FAST
    Base.forward = lambda self: None
    assert site.class_has(Derived(), Base.__dict__['forward']) is _attrs.FAST
    Derived.forward = lambda self: None
    assert site.class_has(Derived(), Base.__dict__['forward']) is False


def test_an_instance_with_a_dict_of_its_own():
    class Node:
        shared = 'class'

    first = Node()
    first.a = 1
    obj = Node()
    obj.a = 2
    d = obj.__dict__     # the instance's dict from here on
    assert Site('a', 'get').get(obj) == 2
    assert Site('shared', 'get').get(obj) == 'class'
    Site('a', 'set').set(obj, 3)
    Site('shared', 'set').set(obj, 'own')
    assert d == {'a': 3, 'shared': 'own'}
    assert Site('shared', 'get').get(obj) == 'own'
    assert Site('shared', 'get').get(first) == 'class'
    obj.__dict__ = {'a': 4}
    assert Site('a', 'get').get(obj) == 4
    assert Site('shared', 'get').get(obj) == 'class'
    with pytest.raises(AttributeError):
        Site('missing', 'get').get(obj)


def _read(read, obj):
    try:
        return read(obj)
    except AttributeError as e:
        return 'AttributeError: {}'.format(e)


@pytest.mark.parametrize('change', [
    None, 'value replaced', 'key deleted', 'key new to the class',
    'non-str key'])
def test_read_from_the_dict_made_from_the_instances_values(change):
    # Asking for ``__dict__`` makes a dict that takes over the instance's
    # values, split on the class's key table until something makes it a
    # table of its own.
    class Node:
        shared = 'class'

    first = Node()
    first.a, first.b = 1, 2
    obj = Node()
    obj.a, obj.b = 3, 4
    names = ('a', 'b', 'shared', 'c')
    sites = {n: Site(n, 'get') for n in names}
    for n in names:
        _read(sites[n].get, first)
    d = obj.__dict__
    if change == 'value replaced':
        d['a'] = 'new'
    elif change == 'key deleted':
        del d['a']
    elif change == 'key new to the class':
        d['c'] = 5
    elif change == 'non-str key':
        d[1] = 'one'
    for n in names:
        assert _read(sites[n].get, obj) == _read(
            lambda o: getattr(o, n), obj)
        assert _read(sites[n].get, first) == _read(
            lambda o: getattr(o, n), first)


def test_many_classes_through_one_site():
    # More classes than ways, so that some share one: each still reads and
    # writes its own instances' attributes, in any order of access.
    classes = [type('C{}'.format(i), (), {'k': i}) for i in range(40)]
    objs = [cls() for cls in classes]
    get, put = Site('v', 'get'), Site('v', 'set')
    for rounds in range(3):
        for i, obj in enumerate(objs):
            put.set(obj, (i, rounds))
        for i in reversed(range(len(objs))):
            assert get.get(objs[i]) == (i, rounds)
            assert objs[i].__dict__ == {'v': (i, rounds)}
            assert Site('k', 'get').get(objs[i]) == i


def test_stores_once_the_shared_key_table_is_full():
    # CPython 3.11 shrinks a class's room for new shared keys with each
    # instance made, so in a program that makes many instances before
    # setting their later attributes those go to a dict per instance (as
    # VariableNode's ``_rank`` does in a model's graph). Stores through the
    # sites leave what generic stores leave, in either layout.
    def run(store):
        cls = type('Node', (), {})
        objs = [cls() for _ in range(64)]
        for i, obj in enumerate(objs):
            for name in ('a', 'b', 'c', 'd', 'e')[:1 + i % 5]:
                store(obj, name, (name, i))
        return [list(vars(obj).items()) for obj in objs]

    sites = {name: Site(name, 'set') for name in 'abcde'}
    generic = run(setattr)
    cached = run(lambda obj, name, value: sites[name].set(obj, value))
    assert cached == generic
    assert generic[4] == [(n, (n, 4)) for n in 'abcde']


def test_shared_keys_of_classes_without_a_table():
    assert _attrs.shared_keys(int) is None
    assert _attrs.shared_keys(type('Slotted', (), {'__slots__': ('a',)})) \
        is None


@pytest.mark.skipif(not _attrs.FAST, reason='no shared key tables here')
def test_reserved_names_stay_in_the_values_of_later_instances():
    # Names stored only after many instances were made miss a full table;
    # reserved first, they have slots. Either way each instance's attributes
    # and their order are those the program stored, and a data descriptor
    # named in the reservation is neither run nor reserved.
    runs = []

    def run(reserve):
        cls = type('Node', (), {'prop': property(
            lambda self: 0, lambda self, value: runs.append(value))})
        if reserve:
            assert _attrs.reserve(cls, ('a', 'prop', 'late')) == (
                ('a', 'late'), 30 - 1 - 2)
        objs = [cls() for _ in range(40)]
        for i, obj in enumerate(objs):
            obj.a = i
        for i, obj in enumerate(objs[::2]):
            obj.late = -i
        return cls, objs

    plain_cls, plain = run(False)
    reserved_cls, reserved = run(True)
    assert runs == []
    assert _attrs.shared_keys(plain_cls) == (('a',), 0)
    assert [_attrs.keeps_values(o) for o in plain] == [False, True] * 20
    assert all(_attrs.keeps_values(o) for o in reserved)
    assert ([list(vars(o).items()) for o in reserved]
            == [list(vars(o).items()) for o in plain])
    assert list(vars(reserved[0]).items()) == [('a', 0), ('late', 0)]
