/*
 * _fastcube.c: the C fast path of the analysis engine's money evaluation before the roll.
 *
 * One call does what engine.Evaluator does in Python for a money game outside the
 * bear-off: read the board (or decode its Position ID), classify it as GNU Backgammon
 * does (contact when the two rearmost checkers have passed each other's: eval.c
 * ClassifyPosition), call the net it is given (gnubg_nn.probabilities; nothing here
 * links the net), then Janowski's cubeful equities with gnubg's cube efficiencies and
 * the cube decision, and build the engine's Chances and PositionEvaluation (named
 * tuples, registered once by configure()). The arithmetic is bearoff_eval.janowski's
 * and the engine's, operation for operation in the same order, so the figures are the
 * Python path's to the last bit (the tests compare the two on random positions); the
 * Python path stays the reference and the fallback when this extension is not built.
 *
 * Board: GNU Backgammon's anBoard layout, (opponent, player on roll), each 25 counts
 * (index 0..23 = that side's points 1..24, 24 = its bar), or its 14-character
 * Position ID (position_id.py: unary counts, opponent first, in base64).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SLOTS 25

/* bearoff_eval.CubeAccess, as the player on roll sees the cube. */
enum { CENTRED = 0, OWNED = 1, UNAVAILABLE = 2, DEAD = 3 };
/* engine.CubeAction, in this order. */
enum { NO_DOUBLE = 0, DOUBLE_TAKE = 1, DOUBLE_PASS = 2, TOO_GOOD = 3 };

static const double CONTACT_CUBE_EFFICIENCY = 0.68;

/* Registered by configure(): the result types and engine.CubeAction's members. */
static PyTypeObject *chances_type, *evaluation_type;
static PyObject *actions[4];
#define EVALUATION_FIELDS 11
#define ID_LENGTH 14

/* A named tuple (a tuple subclass adding no storage) from `n` new references, as
 * tuple.__new__ makes one, without a Python call. */
static PyObject *
named_tuple(PyTypeObject *type, PyObject **items, Py_ssize_t n)
{
    PyObject *tuple = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!items[i])
            goto fail;
    tuple = type->tp_alloc(type, n);
    if (!tuple)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(tuple, i, items[i]);
    return tuple;
fail:
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    return NULL;
}

static int
is_plain_tuple_subclass(PyObject *type)
{
    return PyType_Check(type) && PyType_IsSubtype((PyTypeObject *) type, &PyTuple_Type) &&
           ((PyTypeObject *) type)->tp_basicsize == PyTuple_Type.tp_basicsize &&
           ((PyTypeObject *) type)->tp_itemsize == PyTuple_Type.tp_itemsize;
}

static PyObject *
fast_configure(PyObject *self, PyObject *args)
{
    PyObject *chances, *evaluation, *members;
    if (!PyArg_ParseTuple(args, "OOO", &chances, &evaluation, &members))
        return NULL;
    if (!is_plain_tuple_subclass(chances) || !is_plain_tuple_subclass(evaluation)) {
        PyErr_SetString(PyExc_TypeError, "the result types must be named tuples");
        return NULL;
    }
    if (!PyTuple_Check(members) || PyTuple_GET_SIZE(members) != 4) {
        PyErr_SetString(PyExc_TypeError, "the cube actions must be a tuple of 4");
        return NULL;
    }
    Py_INCREF(chances);
    Py_XSETREF(chances_type, (PyTypeObject *) chances);
    Py_INCREF(evaluation);
    Py_XSETREF(evaluation_type, (PyTypeObject *) evaluation);
    for (int i = 0; i < 4; i++) {
        Py_INCREF(PyTuple_GET_ITEM(members, i));
        Py_XSETREF(actions[i], PyTuple_GET_ITEM(members, i));
    }
    Py_RETURN_NONE;
}

/* base64 digit values, -1 for a character outside the alphabet (filled at import). */
static signed char B64_VALUE[256];

/* position_id.decode: 14 base64 characters (84 bits, the last 4 padding) -> the 10-byte
 * key -> the unary counts, least significant bit first: sides[0] the opponent, sides[1]
 * the player on roll. */
static int
decode_id(PyObject *text, long sides[2][SLOTS])
{
    Py_ssize_t length;
    const char *id = PyUnicode_AsUTF8AndSize(text, &length);
    if (!id)
        return -1;
    if (length != ID_LENGTH)
        goto bad;
    unsigned char key[10];
    for (int g = 0, o = 0; g < ID_LENGTH; g += 4) {
        int n = g + 4 <= ID_LENGTH ? 4 : 2;
        uint32_t v = 0;
        for (int k = 0; k < n; k++) {
            int digit = B64_VALUE[(unsigned char) id[g + k]];
            if (digit < 0)
                goto bad;
            v = v << 6 | (uint32_t) digit;
        }
        if (n == 4) {
            key[o++] = (unsigned char) (v >> 16);
            key[o++] = (unsigned char) (v >> 8);
            key[o++] = (unsigned char) v;
        } else {
            key[o++] = (unsigned char) (v >> 4);
        }
    }
    memset(sides, 0, sizeof(long) * 2 * SLOTS);
    int side = 0, slot = 0;
    for (int byte = 0; byte < 10; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            int set = key[byte] >> bit & 1;
            if (side == 2) {
                if (set)
                    goto bad; /* checkers beyond the 50 slots */
            } else if (set) {
                sides[side][slot]++;
            } else if (++slot == SLOTS) {
                side++;
                slot = 0;
            }
        }
    }
    if (side < 2)
        goto bad; /* the key ends before both sides are described */
    return 0;
bad:
    PyErr_Format(PyExc_ValueError, "not a valid Position ID: %R", text);
    return -1;
}

/* The board the net reads: (opponent, player), two lists of 25 counts. One is kept and
 * refilled in place while this module holds the only references to it (the net reads
 * its argument and lets it go; a net that kept it, or a call made from inside the net,
 * finds it shared and gets a new one): three allocations fewer a position. */
static PyObject *spare_board;

static int
fill_side(PyObject *list, const long side[SLOTS])
{
    for (int i = 0; i < SLOTS; i++) {
        PyObject *count = PyLong_FromLong(side[i]); /* small ints: cached */
        if (!count)
            return -1;
        PyObject *old = PyList_GET_ITEM(list, i);
        PyList_SET_ITEM(list, i, count);
        Py_XDECREF(old);
    }
    return 0;
}

static PyObject *
board_for_net(long sides[2][SLOTS])
{
    PyObject *board = spare_board;
    if (!board || Py_REFCNT(board) != 1 || Py_REFCNT(PyTuple_GET_ITEM(board, 0)) != 1 ||
        Py_REFCNT(PyTuple_GET_ITEM(board, 1)) != 1) {
        board = PyTuple_New(2);
        for (int s = 0; board && s < 2; s++) {
            PyObject *side = PyList_New(SLOTS); /* items NULL until filled */
            if (!side)
                Py_CLEAR(board);
            else
                PyTuple_SET_ITEM(board, s, side);
        }
        if (!board)
            return NULL;
        Py_XSETREF(spare_board, board);
    }
    if (fill_side(PyTuple_GET_ITEM(board, 0), sides[0]) < 0 ||
        fill_side(PyTuple_GET_ITEM(board, 1), sides[1]) < 0) {
        Py_CLEAR(spare_board); /* half filled: never handed out */
        return NULL;
    }
    return Py_NewRef(board); /* shared while the net runs: a nested call makes its own */
}

static int
read_side(PyObject *side, long out[SLOTS])
{
    PyObject *fast = PySequence_Fast(side, "a side must be a sequence of 25 counts");
    if (!fast)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != SLOTS) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "a side must have 25 counts");
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (int i = 0; i < SLOTS; i++) {
        out[i] = PyLong_AsLong(items[i]);
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

static int
rearmost(const long side[SLOTS])
{
    int i = SLOTS - 1;
    while (i >= 0 && !side[i])
        i--;
    return i;
}

/* bearoff_eval._live: the live-cube equity, piecewise linear in p. */
static double
live(double w, double lo, double p, int access, int jacoby)
{
    double take = (lo - 0.5) / (w + lo + 0.5);
    double cash = (lo + 1.0) / (w + lo + 0.5);
    if (access == CENTRED) {
        if (p < take)
            return jacoby ? -1.0 : -lo + (lo - 1.0) * p / take;
        if (p < cash)
            return -1.0 + 2.0 * (p - take) / (cash - take);
        return jacoby ? 1.0 : 1.0 + (w - 1.0) * (p - cash) / (1.0 - cash);
    }
    if (access == OWNED) {
        if (p < cash)
            return -lo + (1.0 + lo) * p / cash;
        return 1.0 + (w - 1.0) * (p - cash) / (1.0 - cash);
    }
    if (p < take)
        return -lo + (lo - 1.0) * p / take;
    return -1.0 + (w + 1.0) * (p - take) / (1.0 - take);
}

/* bearoff_eval.janowski over (win, gammons won, gammons lost), backgammons counted in. */
static double
janowski(double p, double win_gammon, double lose_gammon, int access, int jacoby, double efficiency)
{
    int gammons = !(jacoby && access == CENTRED);
    double dead = (p - (1.0 - p)) + (gammons ? win_gammon - lose_gammon : 0.0);
    if (access == DEAD || !(1e-7 < p && p < 1.0 - 1e-7))
        return dead;
    double w = 1.0 + win_gammon / p;
    double lo = 1.0 + lose_gammon / (1.0 - p);
    return dead * (1.0 - efficiency) + live(w, lo, p, access, jacoby) * efficiency;
}

static PyObject *cube_figures(PyObject *result_chances, const double c[5], double efficiency,
                              PyObject *plies, long access, int jacoby, int exact);

/* One evaluation: a PositionEvaluation, None (bear-off, finished) or NULL (error). */
static PyObject *
evaluate(PyObject *net, PyObject *board, PyObject *plies, long access, int jacoby)
{
    long sides[2][SLOTS];
    int bad;
    if (PyUnicode_Check(board)) {
        if (decode_id(board, sides) < 0)
            return NULL;
        board = NULL; /* built below, only when the net is called */
    } else {
        PyObject *pair = PySequence_Fast(board, "the board must be (opponent, player)");
        if (!pair)
            return NULL;
        bad = PySequence_Fast_GET_SIZE(pair) != 2;
        if (bad)
            PyErr_SetString(PyExc_ValueError, "the board must be (opponent, player)");
        else
            bad = read_side(PySequence_Fast_GET_ITEM(pair, 0), sides[0]) < 0 ||
                  read_side(PySequence_Fast_GET_ITEM(pair, 1), sides[1]) < 0;
        Py_DECREF(pair);
        if (bad)
            return NULL;
        Py_INCREF(board);
    }

    int their_back = rearmost(sides[0]), my_back = rearmost(sides[1]);
    double efficiency;
    if (my_back < 0 || their_back < 0 ||
        (my_back + their_back <= 22 && my_back < 6 && their_back < 6)) {
        Py_XDECREF(board);
        Py_RETURN_NONE; /* finished, or a bear-off (exact figures): the caller's path */
    }
    if (my_back + their_back > 22) {
        efficiency = CONTACT_CUBE_EFFICIENCY;
    } else {
        long pips = 0;
        for (int i = 0; i < SLOTS; i++)
            pips += (i + 1) * sides[1][i];
        efficiency = 0.55 + 0.00125 * (double) pips;
        efficiency = efficiency < 0.6 ? 0.6 : efficiency;
        efficiency = 0.7 < efficiency ? 0.7 : efficiency;
    }

    if (!board && !(board = board_for_net(sides)))
        return NULL;
    PyObject *net_args[2] = {board, plies};
    PyObject *chances = PyObject_Vectorcall(net, net_args, 2, NULL);
    Py_DECREF(board);
    if (!chances)
        return NULL;
    double c[5];
    PyObject *fast = PySequence_Fast(chances, "the net must return 5 chances");
    Py_DECREF(chances);
    if (!fast)
        return NULL;
    bad = PySequence_Fast_GET_SIZE(fast) != 5;
    if (bad)
        PyErr_SetString(PyExc_ValueError, "the net must return 5 chances");
    PyObject *items[EVALUATION_FIELDS];
    for (int i = 0; !bad && i < 5; i++) {
        items[i] = PySequence_Fast_GET_ITEM(fast, i);
        c[i] = PyFloat_AsDouble(items[i]);
        bad = c[i] == -1.0 && PyErr_Occurred();
    }
    if (bad) {
        Py_DECREF(fast);
        return NULL;
    }
    for (int i = 0; i < 5; i++)
        Py_INCREF(items[i]);
    Py_DECREF(fast);
    PyObject *result_chances = named_tuple(chances_type, items, 5);
    if (!result_chances)
        return NULL;
    return cube_figures(result_chances, c, efficiency, plies, access, jacoby, 0);
}

/* engine._money over chances c (a Chances, whose reference this takes): Janowski's
 * no double and double/take, the decision, the cubeless equity, the PositionEvaluation. */
static PyObject *
cube_figures(PyObject *result_chances, const double c[5], double efficiency, PyObject *plies,
             long access, int jacoby, int exact)
{
    PyObject *items[EVALUATION_FIELDS];
    double win = c[0], win_gammon = c[1] + c[2], lose_gammon = c[3] + c[4];
    double no_double = janowski(win, win_gammon, lose_gammon, (int) access, jacoby, efficiency);
    double double_take =
        2.0 * janowski(win, win_gammon, lose_gammon, UNAVAILABLE, 0, efficiency);
    /* engine.decide with double/pass = 1 */
    int action = NO_DOUBLE;
    double cubeful = no_double;
    if (access == CENTRED || access == OWNED) {
        double doubled = 1.0 < double_take ? 1.0 : double_take;
        if (doubled > no_double) {
            action = 1.0 <= double_take ? DOUBLE_PASS : DOUBLE_TAKE;
            cubeful = doubled;
        } else if (no_double >= 1.0 && double_take >= 1.0) {
            action = TOO_GOOD;
        }
    }
    double cubeless = (jacoby && access == CENTRED)
                          ? 2.0 * c[0] - 1.0
                          : 2.0 * c[0] - 1.0 + c[1] - c[3] + c[2] - c[4];
    /* PositionEvaluation(chances, cubeless, cubeful, no_double, double_take, double_pass,
     * action, match_winning_chance=None, plies, exact=False, cube_mwcs=None) */
    items[0] = result_chances;
    items[1] = PyFloat_FromDouble(cubeless);
    items[2] = PyFloat_FromDouble(cubeful);
    items[3] = PyFloat_FromDouble(no_double);
    items[4] = PyFloat_FromDouble(double_take);
    items[5] = PyFloat_FromDouble(1.0);
    items[6] = Py_NewRef(actions[action]);
    items[7] = Py_NewRef(Py_None);
    items[8] = Py_NewRef(plies);
    items[9] = Py_NewRef(exact ? Py_True : Py_False);
    items[10] = Py_NewRef(Py_None);
    return named_tuple(evaluation_type, items, EVALUATION_FIELDS);
}

/* The arguments money() and money_many() share; -1 with an exception set if wrong. */
static int
read_cube(PyObject *const *args, Py_ssize_t nargs, const char *usage, long *access, int *jacoby)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (!evaluation_type) {
        PyErr_SetString(PyExc_TypeError, "configure() the result types first");
        return -1;
    }
    *access = PyLong_AsLong(args[3]);
    *jacoby = PyObject_IsTrue(args[4]);
    if ((*access == -1 && PyErr_Occurred()) || *jacoby < 0)
        return -1;
    if (*access < CENTRED || *access > DEAD) {
        PyErr_SetString(PyExc_ValueError, "access must be 0..3");
        return -1;
    }
    return 0;
}

static PyObject *
fast_money(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long access;
    int jacoby;
    if (read_cube(args, nargs, "money(net, board, plies, access, jacoby)", &access, &jacoby) < 0)
        return NULL;
    return evaluate(args[0], args[1], args[2], access, jacoby);
}

static PyObject *
fast_money_many(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long access;
    int jacoby;
    if (read_cube(args, nargs, "money_many(net, boards, plies, access, jacoby)", &access,
                  &jacoby) < 0)
        return NULL;
    PyObject *boards = PySequence_Fast(args[1], "boards must be a sequence");
    if (!boards)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(boards);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *one = evaluate(args[0], PySequence_Fast_GET_ITEM(boards, i), args[2], access,
                                 jacoby);
        if (!one) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, one);
    }
    Py_DECREF(boards);
    return out;
}

static PyObject *
fast_exact(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long access;
    int jacoby;
    if (read_cube(args, nargs, "exact(chances, efficiency, plies, access, jacoby)", &access,
                  &jacoby) < 0)
        return NULL;
    PyObject *chances = args[0];
    if (Py_TYPE(chances) != chances_type || PyTuple_GET_SIZE(chances) != 5) {
        PyErr_SetString(PyExc_TypeError, "chances must be the engine's Chances");
        return NULL;
    }
    double c[5];
    for (int i = 0; i < 5; i++) {
        c[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(chances, i));
        if (c[i] == -1.0 && PyErr_Occurred())
            return NULL;
    }
    double efficiency = PyFloat_AsDouble(args[1]);
    if (efficiency == -1.0 && PyErr_Occurred())
        return NULL;
    return cube_figures(Py_NewRef(chances), c, efficiency, args[2], access, jacoby, 1);
}

static PyMethodDef methods[] = {
    {"configure", fast_configure, METH_VARARGS,
     "configure(Chances, PositionEvaluation, cube_actions): the engine's result types "
     "(named tuples) and its 4 cube actions (no double, double/take, double/pass, too good)"},
    {"money", (PyCFunction) (void (*)(void)) fast_money, METH_FASTCALL,
     "money(net, board, plies, access, jacoby) -> PositionEvaluation of the player on roll "
     "in a money game before the roll, or None in a bear-off or a finished game. board: "
     "(opponent, player) or its Position ID; net(board, plies) -> 5 chances; access: "
     "0 centred, 1 owned, 2 the opponent's, 3 dead"},
    {"exact", (PyCFunction) (void (*)(void)) fast_exact, METH_FASTCALL,
     "exact(chances, efficiency, plies, access, jacoby) -> PositionEvaluation (exact) from "
     "exact cubeless Chances: money()'s cube arithmetic for the bear-off's exact figures"},
    {"money_many", (PyCFunction) (void (*)(void)) fast_money_many, METH_FASTCALL,
     "money_many(net, boards, plies, access, jacoby) -> list of money(net, board, plies, "
     "access, jacoby) for each board: the candidate plays of a roll in one call"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastcube",
    "C fast path of a money-game evaluation; the analysis engine's Python is the reference.",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__fastcube(void)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    memset(B64_VALUE, -1, sizeof B64_VALUE);
    for (int i = 0; i < 64; i++)
        B64_VALUE[(unsigned char) alphabet[i]] = (signed char) i;
    return PyModule_Create(&module);
}
