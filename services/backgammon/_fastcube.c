/*
 * _fastcube.c: the C fast path of a money-game position evaluation before the roll.
 *
 * One call does what services.analysis.domain.engine.Evaluator does in Python for a
 * money game outside the bear-off: classify the board as GNU Backgammon does (contact
 * when the two rearmost checkers have passed each other's: eval.c ClassifyPosition),
 * call the net it is given (gnubg_nn.probabilities: the rules library imports no net),
 * then Janowski's cubeful equities with gnubg's cube efficiencies and the cube decision.
 * The arithmetic is bearoff_eval.janowski's and the engine's, operation for operation
 * in the same order, so the figures are the Python path's to the last bit (the tests
 * compare the two on random positions); the Python path stays the reference and the
 * fallback when this extension is not built.
 *
 * Board: GNU Backgammon's anBoard layout, (opponent, player on roll), each 25 counts
 * (index 0..23 = that side's points 1..24, 24 = its bar).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define SLOTS 25

/* bearoff_eval.CubeAccess, as the player on roll sees the cube. */
enum { CENTRED = 0, OWNED = 1, UNAVAILABLE = 2, DEAD = 3 };
/* engine.CubeAction, in this order. */
enum { NO_DOUBLE = 0, DOUBLE_TAKE = 1, DOUBLE_PASS = 2, TOO_GOOD = 3 };

static const double CONTACT_CUBE_EFFICIENCY = 0.68;

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

static PyObject *
fast_money(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "money(net, board, plies, access, jacoby)");
        return NULL;
    }
    PyObject *net = args[0], *board = args[1], *plies = args[2];
    long access = PyLong_AsLong(args[3]);
    int jacoby = PyObject_IsTrue(args[4]);
    if ((access == -1 && PyErr_Occurred()) || jacoby < 0)
        return NULL;
    if (access < CENTRED || access > DEAD) {
        PyErr_SetString(PyExc_ValueError, "access must be 0..3");
        return NULL;
    }
    long sides[2][SLOTS];
    PyObject *pair = PySequence_Fast(board, "the board must be (opponent, player)");
    if (!pair)
        return NULL;
    int bad = PySequence_Fast_GET_SIZE(pair) != 2;
    if (bad)
        PyErr_SetString(PyExc_ValueError, "the board must be (opponent, player)");
    else
        bad = read_side(PySequence_Fast_GET_ITEM(pair, 0), sides[0]) < 0 ||
              read_side(PySequence_Fast_GET_ITEM(pair, 1), sides[1]) < 0;
    Py_DECREF(pair);
    if (bad)
        return NULL;

    int their_back = rearmost(sides[0]), my_back = rearmost(sides[1]);
    double efficiency;
    if (my_back < 0 || their_back < 0)
        Py_RETURN_NONE; /* finished: the caller's path */
    if (my_back + their_back > 22) {
        efficiency = CONTACT_CUBE_EFFICIENCY;
    } else if (my_back < 6 && their_back < 6) {
        Py_RETURN_NONE; /* bear-off: the exact figures, the caller's path */
    } else {
        long pips = 0;
        for (int i = 0; i < SLOTS; i++)
            pips += (i + 1) * sides[1][i];
        efficiency = 0.55 + 0.00125 * (double) pips;
        efficiency = efficiency < 0.6 ? 0.6 : efficiency;
        efficiency = 0.7 < efficiency ? 0.7 : efficiency;
    }

    PyObject *net_args[2] = {board, plies};
    PyObject *chances = PyObject_Vectorcall(net, net_args, 2, NULL);
    if (!chances)
        return NULL;
    double c[5];
    PyObject *fast = PySequence_Fast(chances, "the net must return 5 chances");
    if (!fast) {
        Py_DECREF(chances);
        return NULL;
    }
    bad = PySequence_Fast_GET_SIZE(fast) != 5;
    if (bad)
        PyErr_SetString(PyExc_ValueError, "the net must return 5 chances");
    for (int i = 0; !bad && i < 5; i++) {
        c[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        bad = c[i] == -1.0 && PyErr_Occurred();
    }
    Py_DECREF(fast);
    if (bad) {
        Py_DECREF(chances);
        return NULL;
    }

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
    return Py_BuildValue("(Nddddi)", chances, cubeless, cubeful, no_double, double_take, action);
}

static PyMethodDef methods[] = {
    {"money", (PyCFunction) (void (*)(void)) fast_money, METH_FASTCALL,
     "money(net, board, plies, access, jacoby) -> (chances, cubeless, cubeful, no_double, "
     "double_take, action) of the player on roll in a money game, or None in a bear-off or "
     "a finished game. board: (opponent, player); net(board, plies) -> 5 chances; access: "
     "0 centred, 1 owned, 2 the opponent's, 3 dead; action: 0 no double, 1 double/take, "
     "2 double/pass, 3 too good"},
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
    return PyModule_Create(&module);
}
