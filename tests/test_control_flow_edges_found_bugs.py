"""Regressions for bugs found hunting the edges of cond / switch / while_loop / fori_loop /
scan (pytrees, weak types, dtypes, nesting, autodiff), each pinned by one test: eager vs jit
(the interpreter backend is the semantics) vs JAX's rules."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.tracer.control_flow import ControlFlowTypeError


def ijit(f, **kw):
    return tj.jit(f, backend="interpreter", **kw)


# -- weak (Python number) results and carries -------------------------------------------------

def test_cond_branches_returning_a_python_float_and_a_python_int_give_the_float():
    """A weak float beside a weak int is a float (was truncated to the first branch's int:
    cond(p, lambda: 2.5, lambda: 1) gave 2)."""
    f = ijit(lambda x: tj.cond(x[0] > 0, lambda: 2.5, lambda: 1))
    assert float(f(np.ones(2))) == 2.5
    assert float(f(-np.ones(2))) == 1.0
    g = ijit(lambda i: tj.switch(i, [lambda: 1, lambda: 2.5, lambda: True]))
    assert [float(g(np.int32(k))) for k in range(3)] == [1.0, 2.5, 1.0]


def test_cond_python_float_beside_an_int_array_is_an_error_not_truncated():
    """A Python float branch result beside a strong int32 one is a type error naming both (as
    JAX), not silently converted to int32 (1.5 became 1)."""
    f = ijit(lambda x: tj.cond(x[0] > 0, lambda: np.int32(2), lambda: 1.5))
    with pytest.raises(ControlFlowTypeError, match=r"true_fun result\[0\] is i32\[\] but "
                       r"false_fun's is a Python float"):
        f(-np.ones(2))


def test_cond_python_number_takes_a_strong_float_results_dtype():
    """The extension over JAX kept: a Python number beside a float32 result is float32."""
    f = ijit(lambda x: tj.cond(x[0] > 0, lambda: x.astype(np.float32)[0], lambda: 1))
    r = f(-np.ones(2))
    assert r.dtype == np.float32 and r == 1


def test_loop_body_returning_a_python_float_for_an_int_carry_is_an_error_not_truncated():
    """fori_loop(0, 3, lambda i, c: 1.5, int32 carry) was 1 (the 1.5 converted to the
    carry's int32); JAX refuses it, naming the carry."""
    f = ijit(lambda x: tj.fori_loop(0, 3, lambda i, c: 1.5, x))
    with pytest.raises(ControlFlowTypeError, match=r"carry\[0\] changed from i32\[\] to a "
                       r"Python float"):
        f(np.int32(1))


def test_python_float_initial_carry_that_the_body_makes_int_is_an_error_not_truncated():
    """A Python float init whose body returns int32 was truncated to int32 (1.5 -> 1)."""
    f = ijit(lambda x: tj.fori_loop(0, 2, lambda i, c: c.astype(np.int32) + x, 1.5))
    with pytest.raises(ControlFlowTypeError, match=r"carry\[0\] changed from a Python float"):
        f(np.int32(1))


def test_weak_float_carry_whose_body_returns_a_python_int_stays_float():
    """A Python float carry the body replaces by a Python int keeps its float dtype."""
    f = ijit(lambda x: tj.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, 3), (0, 0.5)))
    i, v = f(np.ones(1))
    assert v.dtype == np.float64 and v == 3.0


def test_eager_scan_from_a_python_float_init_stacks_ys_in_the_bodys_dtype_as_jit():
    """Eagerly the first y was the Python 0.0 and np.stack made the ys float64; under jit the
    weak init takes the body's float32, so the ys are float32 both ways."""
    x = np.arange(3, dtype=np.float32)

    def f(x):
        return tj.scan(lambda c, xi: (c + xi, c), 0.0, x)
    eager, jitted = f(x)[1], ijit(f)(x)[1]
    assert eager.dtype == jitted.dtype == np.float32
    np.testing.assert_array_equal(eager, jitted)


def test_scan_body_returning_a_list_pair_works_under_jit_as_eagerly_and_in_jax():
    """f(carry, x) -> [carry, y] (a list) ran eagerly and in JAX but jit refused it with "f
    must return a pair"."""
    x = np.arange(3.0)

    def f(x):
        return tj.scan(lambda c, xi: [c + xi, c], 0.0, x)
    c, ys = ijit(f)(x)
    assert c == 3.0
    np.testing.assert_array_equal(ys, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(f(x)[1], ys)


def test_eager_scan_of_length_zero_gives_ys_the_dtype_the_carry_settles_to_as_jit():
    """A length-0 eager scan traced f once on the Python 0 initial carry, so its ys were int64
    where jit (which settles the weak carry to the body's float32 first) gives float32."""
    x = np.zeros(0, np.float32)

    def f(x):
        return tj.scan(lambda c, xi: (c + xi, (c, xi)), 0, x)
    eager, jitted = f(x)[1], ijit(f)(x)[1]
    assert [y.dtype for y in eager] == [y.dtype for y in jitted] == [np.float32] * 2
    assert [y.shape for y in eager] == [(0,), (0,)]


def test_scan_with_a_negative_length_is_a_clear_error_eagerly_and_under_jit():
    """length=-1 raised an IndexError inside tracejit eagerly and an IR type error under jit;
    both now name the length and the user's line."""
    def f(c):
        return tj.scan(lambda c, _: (c, c), c, None, length=-1)
    for run in (f, ijit(f)):
        with pytest.raises(ControlFlowTypeError, match=r"length=-1 is negative at .*"
                           r"test_control_flow_edges_found_bugs.py"):
            run(1.0)


def test_scan_and_fori_loop_accept_jaxs_unroll_argument():
    """scan(..., unroll=2) and fori_loop(..., unroll=2), as JAX code passes them, were a
    TypeError; unroll changes no result, so it is accepted (and a bad one refused)."""
    x = np.arange(3.0)

    def f(x):
        c, ys = tj.scan(lambda c, xi: (c + xi, c), 0.0, x, unroll=2)
        return c, ys, tj.fori_loop(0, 3, lambda i, c: c * 2, x, unroll=True)
    for run in (f, ijit(f)):
        c, ys, v = run(x)
        assert c == 3.0
        np.testing.assert_array_equal(ys, [0.0, 0.0, 1.0])
        np.testing.assert_array_equal(v, x * 8)
    with pytest.raises(ControlFlowTypeError, match="unroll must be a non-negative int"):
        tj.scan(lambda c, xi: (c, c), 0.0, x, unroll=-1)


# -- ops of closed-over values inside a cond branch -------------------------------------------

def test_grad_through_cond_whose_untaken_branch_takes_log_of_a_closed_over_value_is_finite():
    """cond(y > 0, lambda: np.log(y), lambda: 0 * y) closing over y: log(y) ran outside the
    cond (its operands were all outer values), so at y = 0 its derivative, a zero cotangent
    times 1/y, made the gradient NaN; JAX's is 0, and so is ours now (eagerly and jitted)."""
    def f(y):
        return tj.cond(y > 0, lambda: np.log(y), lambda: y * 0.0)
    assert tj.grad(f)(0.0) == 0.0
    assert ijit(tj.grad(f))(0.0) == 0.0
    assert ijit(tj.grad(f))(2.0) == 0.5


def test_cond_branch_ops_of_closed_over_values_are_inside_the_branch_region():
    """The IR shows the log inside the branch that needs it, not before the cond."""
    ir = str(tj.make_ir(lambda y: tj.cond(y[0] > 0, lambda: np.log(y), lambda: y))(np.ones(2)))
    assert ir.index("log") > ir.index("cond_branch1")


def test_grad_through_switch_in_a_scan_with_closed_over_sqrt_is_finite():
    """Within a loop body too: switch branches close over the scan's consts and carry."""
    def f(w):
        def body(c, x):
            return tj.switch(x, [lambda: c * w, lambda: c + np.sqrt(w)]), None
        return tj.scan(body, 1.0, np.array([0, 0], np.int32))[0]
    np.testing.assert_allclose(ijit(tj.grad(f))(0.0), 0.0)
    np.testing.assert_allclose(ijit(tj.grad(f))(3.0), 6.0)


def test_loop_body_kernels_of_one_source_at_two_ranks_are_compiled_for_each():
    """A flat kernel's source is the same at every rank: a scan body summing to (1, 3) and
    to (1, 1) called one callee, compiled for one rank, with the other's arrays (a crash, or
    values of 1e19)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(x):
        return tj.scan(lambda c, _: (c, (c.sum(0, keepdims=True), c.sum(keepdims=True))),
                       x, None, length=2)
    _, (cols, total) = tj.jit(f, tiered=False)(x)
    np.testing.assert_array_equal(cols, np.broadcast_to(x.sum(0, keepdims=True), (2, 1, 3)))
    np.testing.assert_array_equal(total, np.full((2, 1, 1), x.sum(), np.float32))
