/*
 * _fastmoves.c: the C fast path of legal-play generation for services.backgammon.
 *
 * Same rules and the same board layout as movegen.py (the pure-Python reference,
 * which the tests compare this against on every benchmark position): each side is
 * 25 counts, index 0..23 = its own points 1..24, index 24 = its bar; "me" is the
 * player on roll, "them" the opponent.
 *
 * Search: depth-first over the dice (both orders for a mixed roll; for doubles the
 * sources never increase, since any set of equal steps can be replayed from the
 * highest source down). Each leaf is the position after as many dice as could be
 * played; only the deepest leaves are kept, deduplicated by an exact 124-bit key
 * (my 25 counts in 4-bit nibbles + a mask of the opponent blots hit, which
 * determines the opponent side) maintained incrementally while searching.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SLOTS 25
#define BAR 24
#define HIT_SHIFT 36

typedef struct {
    unsigned char me[SLOTS];
    unsigned char them[SLOTS];
} Pos;

typedef struct {
    Pos pos;
    uint64_t k0, k1;
    unsigned char steps[8];
    unsigned char depth;
    unsigned char first_die;
} Found;

typedef struct {
    Pos cur;
    unsigned char start_them[SLOTS]; /* opponent before the play: where the hits are */
    uint64_t k0, k1;
    int outside; /* my checkers not in the home board (bar included) */
    int dice[4];
    int ndice;
    unsigned char steps[8];
    int best;
    int n, cap;
    Found *found;
    int32_t *table; /* index into found, or -1 */
    uint32_t *stamp;
    uint32_t generation;
    int table_bits;
} Search;

/* Shared search state, reused so no call pays for allocation. It is used only while no
 * Python code can run (the GIL is held and nothing calls back into Python): inputs are
 * read before it is touched and results are copied out before Python objects are made,
 * so another thread (or a finalizer run by the garbage collector) can never see it
 * half-way. */
static Search S;

static int
ensure_storage(void)
{
    if (S.found)
        return 0;
    S.cap = 2048;
    S.table_bits = 13;
    S.found = PyMem_Malloc(sizeof(Found) * (size_t) S.cap);
    S.table = PyMem_Malloc(sizeof(int32_t) << S.table_bits);
    S.stamp = PyMem_Calloc((size_t) 1 << S.table_bits, sizeof(uint32_t));
    S.generation = 1;
    if (!S.found || !S.table || !S.stamp) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static inline uint32_t
slot_of(uint64_t k0, uint64_t k1, int bits)
{
    uint64_t h = k0 * 0x9E3779B97F4A7C15ULL ^ (k1 + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    return (uint32_t) (h >> (64 - bits));
}

static void
table_insert(int index)
{
    uint32_t mask = (1u << S.table_bits) - 1;
    uint32_t slot = slot_of(S.found[index].k0, S.found[index].k1, S.table_bits);
    while (S.stamp[slot] == S.generation)
        slot = (slot + 1) & mask;
    S.stamp[slot] = S.generation;
    S.table[slot] = index;
}

/* Double the capacity; returns -1 (memory error set) on failure. */
static int
grow(void)
{
    int cap = S.cap * 2, bits = S.table_bits + 1;
    Found *found = PyMem_Realloc(S.found, sizeof(Found) * (size_t) cap);
    int32_t *table = PyMem_Malloc(sizeof(int32_t) << bits);
    uint32_t *stamp = PyMem_Calloc((size_t) 1 << bits, sizeof(uint32_t));
    if (!found || !table || !stamp) {
        PyMem_Free(table);
        PyMem_Free(stamp);
        if (found)
            S.found = found;
        return -1;
    }
    PyMem_Free(S.table);
    PyMem_Free(S.stamp);
    S.found = found;
    S.table = table;
    S.stamp = stamp;
    S.cap = cap;
    S.table_bits = bits;
    S.generation = 1;
    for (int i = 0; i < S.n; i++)
        table_insert(i);
    return 0;
}

static void
clear_found(void)
{
    S.n = 0;
    if (++S.generation == 0) {
        memset(S.stamp, 0, sizeof(uint32_t) << S.table_bits);
        S.generation = 1;
    }
}

/* Record the current position as a play of `depth` dice; -1 on memory error. */
static int
leaf(int depth)
{
    if (depth < S.best)
        return 0;
    if (depth > S.best) {
        S.best = depth;
        clear_found();
    }
    uint32_t mask = (1u << S.table_bits) - 1;
    uint32_t slot = slot_of(S.k0, S.k1, S.table_bits);
    while (S.stamp[slot] == S.generation) {
        Found *f = &S.found[S.table[slot]];
        if (f->k0 == S.k0 && f->k1 == S.k1)
            return 0;
        slot = (slot + 1) & mask;
    }
    if (S.n >= S.cap) {
        if (grow() < 0)
            return -1;
        return leaf(depth);
    }
    Found *f = &S.found[S.n];
    f->pos = S.cur;
    f->k0 = S.k0;
    f->k1 = S.k1;
    memcpy(f->steps, S.steps, 8);
    f->depth = (unsigned char) depth;
    f->first_die = (unsigned char) S.dice[0];
    S.stamp[slot] = S.generation;
    S.table[slot] = S.n;
    S.n++;
    return 0;
}

static inline void
nibble_add(int index, int64_t delta)
{
    if (index < 16)
        S.k0 += (uint64_t) (delta * ((int64_t) 1 << (4 * index)));
    else
        S.k1 += (uint64_t) (delta * ((int64_t) 1 << (4 * (index - 16))));
}

static int
may_bear_off(int src, int dest)
{
    if (S.outside)
        return 0;
    if (dest == -1)
        return 1;
    for (int i = src + 1; i < 6; i++)
        if (S.cur.me[i])
            return 0;
    return 1;
}

static int search(int depth, int max_src);

/* Move one checker from src by the current die, recurse, undo; -1 on error. */
static int
step_and_search(int depth, int src, int dest, int next_max_src)
{
    unsigned char *me = S.cur.me, *them = S.cur.them;
    int hit_index = -1;

    me[src]--;
    nibble_add(src, -1);
    if (src >= 6)
        S.outside--;
    if (dest >= 0) {
        me[dest]++;
        nibble_add(dest, 1);
        if (dest >= 6)
            S.outside++;
        int t = 23 - dest;
        if (them[t] == 1) {
            hit_index = t;
            them[t] = 0;
            them[BAR]++;
            S.k1 |= (uint64_t) 1 << (HIT_SHIFT + t);
        }
    }
    S.steps[2 * depth] = (unsigned char) (src + 1);
    S.steps[2 * depth + 1] = (unsigned char) (dest < 0 ? 0 : dest + 1);

    int rc = search(depth + 1, next_max_src);

    if (hit_index >= 0) {
        them[hit_index] = 1;
        them[BAR]--;
        S.k1 &= ~((uint64_t) 1 << (HIT_SHIFT + hit_index));
    }
    if (dest >= 0) {
        me[dest]--;
        nibble_add(dest, -1);
        if (dest >= 6)
            S.outside--;
    }
    me[src]++;
    nibble_add(src, 1);
    if (src >= 6)
        S.outside++;
    return rc;
}

static int
search(int depth, int max_src)
{
    if (depth == S.ndice)
        return leaf(depth);
    int die = S.dice[depth];
    int doubles = S.ndice == 4;
    int moved = 0;
    unsigned char *me = S.cur.me, *them = S.cur.them;

    if (me[BAR]) {
        int dest = BAR - die;
        if (them[23 - dest] < 2) {
            moved = 1;
            if (step_and_search(depth, BAR, dest, BAR) < 0)
                return -1;
        }
        return moved ? 0 : leaf(depth);
    }
    int top = max_src > 23 ? 23 : max_src;
    for (int src = top; src >= 0; src--) {
        if (!me[src])
            continue;
        int dest = src - die;
        if (dest >= 0) {
            if (them[23 - dest] >= 2)
                continue;
        } else {
            if (!may_bear_off(src, dest))
                continue;
            dest = -1;
        }
        moved = 1;
        if (step_and_search(depth, src, dest, doubles ? src : BAR) < 0)
            return -1;
    }
    return moved ? 0 : leaf(depth);
}

/* Read a 25-tuple (or other sequence) of checker counts. */
static int
read_side(PyObject *obj, unsigned char *out, const char *name)
{
    PyObject *seq = PySequence_Fast(obj, "a side must be a sequence of 25 counts");
    if (!seq)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != SLOTS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s needs 25 counts (24 points + bar)", name);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    long total = 0;
    for (int i = 0; i < SLOTS; i++) {
        long v = PyLong_AsLong(items[i]);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (v < 0 || v > 15) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "%s has an impossible count %ld", name, v);
            return -1;
        }
        total += v;
        out[i] = (unsigned char) v;
    }
    Py_DECREF(seq);
    if (total > 15) {
        PyErr_Format(PyExc_ValueError, "%s has more than 15 checkers", name);
        return -1;
    }
    return 0;
}

/* Parse (player, opponent, d1, d2) and run the search; -1 with an exception set on error. */
static int
run(PyObject *args)
{
    PyObject *player, *opponent;
    int d1, d2;
    if (!PyArg_ParseTuple(args, "OOii", &player, &opponent, &d1, &d2))
        return -1;
    if (d1 < 1 || d1 > 6 || d2 < 1 || d2 > 6) {
        PyErr_SetString(PyExc_ValueError, "dice must be 1..6");
        return -1;
    }
    /* Read the sides before touching S: reading may run Python code (__index__). */
    Pos start;
    if (read_side(player, start.me, "player") < 0 || read_side(opponent, start.them, "opponent") < 0)
        return -1;
    for (int i = 0; i < 24; i++)
        if (start.me[i] && start.them[23 - i]) {
            PyErr_Format(PyExc_ValueError, "point %d holds checkers of both players", i + 1);
            return -1;
        }
    if (ensure_storage() < 0)
        return -1;
    S.cur = start;
    memcpy(S.start_them, start.them, SLOTS);
    S.k0 = S.k1 = 0;
    S.outside = 0;
    for (int i = 0; i < SLOTS; i++) {
        nibble_add(i, S.cur.me[i]);
        if (i >= 6)
            S.outside += S.cur.me[i];
    }
    S.best = 0;
    clear_found();
    memset(S.steps, 0, sizeof S.steps);
    int high = d1 > d2 ? d1 : d2, low = d1 > d2 ? d2 : d1;
    if (high == low) {
        S.ndice = 4;
        S.dice[0] = S.dice[1] = S.dice[2] = S.dice[3] = high;
        return search(0, BAR);
    }
    S.ndice = 2;
    S.dice[0] = high;
    S.dice[1] = low;
    if (search(0, BAR) < 0)
        return -1;
    S.dice[0] = low;
    S.dice[1] = high;
    if (search(0, BAR) < 0)
        return -1;
    if (S.best == 1) {
        /* Only one die can be played: keep the higher die's plays if there are any. */
        int kept = 0;
        for (int i = 0; i < S.n; i++)
            if (S.found[i].first_die == high)
                S.found[kept++] = S.found[i];
        if (kept)
            S.n = kept;
    }
    return 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 14-character Position ID (opponent first, then the player on roll). */
static void
position_id(const Pos *pos, char *out)
{
    unsigned char key[12] = {0};
    int bit = 0;
    const unsigned char *sides[2] = {pos->them, pos->me};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < SLOTS; i++) {
            for (int c = 0; c < sides[s][i]; c++, bit++)
                key[bit >> 3] |= (unsigned char) (1 << (bit & 7));
            bit++;
        }
    for (int g = 0, o = 0; g < 12; g += 3) {
        uint32_t v = ((uint32_t) key[g] << 16) | ((uint32_t) key[g + 1] << 8) | key[g + 2];
        out[o++] = B64[(v >> 18) & 63];
        out[o++] = B64[(v >> 12) & 63];
        if (o < 14) {
            out[o++] = B64[(v >> 6) & 63];
            out[o++] = B64[v & 63];
        }
    }
}

/* GNU Backgammon's FormatMove (drawboard.c), same output: steps sorted by source then
 * destination, both descending; a checker's consecutive steps joined, keeping an
 * intermediate point only where it hit; equal chains counted as "(n)"; '*' after the
 * first landing on each point that held an opponent blot before the play. */
static int
blot_at(const unsigned char *them, int point)
{
    return point >= 1 && point <= 24 && them[24 - point] > 0;
}

static char *
format_point(char *out, int point)
{
    if (point == 0)
        return memcpy(out, "off", 3), out + 3;
    if (point == 25)
        return memcpy(out, "bar", 3), out + 3;
    if (point > 9)
        *out++ = (char) ('0' + point / 10);
    *out++ = (char) ('0' + point % 10);
    return out;
}

/* Writes the notation of `depth` steps into out (at least TEXT_MAX bytes); returns length. */
static int
format_move(const unsigned char *them, const unsigned char *steps, int depth, char *out)
{
    int rows[4][6], len[4], count[4], n = depth, i, j, k;
    for (i = 0; i < n; i++) {
        rows[i][0] = steps[2 * i];
        rows[i][1] = steps[2 * i + 1];
        len[i] = 2;
    }
    for (i = 1; i < n; i++) /* insertion sort: (source, destination) descending */
        for (j = i; j > 0 && (rows[j][0] > rows[j - 1][0] ||
                              (rows[j][0] == rows[j - 1][0] && rows[j][1] > rows[j - 1][1])); j--)
            for (k = 0; k < 2; k++) {
                int t = rows[j][k];
                rows[j][k] = rows[j - 1][k];
                rows[j - 1][k] = t;
            }
    for (i = 0; i < n; i++)
        for (j = i; j < n; j++)
            if (len[i] && len[j] && rows[i][len[i] - 1] == rows[j][0] && i != j) {
                if (blot_at(them, rows[i][len[i] - 1]))
                    rows[i][len[i]++] = rows[j][1];
                else
                    rows[i][len[i] - 1] = rows[j][1];
                len[j] = 0;
            }
    for (i = 0; i < n; i++)
        count[i] = len[i] ? 1 : 0;
    for (i = 0; i < n; i++)
        for (j = i + 1; len[i] && j < n; j++)
            if (len[j] == len[i] && !memcmp(rows[i], rows[j], sizeof(int) * (size_t) len[i])) {
                count[i]++;
                len[j] = 0;
            }
    char *p = out;
    unsigned marked = 0;
    for (i = 0; i < n; i++) {
        if (!len[i])
            continue;
        if (p != out)
            *p++ = ' ';
        p = format_point(p, rows[i][0]);
        for (k = 1; k < len[i] - 1; k++) {
            *p++ = '/';
            p = format_point(p, rows[i][k]);
            *p++ = '*';
            marked |= 1u << rows[i][k];
        }
        int last = rows[i][len[i] - 1];
        *p++ = '/';
        p = format_point(p, last);
        if (blot_at(them, last) && !(marked & (1u << last))) {
            *p++ = '*';
            marked |= 1u << last;
        }
        if (count[i] > 1) {
            *p++ = '(';
            *p++ = (char) ('0' + count[i]);
            *p++ = ')';
        }
    }
    return (int) (p - out);
}

/* Results copied out of S, so building Python objects never reads shared state. */
#define LOCAL_PLAYS 128
#define TEXT_MAX 96

typedef struct {
    int n;
    Found *found; /* copies of S.found[0..n) */
    char *texts;  /* n * TEXT_MAX bytes of notation, when asked for */
    int *text_len;
    Found local_found[LOCAL_PLAYS];
    char local_texts[LOCAL_PLAYS * TEXT_MAX];
    int local_text_len[LOCAL_PLAYS];
} Copied;

static void
release(Copied *c)
{
    if (c->found != c->local_found) {
        PyMem_Free(c->found);
        PyMem_Free(c->texts);
        PyMem_Free(c->text_len);
    }
}

static int
copy_out(Copied *c, int with_text)
{
    c->n = S.best ? S.n : 0;
    c->found = c->local_found;
    c->texts = c->local_texts;
    c->text_len = c->local_text_len;
    if (c->n > LOCAL_PLAYS) {
        c->found = PyMem_Malloc(sizeof(Found) * (size_t) c->n);
        c->texts = with_text ? PyMem_Malloc((size_t) c->n * TEXT_MAX) : NULL;
        c->text_len = with_text ? PyMem_Malloc(sizeof(int) * (size_t) c->n) : NULL;
        if (!c->found || (with_text && (!c->texts || !c->text_len))) {
            release(c);
            PyErr_NoMemory();
            return -1;
        }
    }
    memcpy(c->found, S.found, sizeof(Found) * (size_t) c->n);
    if (with_text)
        for (int i = 0; i < c->n; i++)
            c->text_len[i] = format_move(S.start_them, c->found[i].steps, c->found[i].depth,
                                         c->texts + (size_t) i * TEXT_MAX);
    return 0;
}

static PyObject *
side_tuple(const unsigned char *side)
{
    PyObject *t = PyTuple_New(SLOTS);
    for (int i = 0; t && i < SLOTS; i++) {
        PyObject *v = PyLong_FromLong(side[i]);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *
steps_tuple(const Found *f)
{
    PyObject *t = PyTuple_New(f->depth);
    for (int i = 0; t && i < f->depth; i++) {
        PyObject *step = Py_BuildValue("(ii)", f->steps[2 * i], f->steps[2 * i + 1]);
        if (!step) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, step);
    }
    return t;
}

static PyObject *
fast_results(PyObject *self, PyObject *args)
{
    Copied c;
    if (run(args) < 0 || copy_out(&c, 0) < 0)
        return NULL;
    PyObject *out = PyTuple_New(c.n);
    for (int i = 0; out && i < c.n; i++) {
        PyObject *text = PyUnicode_New(14, 127);
        if (!text) {
            Py_CLEAR(out);
            break;
        }
        position_id(&c.found[i].pos, (char *) PyUnicode_DATA(text));
        PyTuple_SET_ITEM(out, i, text);
    }
    release(&c);
    return out;
}

static PyObject *
fast_plays(PyObject *self, PyObject *args)
{
    Copied c;
    if (run(args) < 0 || copy_out(&c, 1) < 0)
        return NULL;
    PyObject *out = PyTuple_New(c.n);
    for (int i = 0; out && i < c.n; i++) {
        const Found *f = &c.found[i];
        PyObject *play = PyTuple_New(4);
        if (play) {
            PyTuple_SET_ITEM(play, 0, side_tuple(f->pos.me));
            PyTuple_SET_ITEM(play, 1, side_tuple(f->pos.them));
            PyTuple_SET_ITEM(play, 2, steps_tuple(f));
            PyTuple_SET_ITEM(play, 3, PyUnicode_FromStringAndSize(
                c.texts + (size_t) i * TEXT_MAX, (Py_ssize_t) c.text_len[i]));
        }
        if (!play || !PyTuple_GET_ITEM(play, 0) || !PyTuple_GET_ITEM(play, 1) ||
            !PyTuple_GET_ITEM(play, 2) || !PyTuple_GET_ITEM(play, 3)) {
            Py_XDECREF(play); /* NULL slots are skipped by the tuple's deallocator */
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, i, play);
    }
    release(&c);
    return out;
}

static PyObject *
fast_count(PyObject *self, PyObject *args)
{
    if (run(args) < 0)
        return NULL;
    return PyLong_FromLong(S.best ? S.n : 0);
}

static PyMethodDef methods[] = {
    {"results", fast_results, METH_VARARGS,
     "results(player, opponent, d1, d2) -> tuple of Position IDs after each legal play"},
    {"plays", fast_plays, METH_VARARGS,
     "plays(player, opponent, d1, d2) -> tuple of (player, opponent, steps, notation) after "
     "each legal play: sides as 25-tuples, steps as (from, to) gnubg points"},
    {"count", fast_count, METH_VARARGS,
     "count(player, opponent, d1, d2) -> number of legal plays (0 when none)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastmoves",
    "C fast path of legal-play generation; movegen.py is the reference it must agree with.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__fastmoves(void)
{
    return PyModule_Create(&module);
}
