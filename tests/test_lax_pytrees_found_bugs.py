"""Bugs found comparing tracejit.lax's control flow on pytree carries, weak (Python number)
initial values and zero-trip loops with jax.lax: eagerly, under jit and the interpreter.
Expected values are exact (no jax here)."""
import numpy as np

import tracejit as tj
from tracejit import lax


def ijit(f):
    return tj.jit(f, backend="interpreter")


def _kinds(tree):
    """Each leaf's Python type and dtype, in order."""
    leaves = tree if isinstance(tree, (tuple, list)) else [tree]
    return [(type(x) if type(x) in (bool, int, float) else np.dtype(np.asarray(x).dtype))
            for x in leaves]


def test_eager_fori_loop_of_zero_trips_gives_a_python_number_carry_the_body_s_type():
    """fori_loop(0, 0, lambda i, c: c + 1.5, 0) returned the Python int 0 eagerly, where jit
    (and JAX) give 0.0: the weak carry takes the type the body gives it even if no step runs.
    A float32 the body adds makes a float32, as under jit."""
    x = np.ones(3, np.float32)

    def f(x):
        return lax.fori_loop(0, 0, lambda i, c: (c[0] + 1.5, c[1] + x[i], c[2] + 1), (0, 0, 0))
    got, want = f(x), ijit(f)(x)
    assert got == (0.0, 0.0, 0)
    assert _kinds(got) == [float, np.dtype(np.float32), int]
    assert [np.asarray(w).dtype for w in want] == [np.float64, np.float32, np.int64]
    # a loop that runs is unchanged
    assert lax.fori_loop(0, 2, lambda i, c: c + 1.5, 0) == 3.0


def test_eager_while_loop_that_never_runs_gives_python_number_carries_the_body_s_type():
    x = np.ones(3, np.float32)

    def f(x):
        return lax.while_loop(lambda c: c[0] < 0, lambda c: (c[0] + 1, c[1] + x[0]), (0, 0))
    got, want = f(x), ijit(f)(x)
    assert got == (0, 0.0)
    assert _kinds(got) == [int, np.dtype(np.float32)]
    assert [np.asarray(w).dtype for w in want] == [np.int64, np.float32]


def test_eager_scan_of_length_zero_gives_its_python_number_carry_the_body_s_type():
    """The ys of an eager length-0 scan took the settled dtype already, the carry did not."""
    x = np.zeros(0, np.float32)

    def f(x):
        return lax.scan(lambda c, xi: (c + xi, c), 0, x)
    (c, ys), (jc, jys) = f(x), ijit(f)(x)
    assert c == 0 and np.asarray(c).dtype == np.asarray(jc).dtype == np.float32
    assert ys.dtype == jys.dtype == np.float32 and ys.shape == (0,)


def test_eager_zero_trip_loop_whose_body_cannot_be_traced_returns_its_carry():
    """Settling the carry's type traces the body; one that only runs eagerly (a Python if on
    the carry) keeps the carry as it came, as before."""
    def body(i, c):
        return c + 1 if c > 0 else c - 1
    assert lax.fori_loop(0, 0, body, 0) == 0
    assert type(lax.fori_loop(0, 0, body, 0)) is int


def test_eager_scan_of_length_zero_whose_f_indexes_a_closed_over_array_by_the_carry():
    """The trace that gives a length-0 eager scan its ys' types took the arrays f closes over
    as constants, and table[c] with the traced carry raised a ConcretizationError (length 1
    ran)."""
    table = np.arange(5.0)

    def step(c, _):
        return c + 1, table[c]
    c, ys = lax.scan(step, 0, None, length=0)
    assert c == 0 and ys.shape == (0,) and ys.dtype == np.float64
    c = lax.fori_loop(0, 0, lambda i, c: c + table[i], 0)
    assert c == 0.0 and type(c) is np.float64


def test_eager_scan_whose_y_changes_structure_between_steps_is_an_error_not_relabelled():
    """The eager scan stacked every step's y by the first step's structure: {'b': y} after
    {'a': y} came back as {'a': [...]}, and extra leaves were dropped, silently. Under jit
    (and in JAX) f is traced once, so ys have one structure; eagerly it is now an error."""
    import pytest
    from tracejit.tracer.body_calls import ControlFlowTypeError
    x = np.arange(3.0)

    def renamed(c, xi):
        return c + 1, ({"a": xi} if c == 0 else {"b": xi})

    def grows(c, xi):
        return c + 1, ((xi,) if c == 0 else (xi, xi * 2))
    for f in (renamed, grows):
        with pytest.raises(ControlFlowTypeError, match=r"ys\[1\], but as .* for ys\[0\]"):
            lax.scan(f, 0, x)
    # one structure throughout, None leaves included, reverse too: unchanged
    c, ys = lax.scan(lambda c, xi: (c, (xi, None, {"q": 1})), 0, x, reverse=True)
    np.testing.assert_array_equal(ys[0], x)
    assert ys[1] is None and ys[2]["q"].tolist() == [1, 1, 1]


def test_scan_and_fori_loop_accept_unroll_0_as_jax_does():
    """jax.lax.scan documents unroll as a non-negative int, 0 unrolling the entire loop;
    tracejit refused 0 with a ControlFlowTypeError. unroll changes no result."""
    x = np.arange(3.0)

    def f(x):
        c, ys = lax.scan(lambda c, xi: (c + xi, c), 0.0, x, unroll=0)
        return c, ys, lax.fori_loop(0, 3, lambda i, c: c + x[i], 0.0, unroll=0)
    for run in (f, ijit(f)):
        c, ys, v = run(x)
        assert c == 3.0 and v == 3.0
        np.testing.assert_array_equal(ys, [0.0, 0.0, 1.0])
