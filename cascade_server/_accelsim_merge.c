/* The hot loop of cascade_server/accelsim_log.py, compiled: reading a stats block's lines into
 * the block's dict.
 *
 * `read_block_lines` and `parse_value` do exactly what the functions of the same names in
 * accelsim_log.py do: those are the specification (their docstrings say the rules), and
 * tests/server/test_accelsim_merge.py runs both on the same generated input. Why C: every stats
 * line is kept, so each of a block's ~2,000 lines costs a dict entry, most of them under a
 * numbered name, and in Python that loop ran at about half the speed of the parser that kept
 * only first occurrences. Built when a C compiler is present (an optional extension, see
 * setup.py); the parser uses the Python functions otherwise.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *SEP; /* " = " */

/* Shrink [*start, *end) of s past the whitespace str.strip() removes. */
static void
strip_bounds(PyObject *s, Py_ssize_t *start, Py_ssize_t *end)
{
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    while (*start < *end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, *start)))
        (*start)++;
    while (*end > *start && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, *end - 1)))
        (*end)--;
}

/* Character classes of the ASCII range, for has_any (a table: this runs on every value). */
enum { NUMBER_START = 1, NOT_IN_NUMBER = 2, BLANK = 4 };
static unsigned char ascii_class[128];

static void
init_ascii_class(void)
{
    for (const char *c = "0123456789+-.nNiI"; *c; c++)
        ascii_class[(unsigned char)*c] |= NUMBER_START;
    for (const char *c = " ,_"; *c; c++) /* what parse_value refuses before float() */
        ascii_class[(unsigned char)*c] |= NOT_IN_NUMBER;
    for (const char *c = " \t"; *c; c++) /* never inside a `key=value` line */
        ascii_class[(unsigned char)*c] |= BLANK;
}

/* 1 when s[start:end] holds a character of the class. */
static int
has_any(PyObject *s, Py_ssize_t start, Py_ssize_t end, unsigned char class)
{
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (ch < 128 && (ascii_class[ch] & class))
            return 1;
    }
    return 0;
}

/* parse_value(raw[start:]): a float when the stripped text is a number, else the stripped
 * text. A new reference, NULL on error. */
static PyObject *
value_of(PyObject *raw, Py_ssize_t start)
{
    Py_ssize_t end = PyUnicode_GET_LENGTH(raw);
    strip_bounds(raw, &start, &end);
    /* Cheap rejections first, as in Python: float() failing costs more than the checks. */
    if (start == end || !has_any(raw, start, start + 1, NUMBER_START)
            || has_any(raw, start, end, NOT_IN_NUMBER))
        return PyUnicode_Substring(raw, start, end);
    Py_ssize_t number_end = PyUnicode_READ_CHAR(raw, end - 1) == '%' ? end - 1 : end;
    if (PyUnicode_IS_ASCII(raw)) {
        /* float(str) strips whitespace and reads the rest with PyOS_string_to_double; do the
         * same in place, without making the substring. The text after the number is a '%',
         * whitespace or the string's end, so it never reads on past number_end. */
        const char *text = (const char *)PyUnicode_DATA(raw) + start;
        Py_ssize_t length = number_end - start;
        while (length > 0 && Py_ISSPACE(text[length - 1]))
            length--;
        char *parsed_to;
        double x = PyOS_string_to_double(text, &parsed_to, NULL);
        if (x == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_ValueError))
                return NULL;
            PyErr_Clear();
        }
        else if (parsed_to == text + length)
            return PyFloat_FromDouble(x);
        return PyUnicode_Substring(raw, start, end);
    }
    PyObject *number_text = PyUnicode_Substring(raw, start, number_end);
    if (number_text == NULL)
        return NULL;
    PyObject *number = PyFloat_FromString(number_text); /* what float(str) calls */
    Py_DECREF(number_text);
    if (number != NULL || !PyErr_ExceptionMatches(PyExc_ValueError))
        return number;
    PyErr_Clear();
    return PyUnicode_Substring(raw, start, end);
}

static PyObject *
parse_value(PyObject *module, PyObject *raw)
{
    if (!PyUnicode_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "parse_value expects a str");
        return NULL;
    }
    return value_of(raw, 0);
}

/* The caches' bounds, the same as accelsim_log's (tests/server/test_accelsim_merge.py checks):
 * lines cached, keys whose names are cached, the longest line cached (real stats lines are
 * under 150 characters; a longer one is read each time, so the cache's bytes are bounded too),
 * the longest key whose names are cached, and a key's names cached up to `<key>#64` (real
 * blocks repeat a key a few dozen times, once per memory partition or DRAM channel; past that
 * they are made each time). A full cache takes nothing more until the parser clears it. */
#define LINE_CACHE_LIMIT 50000
#define KEYS_CACHED_LIMIT 2000
#define CACHED_LINE_MAX 200
#define CACHED_KEY_MAX 100
#define NAMES_CACHED_PER_KEY 64
/* A longer line is no stats line (real ones are under 150 characters): it is not read, so an
 * open block's bytes are bounded as well as its keys. The same as accelsim_log's. */
#define STATS_LINE_MAX 1024

/* The key's names [key, key#2, key#3, ...] (a new reference): from names_cache, else made and
 * kept there while it has room (for a key up to CACHED_KEY_MAX characters). NULL on error. */
static PyObject *
names_of(PyObject *names_cache, PyObject *key)
{
    PyObject *names = PyDict_GetItemWithError(names_cache, key);
    if (names != NULL) {
        if (!PyList_CheckExact(names) || PyList_GET_SIZE(names) == 0
                || !PyUnicode_Check(PyList_GET_ITEM(names, 0))) {
            PyErr_SetString(PyExc_TypeError, "names_cache values must be lists of names");
            return NULL;
        }
        return Py_NewRef(names);
    }
    if (PyErr_Occurred())
        return NULL;
    names = PyList_New(1);
    if (names == NULL)
        return NULL;
    PyList_SET_ITEM(names, 0, Py_NewRef(key));
    if (PyDict_GET_SIZE(names_cache) < KEYS_CACHED_LIMIT
            && PyUnicode_GET_LENGTH(key) <= CACHED_KEY_MAX
            && PyDict_SetItem(names_cache, key, names) < 0)
        Py_CLEAR(names);
    return names;
}

/* What a line with "=" holds, as a new reference: a tuple (value, key), or Py_None when it is
 * neither form or its key is empty. *cacheable is set to 0 for lines so cheap to tell apart
 * that caching them would cost more than reading them again (they often differ every time),
 * and for lines too long to cache. */
static PyObject *
entry_of(PyObject *line, PyObject *names_cache, PyObject *key_eq_value, int *cacheable)
{
    Py_ssize_t length = PyUnicode_GET_LENGTH(line);
    *cacheable = length <= CACHED_LINE_MAX;
    Py_ssize_t sep = PyUnicode_Find(line, SEP, 0, length, 1);
    if (sep == -2)
        return NULL;
    PyObject *key, *value;
    if (sep >= 0) { /* `key = value`, split at the first " = " */
        Py_ssize_t start = 0, end = sep;
        strip_bounds(line, &start, &end);
        if (start == end)
            return Py_NewRef(Py_None);
        key = PyUnicode_Substring(line, start, end);
        value = key == NULL ? NULL : value_of(line, sep + 3);
    }
    else { /* maybe `key=value`: one token, so never a line with a blank inside */
        Py_ssize_t start = 0, end = length;
        strip_bounds(line, &start, &end);
        if (has_any(line, start, end, BLANK)) {
            *cacheable = 0;
            return Py_NewRef(Py_None);
        }
        PyObject *stripped = PyUnicode_Substring(line, start, end);
        if (stripped == NULL)
            return NULL;
        PyObject *pair = PyObject_CallOneArg(key_eq_value, stripped);
        Py_DECREF(stripped);
        if (pair == NULL || pair == Py_None)
            return pair;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2
                || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))
                || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 1))) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_TypeError, "key_eq_value must return None or (str, str)");
            return NULL;
        }
        key = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
        value = value_of(PyTuple_GET_ITEM(pair, 1), 0);
        Py_DECREF(pair);
        if (PyUnicode_GET_LENGTH(key) == 0) {
            Py_DECREF(key);
            Py_XDECREF(value);
            return Py_NewRef(Py_None);
        }
    }
    /* Lines with the same key share one key object (and its hash), the first of its names. */
    PyObject *names = value == NULL ? NULL : names_of(names_cache, key);
    PyObject *entry = names == NULL ? NULL : PyTuple_Pack(2, value, PyList_GET_ITEM(names, 0));
    Py_XDECREF(names);
    Py_XDECREF(key);
    Py_XDECREF(value);
    return entry;
}

/* `<key>#<n>` (the key itself for n = 1), from the key's names when cached: a new reference. */
static PyObject *
nth_name(PyObject *names, PyObject *key, Py_ssize_t n)
{
    if (n <= PyList_GET_SIZE(names))
        return Py_NewRef(PyList_GET_ITEM(names, n - 1));
    if (n > NAMES_CACHED_PER_KEY)
        return PyUnicode_FromFormat("%U#%zd", key, n);
    while (PyList_GET_SIZE(names) < n) { /* lags `repeats` when the cache was cleared */
        PyObject *made = PyUnicode_FromFormat("%U#%zd", key, PyList_GET_SIZE(names) + 1);
        int failed = made == NULL || PyList_Append(names, made) < 0;
        Py_XDECREF(made);
        if (failed)
            return NULL;
    }
    return Py_NewRef(PyList_GET_ITEM(names, n - 1));
}

/* Put value in the block under key the first time, else under `<key>#<n>` with the next
 * number not taken, remembered in `repeats`; each key's names are made once, in names_cache.
 * 0, or -1 on error. */
static int
add_to_block(PyObject *block, PyObject *repeats, PyObject *names_cache, PyObject *key,
             PyObject *value)
{
    Py_ssize_t size = PyDict_GET_SIZE(block);
    if (PyDict_SetDefault(block, key, value) == NULL)
        return -1;
    if (PyDict_GET_SIZE(block) != size) /* the key's first time */
        return 0;
    PyObject *names = names_of(names_cache, key); /* held: dict lookups may run code */
    if (names == NULL)
        return -1;
    Py_ssize_t n = 1;
    PyObject *last = PyDict_GetItemWithError(repeats, key), *name = NULL;
    if (last != NULL)
        n = PyLong_AsSsize_t(last);
    int taken = PyErr_Occurred() ? -1 : 1; /* the lookup or the count failed, else search */
    if (n < 1 || n > PyDict_GET_SIZE(block))
        n = 1; /* no count (a number is never past the block's size): `repeats` is only a cache,
                * and the search below finds the number */
    while (taken == 1) { /* a key of that name exists, or `repeats` is cold */
        Py_XDECREF(name);
        name = nth_name(names, key, ++n);
        taken = name == NULL ? -1 : PyDict_Contains(block, name);
    }
    PyObject *count = taken < 0 ? NULL : PyLong_FromSsize_t(n);
    int failed = count == NULL || PyDict_SetItem(repeats, key, count) < 0
        || PyDict_SetItem(block, name, value) < 0;
    Py_XDECREF(count);
    Py_XDECREF(name);
    Py_DECREF(names);
    return failed ? -1 : 0;
}

/* 1 when the line starts with the ASCII prefix of that length. */
static int
starts_with(PyObject *line, const char *prefix, Py_ssize_t length)
{
    if (PyUnicode_GET_LENGTH(line) < length)
        return 0;
    int kind = PyUnicode_KIND(line);
    const void *data = PyUnicode_DATA(line);
    if (kind == PyUnicode_1BYTE_KIND)
        return memcmp(data, prefix, (size_t)length) == 0;
    for (Py_ssize_t i = 0; i < length; i++)
        if (PyUnicode_READ(kind, data, i) != (Py_UCS4)(unsigned char)prefix[i])
            return 0;
    return 1;
}

static PyObject *
read_block_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "read_block_lines(block, lines, start, max_keys, repeats, "
                                         "line_cache, names_cache, key_eq_value)");
        return NULL;
    }
    PyObject *block = args[0], *lines = args[1], *repeats = args[4], *line_cache = args[5];
    PyObject *names_cache = args[6], *key_eq_value = args[7];
    /* Exactly these types: their C API is what is used (a subclass's methods would not run). */
    if (!PyDict_CheckExact(block) || !PyList_CheckExact(lines) || !PyDict_CheckExact(repeats)
            || !PyDict_CheckExact(line_cache) || !PyDict_CheckExact(names_cache)) {
        PyErr_SetString(PyExc_TypeError, "lines is a list, start and max_keys ints, the others dicts");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[2]), max_keys = PyLong_AsSsize_t(args[3]);
    if ((start == -1 || max_keys == -1) && PyErr_Occurred())
        return NULL;
    /* As Python's range(start, len(lines)) runs for a start past the end; the parser never
     * passes a negative one. */
    start = start < 0 ? 0 : start > PyList_GET_SIZE(lines) ? PyList_GET_SIZE(lines) : start;
    static const char first[] = "kernel_name = ", last[] = "gpgpu_silicon_slowdown = ";
    Py_ssize_t i = start;
    int ended = 0;
    for (; i < PyList_GET_SIZE(lines) && !ended; i++) {
        PyObject *line = PyList_GET_ITEM(lines, i);
        if (!PyUnicode_Check(line)) {
            PyErr_Format(PyExc_TypeError, "lines[%zd] is not a str", i);
            return NULL;
        }
        /* Lines without "=" are neither form (nor a block's first or last line): skip them
         * before hashing them. So are lines too long to be stats lines, except a block end. */
        Py_ssize_t found = PyUnicode_FindChar(line, '=', 0, PyUnicode_GET_LENGTH(line), 1);
        if (found < 0) {
            if (found == -1)
                continue;
            return NULL;
        }
        if (starts_with(line, first, sizeof first - 1))
            break; /* the next block's first line: this block was cut off */
        ended = starts_with(line, last, sizeof last - 1);
        if (PyDict_GET_SIZE(block) >= max_keys || PyUnicode_GET_LENGTH(line) > STATS_LINE_MAX)
            continue;
        Py_INCREF(line); /* the callback in entry_of could drop the list's reference */
        PyObject *entry = PyDict_GetItemWithError(line_cache, line);
        if (entry != NULL) {
            Py_INCREF(entry);
            if (entry != Py_None && !(PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 2
                                      && PyUnicode_Check(PyTuple_GET_ITEM(entry, 1)))) {
                PyErr_SetString(PyExc_TypeError, "line_cache values must be None or (value, key)");
                Py_CLEAR(entry);
            }
        }
        else if (!PyErr_Occurred()) {
            int cacheable;
            entry = entry_of(line, names_cache, key_eq_value, &cacheable);
            if (entry != NULL && cacheable && PyDict_GET_SIZE(line_cache) < LINE_CACHE_LIMIT
                    && PyDict_SetItem(line_cache, line, entry) < 0)
                Py_CLEAR(entry);
        }
        Py_DECREF(line);
        if (entry == NULL)
            return NULL;
        int failed = entry != Py_None && add_to_block(
            block, repeats, names_cache, PyTuple_GET_ITEM(entry, 1), PyTuple_GET_ITEM(entry, 0));
        Py_DECREF(entry);
        if (failed)
            return NULL;
    }
    return Py_BuildValue("(nO)", i, ended ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"read_block_lines", (PyCFunction)(void (*)(void))read_block_lines, METH_FASTCALL,
     "read_block_lines(block, lines, start, max_keys, repeats, line_cache, names_cache, "
     "key_eq_value): see accelsim_log.py."},
    {"parse_value", parse_value, METH_O, "parse_value(raw): see accelsim_log.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_accelsim_merge", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__accelsim_merge(void)
{
    init_ascii_class();
    SEP = PyUnicode_InternFromString(" = ");
    if (SEP == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL || PyModule_AddIntConstant(module, "LINE_CACHE_LIMIT", LINE_CACHE_LIMIT) < 0
            || PyModule_AddIntConstant(module, "KEYS_CACHED_LIMIT", KEYS_CACHED_LIMIT) < 0
            || PyModule_AddIntConstant(module, "CACHED_LINE_MAX", CACHED_LINE_MAX) < 0
            || PyModule_AddIntConstant(module, "CACHED_KEY_MAX", CACHED_KEY_MAX) < 0
            || PyModule_AddIntConstant(module, "STATS_LINE_MAX", STATS_LINE_MAX) < 0
            || PyModule_AddIntConstant(module, "NAMES_CACHED_PER_KEY", NAMES_CACHED_PER_KEY) < 0) {
        Py_XDECREF(module);
        return NULL;
    }
    return module;
}
