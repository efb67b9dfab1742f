/* Instance attributes read and written from C as CPython's specializing
 * interpreter reads and writes them (Python 3.11 and 3.12).
 *
 * A generic ``obj.name`` from C looks ``name`` up on the type (for a
 * descriptor), then in the instance's key table: about 175 instructions.
 * From 3.11 the instances of a Python class keep their attributes in an
 * array of values indexed by their class's shared key table, and the
 * interpreter caches, per site, the class's version and the slot: a few
 * instructions. A ``cfp_attr`` is such a cache for one attribute name, with
 * a few ways so that one site serves several classes (the FunctionNode
 * subclasses an ``apply`` sees). A way is filled only where the result is
 * the generic one's by construction: a heap type with managed instance
 * attributes, the generic ``__getattribute__`` / ``__setattr__``, and no
 * data descriptor of that name on the class; it stays valid while the
 * class's version tag does (any change to the class or its bases makes a
 * new one). An instance with a dict of its own (its ``__dict__`` was asked
 * for) is read and written in that dict, as the generic way does where no
 * data descriptor has the name. Anything else, and any other Python, goes
 * the generic way.
 *
 * The layouts read here are CPython's private ones; _attrs.pyx checks them
 * against the running interpreter at import, and every module using this
 * header takes the fast way only after that check passed
 * (cfp_attr_enable).
 */
#ifndef CFP_ATTRS_H
#define CFP_ATTRS_H

#include <Python.h>
#include <stdint.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000 \
    && !defined(Py_GIL_DISABLED)
#define CFP_ATTR_FAST 1
#else
#define CFP_ATTR_FAST 0
#endif

/* Ways per site: a training step's graph holds a few dozen FunctionNode
 * classes, each stored to at the same sites of ``apply``. */
#define CFP_ATTR_WAY_BITS 5
#define CFP_ATTR_WAYS (1 << CFP_ATTR_WAY_BITS)

typedef struct {
    PyTypeObject *type;        /* borrowed; NULL: an empty way */
    unsigned int version;      /* the type's version tag when filled */
    int generic;               /* 1: this type always takes the generic way */
    Py_ssize_t index;          /* slot in the values; -1: not in the keys */
    void *keys;                /* the shared key table it was found in */
    Py_ssize_t nentries;       /* its number of keys then */
    PyObject *class_value;     /* borrowed: the class's plain attribute of
                                  that name (not a descriptor), or NULL */
} cfp_attr_way;

/* What a cache is for. */
#define CFP_ATTR_GET 0
#define CFP_ATTR_SET 1
#define CFP_ATTR_LOOKUP 2      /* what the class has, shadowed or not */

typedef struct {
    PyObject *name;            /* an interned str, owned */
    int mode;                  /* CFP_ATTR_GET, _SET or _LOOKUP */
    int evict_next;            /* which of two full ways a fill takes */
    cfp_attr_way ways[CFP_ATTR_WAYS];
} cfp_attr;

/* Set once per module, from _attrs.fast_ok(). */
static int cfp_attr_enabled = 0;

static inline void cfp_attr_enable(int ok) { cfp_attr_enabled = ok; }

static inline cfp_attr cfp_attr_make(PyObject *name, int mode)
{
    cfp_attr a;
    memset(&a, 0, sizeof(a));
    Py_INCREF(name);
    PyUnicode_InternInPlace(&name);
    a.name = name;
    a.mode = mode;
    return a;
}

#if CFP_ATTR_FAST

/* The shared key table's header, as dictobject.c lays it out (3.11, 3.12,
 * without free threading). */
typedef struct {
    Py_ssize_t dk_refcnt;
    uint8_t dk_log2_size;
    uint8_t dk_log2_index_bytes;
    uint8_t dk_kind;
    uint32_t dk_version;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
} cfp_keys;

typedef struct {
    PyObject *key;
    PyObject *value;
} cfp_key_entry;

#define CFP_DICT_KEYS_SPLIT 2

static inline int cfp_way_of(PyTypeObject *tp)
{
    return (int)(((uintptr_t)tp * (uintptr_t)0x9E3779B97F4A7C15ULL)
                 >> (8 * sizeof(uintptr_t) - CFP_ATTR_WAY_BITS));
}

/* The instance's values array, or NULL where it has a dict of its own. */
static inline PyObject **cfp_values(PyObject *obj)
{
#if PY_VERSION_HEX < 0x030C0000
    return *(((PyObject ***)obj) - 4);
#else
    char *tagged = *(((char **)obj) - 3);
    return ((uintptr_t)tagged & 1) ? (PyObject **)(tagged + 1) : NULL;
#endif
}

/* The instance's own dict where it has one instead of values, else NULL
 * (a class with managed attributes). */
static inline PyObject *cfp_dict(PyObject *obj)
{
#if PY_VERSION_HEX < 0x030C0000
    return *(((PyObject **)obj) - 3);
#else
    char *tagged = *(((char **)obj) - 3);
    return ((uintptr_t)tagged & 1) ? NULL : (PyObject *)tagged;
#endif
}

/* The values array of ``dict`` where it is a split dict on the key table
 * ``keys``, else NULL. (PyDictValues begins with its values in 3.11 and
 * 3.12.) */
static inline PyObject **cfp_split_values_of(PyObject *dict, void *keys)
{
    PyDictObject *d = (PyDictObject *)dict;
    return ((void *)d->ma_keys == keys && d->ma_values != NULL)
        ? (PyObject **)d->ma_values : NULL;
}

/* A new key's slot appended to the instance's insertion order: the
 * bytes before the values hold the order, the count at [-2]. */
static inline void cfp_values_add_order(PyObject **values, Py_ssize_t ix)
{
    uint8_t *count = ((uint8_t *)values) - 2;
    int n = *count + 1;
    count[-n] = (uint8_t)ix;
    *count = (uint8_t)n;
}

static inline cfp_keys *cfp_shared_keys(PyTypeObject *tp)
{
    return (cfp_keys *)((PyHeapTypeObject *)tp)->ht_cached_keys;
}

static inline cfp_key_entry *cfp_keys_entries(cfp_keys *keys)
{
    return (cfp_key_entry *)(
        keys->dk_indices + ((size_t)1 << keys->dk_log2_index_bytes));
}

static inline Py_ssize_t cfp_keys_index(cfp_keys *keys, PyObject *name)
{
    cfp_key_entry *entries = cfp_keys_entries(keys);
    Py_ssize_t i;
    for (i = 0; i < keys->dk_nentries; i++) {
        if (entries[i].key == name)
            return i;
    }
    return -1;
}

/* The names in the shared key table of ``tp``'s instances, in slot order,
 * and the number of names it still takes: a new ``(names, room)``, or None
 * where ``tp`` keeps no such table. */
static inline PyObject *cfp_shared_key_names(PyTypeObject *tp)
{
    cfp_keys *keys;
    PyObject *names;
    Py_ssize_t i;
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)
            || !(tp->tp_flags & Py_TPFLAGS_MANAGED_DICT)
            || (keys = cfp_shared_keys(tp)) == NULL
            || keys->dk_kind != CFP_DICT_KEYS_SPLIT)
        Py_RETURN_NONE;
    names = PyTuple_New(keys->dk_nentries);
    if (names == NULL)
        return NULL;
    for (i = 0; i < keys->dk_nentries; i++) {
        PyObject *name = cfp_keys_entries(keys)[i].key;
        Py_INCREF(name);
        PyTuple_SET_ITEM(names, i, name);
    }
    return Py_BuildValue("(Nn)", names, keys->dk_usable);
}

/* Fills the way of ``tp`` in ``a``; leaves it empty where the type cannot
 * be cached now (no valid version tag yet). */
static inline void cfp_attr_fill(cfp_attr *a, cfp_attr_way *w,
                                 PyTypeObject *tp)
{
    PyObject *descr;
    cfp_keys *keys;
    w->type = NULL;
    descr = _PyType_Lookup(tp, a->name);    /* also assigns a version tag */
    if (!(tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
            || tp->tp_version_tag == 0)
        return;
    w->type = tp;
    w->version = tp->tp_version_tag;
    w->generic = 1;
    w->index = -1;
    w->class_value = NULL;
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)
            || !(tp->tp_flags & Py_TPFLAGS_MANAGED_DICT))
        return;
    if (a->mode == CFP_ATTR_SET ? tp->tp_setattro != PyObject_GenericSetAttr
                                : tp->tp_getattro != PyObject_GenericGetAttr)
        return;
    keys = cfp_shared_keys(tp);
    if (keys == NULL || keys->dk_kind != CFP_DICT_KEYS_SPLIT)
        return;
    if (a->mode == CFP_ATTR_LOOKUP) {
        w->class_value = descr;
    } else if (descr != NULL) {
        if (Py_TYPE(descr)->tp_descr_set != NULL)
            return;     /* a data descriptor decides, not the instance */
        if (a->mode == CFP_ATTR_GET) {
            if (Py_TYPE(descr)->tp_descr_get != NULL)
                return;     /* a method or the like, bound when read */
            w->class_value = descr;
        }
    }
    w->index = cfp_keys_index(keys, a->name);
    w->keys = keys;
    w->nentries = keys->dk_nentries;
    w->generic = 0;
}

static inline int cfp_way_current(cfp_attr_way *w, PyTypeObject *tp)
{
    /* A name not in the key table yet may enter it (another instance
     * stores it) without a new version tag: looked up again then. */
    return (w->type == tp && w->version == tp->tp_version_tag
            && !(w->index < 0 && !w->generic
                 && ((cfp_keys *)w->keys)->dk_nentries != w->nentries));
}

/* The current way of ``obj``'s class, filled if need be; NULL where the
 * class takes the generic way. A class is kept in its own way or the next
 * one, so that two classes whose ways coincide do not evict each other at
 * every access. */
static inline cfp_attr_way *cfp_attr_way_for(cfp_attr *a, PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj);
    int i = cfp_way_of(tp);
    cfp_attr_way *w = &a->ways[i];
    cfp_attr_way *next = &a->ways[(i + 1) % CFP_ATTR_WAYS];
    if (!cfp_way_current(w, tp)) {
        if (cfp_way_current(next, tp)) {
            w = next;
        } else {
            if (!cfp_attr_enabled)
                return NULL;
            /* Into the next way where the own one holds another class
             * and the next one is empty, holds this class, or is this
             * fill's turn to be replaced. */
            if (w->type != NULL && w->type != tp
                    && (next->type == NULL || next->type == tp
                        || a->evict_next)) {
                w = next;
            }
            a->evict_next = !a->evict_next;
            cfp_attr_fill(a, w, tp);
            if (w->type != tp)
                return NULL;
        }
    }
    return w->generic ? NULL : w;
}

/* The way whose slot holds ``<name>`` for instances of ``obj``'s class,
 * where it is filled and current; NULL otherwise (the slow way decides).
 * A generic way has no slot (index -1). */
static inline cfp_attr_way *cfp_attr_hit(cfp_attr *a, PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj);
    cfp_attr_way *w = &a->ways[cfp_way_of(tp)];
    if (w->type == tp && w->version == tp->tp_version_tag && w->index >= 0)
        return w;
    return NULL;
}

/* The hit inline at every site (the compiler may decline ``inline`` in a
 * large function), the fill and the fallbacks out of line. */
#if defined(__GNUC__)
#define CFP_NOINLINE __attribute__((noinline))
#define CFP_INLINE static inline __attribute__((always_inline))
#else
#define CFP_NOINLINE
#define CFP_INLINE static inline
#endif

static CFP_NOINLINE PyObject *cfp_getattr_slow(PyObject *obj, cfp_attr *a)
{
    cfp_attr_way *w = cfp_attr_way_for(a, obj);
    if (w != NULL) {
        PyObject **values = cfp_values(obj);
        PyObject *v = NULL, *dict;
        if (values != NULL) {
            v = w->index >= 0 ? values[w->index] : NULL;
        } else if ((dict = cfp_dict(obj)) != NULL) {
            /* The instance's dict, then the class's value: the generic
             * read where no data descriptor has the name. A dict made from
             * the instance's values (its ``__dict__`` asked for) keeps
             * them, in the class's key table, while it stays split. */
            if (w->index >= 0 && cfp_split_values_of(dict, w->keys)) {
                v = cfp_split_values_of(dict, w->keys)[w->index];
            } else {
                v = PyDict_GetItemWithError(dict, a->name);
                if (v == NULL && PyErr_Occurred())
                    return NULL;
            }
        } else {
            return PyObject_GetAttr(obj, a->name);
        }
        if (v == NULL)
            v = w->class_value;
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(obj, a->name);
}

/* ``obj.<name>``: a new reference, or NULL with an exception set. */
CFP_INLINE PyObject *cfp_getattr(PyObject *obj, cfp_attr *a)
{
    PyTypeObject *tp = Py_TYPE(obj);
    cfp_attr_way *w = &a->ways[cfp_way_of(tp)];
    if (w->type == tp && w->version == tp->tp_version_tag && !w->generic) {
        PyObject **values = cfp_values(obj);
        if (values != NULL) {
            PyObject *v = w->index >= 0 ? values[w->index] : NULL;
            /* Not the instance's: the class's, while no instance has
             * brought the name into the key table. */
            if (v == NULL && (w->index >= 0 || ((cfp_keys *)w->keys)
                                  ->dk_nentries == w->nentries))
                v = w->class_value;
            if (v != NULL) {
                Py_INCREF(v);
                return v;
            }
        }
    }
    return cfp_getattr_slow(obj, a);
}

static inline void cfp_values_store(PyObject **values, Py_ssize_t index,
                                    PyObject *value)
{
    PyObject *old = values[index];
    Py_INCREF(value);
    values[index] = value;
    if (old == NULL)
        cfp_values_add_order(values, index);
    else
        Py_DECREF(old);
}

static CFP_NOINLINE int cfp_setattr_slow(PyObject *obj, cfp_attr *a,
                                         PyObject *value)
{
    cfp_attr_way *w = cfp_attr_way_for(a, obj);
    if (w != NULL) {
        PyObject **values = cfp_values(obj);
        PyObject *dict;
        if (values != NULL) {
            if (w->index >= 0) {
                cfp_values_store(values, w->index, value);
                return 0;
            }
            /* Not a key yet: the generic store adds it (or gives the
             * instance a dict), and the way is filled again next time. */
        } else if ((dict = cfp_dict(obj)) != NULL) {
            /* The instance's own dict: the generic store where no data
             * descriptor has the name. */
            return PyDict_SetItem(dict, a->name, value);
        }
    }
    return PyObject_SetAttr(obj, a->name, value);
}

/* ``obj.<name> = value``: 0, or -1 with an exception set. */
CFP_INLINE int cfp_setattr(PyObject *obj, cfp_attr *a, PyObject *value)
{
    cfp_attr_way *w = cfp_attr_hit(a, obj);
    if (w != NULL) {
        PyObject **values = cfp_values(obj);
        if (values != NULL) {
            cfp_values_store(values, w->index, value);
            return 0;
        }
    }
    return cfp_setattr_slow(obj, a, value);
}

/* 1 where the cached way shows that the class of ``obj`` has ``original``
 * as ``<name>`` and the instance no attribute of that name (a LOOKUP
 * cache); 0 where it does not show it (look the generic way). */
static inline int cfp_class_has(PyObject *obj, cfp_attr *a,
                                PyObject *original)
{
    cfp_attr_way *w = cfp_attr_way_for(a, obj);
    PyObject **values;
    if (w == NULL || w->class_value != original)
        return 0;
    values = cfp_values(obj);
    return values != NULL && (w->index < 0 || values[w->index] == NULL);
}

/* 1 with what ``obj``'s class has as ``<name>`` (borrowed, NULL where it
 * has nothing; before any descriptor's ``__get__``) where a LOOKUP cache
 * serves the class; 0 where it does not (look the generic way). */
static inline int cfp_class_value(PyObject *obj, cfp_attr *a,
                                  PyObject **value)
{
    cfp_attr_way *w = cfp_attr_way_for(a, obj);
    if (w == NULL)
        return 0;
    *value = w->class_value;
    return 1;
}

/* The slot's value for ``obj`` found the cached way, borrowed; NULL where
 * the cache does not serve ``obj`` (for the layout check). */
static inline PyObject *cfp_attr_fast_read(PyObject *obj, cfp_attr *a)
{
    cfp_attr_way *w = cfp_attr_way_for(a, obj);
    PyObject **values = w != NULL ? cfp_values(obj) : NULL;
    return values != NULL && w->index >= 0 ? values[w->index] : NULL;
}


/* What one class was found to have for a set of names (a StockMethods'):
 * while the class keeps its version tag and the shared key table of its
 * instances has not grown, an instance keeping its attributes in a values
 * array has none of the names (none was a key when the memo was taken),
 * so it finds the class's, the ones found then. */
typedef struct {
    PyTypeObject *type;
    unsigned int version;
    Py_ssize_t nentries;
} cfp_class_memo;

static inline int cfp_memo_holds(cfp_class_memo *m, PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj);
    return (m->type == tp && m->version == tp->tp_version_tag
            && cfp_shared_keys(tp)->dk_nentries == m->nentries
            && cfp_values(obj) != NULL);
}

/* Takes the memo for the class of ``obj``, whose instances were just found
 * to have the class's ``names`` (sites); left empty where the class cannot
 * be cached or one of the names is a key of the shared table. */
static inline void cfp_memo_take(cfp_class_memo *m, PyObject *obj,
                                 cfp_attr *names, Py_ssize_t n)
{
    PyTypeObject *tp = Py_TYPE(obj);
    cfp_keys *keys;
    Py_ssize_t i;
    m->type = NULL;
    if (!cfp_attr_enabled || !(tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
            || tp->tp_version_tag == 0
            || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)
            || !(tp->tp_flags & Py_TPFLAGS_MANAGED_DICT))
        return;
    keys = cfp_shared_keys(tp);
    if (keys == NULL || keys->dk_kind != CFP_DICT_KEYS_SPLIT)
        return;
    for (i = 0; i < n; i++) {
        if (cfp_keys_index(keys, names[i].name) >= 0)
            return;
    }
    m->type = tp;
    m->version = tp->tp_version_tag;
    m->nentries = keys->dk_nentries;
}

/* The instance's own dict where it has one instead of values (its
 * ``__dict__`` was asked for), for a class with managed attributes; else
 * NULL: ask the generic way. */
static inline PyObject *cfp_own_dict(PyObject *obj)
{
    if (cfp_attr_enabled
            && (Py_TYPE(obj)->tp_flags & Py_TPFLAGS_MANAGED_DICT))
        return cfp_dict(obj);
    return NULL;
}

#else   /* not CFP_ATTR_FAST: the generic way, always */

static inline PyObject *cfp_own_dict(PyObject *obj)
{
    return NULL;
}

static inline PyObject **cfp_values(PyObject *obj)
{
    return NULL;
}

static inline PyObject *cfp_shared_key_names(PyTypeObject *tp)
{
    Py_RETURN_NONE;
}

static inline PyObject *cfp_dict(PyObject *obj)
{
    return NULL;
}

typedef struct {
    PyTypeObject *type;
} cfp_class_memo;

static inline int cfp_memo_holds(cfp_class_memo *m, PyObject *obj)
{
    return 0;
}

static inline void cfp_memo_take(cfp_class_memo *m, PyObject *obj,
                                 cfp_attr *names, Py_ssize_t n)
{
    m->type = NULL;
}

static inline int cfp_class_has(PyObject *obj, cfp_attr *a,
                                PyObject *original)
{
    return 0;
}

static inline int cfp_class_value(PyObject *obj, cfp_attr *a,
                                  PyObject **value)
{
    return 0;
}

static inline PyObject *cfp_attr_fast_read(PyObject *obj, cfp_attr *a)
{
    return NULL;
}

static inline PyObject *cfp_getattr(PyObject *obj, cfp_attr *a)
{
    return PyObject_GetAttr(obj, a->name);
}

static inline int cfp_setattr(PyObject *obj, cfp_attr *a, PyObject *value)
{
    return PyObject_SetAttr(obj, a->name, value);
}

#endif

#endif
