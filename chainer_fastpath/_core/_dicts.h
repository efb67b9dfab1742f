/* Dict reads that stock code repeats on every call (a module's global, the
 * thread's hook dict, the registry's entry of a class), memoized on the
 * dict's version.
 *
 * CPython gives every dict state a version number of its own (PEP 509,
 * ``ma_version_tag``): a new dict takes the next number of one global
 * counter and every change to a dict takes the next one again, so two
 * states never share a number, not even across dicts. While a dict keeps
 * the version a lookup was made at, the lookup would find the same value,
 * still held by the dict; a memo of (dict, version, key, value) answers
 * for it with a few compares. The field is deprecated from 3.12 and gone
 * in 3.14, where the version reads as 0 and every read is a lookup.
 */
#ifndef CFP_DICTS_H
#define CFP_DICTS_H

#include <Python.h>
#include <stdint.h>

#if PY_VERSION_HEX < 0x030E0000
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
static inline uint64_t cfp_dict_version(PyObject *d) {
    return ((PyDictObject *)d)->ma_version_tag;
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#else
static inline uint64_t cfp_dict_version(PyObject *d) {
    (void)d;
    return 0;
}
#endif

/* One lookup remembered: ``dict[key]`` was ``value`` (NULL: absent) while
 * ``dict`` had ``version``. Nothing is owned: the value is the dict's. */
typedef struct {
    PyObject *dict;
    PyObject *key;
    uint64_t version;
    PyObject *value;
} cfp_item_memo;

/* ``dict[key]`` as PyDict_GetItemWithError gives it (borrowed; NULL where
 * absent, or with an exception set where the lookup raised), through the
 * memo ``m``. A key is the memo's only where it is the same object, so a
 * key must either live as long as the memo (a literal) or compare by
 * identity (a class): another key at a dead one's address would otherwise
 * take its answer. */
static inline PyObject *cfp_dict_item(cfp_item_memo *m, PyObject *dict,
                                      PyObject *key) {
    uint64_t version = cfp_dict_version(dict);
    if (m->dict == dict && m->key == key && m->version == version
            && version != 0)
        return m->value;
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (value == NULL && PyErr_Occurred())
        return NULL;
    m->dict = dict;
    m->key = key;
    m->version = version;
    m->value = value;
    return value;
}

/* Memos for a dict read with many keys (a class per node type): a few
 * memos indexed by the key's address. */
#define CFP_KEYED_MEMOS 64

typedef struct {
    cfp_item_memo ways[CFP_KEYED_MEMOS];
} cfp_keyed_memo;

static inline PyObject *cfp_dict_item_keyed(cfp_keyed_memo *m, PyObject *dict,
                                            PyObject *key) {
    size_t i = ((uintptr_t)key >> 4) & (CFP_KEYED_MEMOS - 1);
    return cfp_dict_item(&m->ways[i], dict, key);
}

#endif
