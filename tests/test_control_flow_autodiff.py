"""Derivatives through cond, switch, scan, fori_loop and while_loop (autodiff/control_rules.py):
both modes against central finite differences in float64, reverse mode against the same loop
unrolled in Python, forward against reverse, second order; and the error for reverse mode
through a while_loop, whose trip count is dynamic."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj
from tracejit.autodiff import control_rules
from gradcheck import assert_close, check_grad, check_hvp, check_jvp, check_vjp, ijit

rng = np.random.default_rng(0)
W = rng.standard_normal((3, 3)) * 0.5
U = rng.standard_normal((2, 3)) * 0.5
B = rng.standard_normal(3) * 0.1
H0 = rng.standard_normal(3)
XS = rng.standard_normal((4, 2))


def op_names(fn, *args) -> list[str]:
    """Every op name in fn's IR, regions included."""
    def walk(f):
        for o in f.ops:
            yield o.name
            for r in o.regions or ():
                yield from walk(r)
    return list(walk(tj.make_ir(fn)(*args)))


# -- cond and switch ----------------------------------------------------------------------------

def branchy(x, y):
    return tj.cond(np.sum(x) > 0, lambda a, b: np.sin(a) * b, lambda a, b: a * a - b, x, y)


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true_branch", "false_branch"])
def test_cond_derivatives_match_finite_differences_in_both_branches(sign):
    x, y = sign * (np.abs(rng.standard_normal(3)) + 0.5), rng.standard_normal(3)
    assert "cond" in op_names(tj.grad(lambda a, b: np.sum(branchy(a, b))), x, y)
    check_grad(branchy, x, y)
    check_jvp(branchy, x, y)


def three_way(k, x):
    return tj.switch(k, [np.sin, lambda a: a * a, lambda a: np.exp(a) * 2.0], x)


@pytest.mark.parametrize("k", [0, 1, 2, 7])
def test_switch_with_three_branches_differentiates_the_chosen_one(k):
    x = rng.standard_normal(3)
    check_grad(three_way, np.int32(k), x)
    check_jvp(three_way, np.int32(k), x)


# -- scan -------------------------------------------------------------------------------------

def rnn(w, u, b, h0, xs, reverse=False):
    """A tanh cell over xs; w, u, b are closed over (consts); the ys feed the loss."""
    def cell(h, x):
        h = np.tanh(h @ w + x @ u + b)
        return h, np.sum(h * h)
    h, ys = tj.scan(cell, h0, xs, reverse=reverse)
    return np.sum(h) + np.sum(ys * np.arange(1.0, len(xs) + 1))


def rnn_unrolled(w, u, b, h0, xs, reverse=False):
    ys = [None] * len(xs)
    h = h0
    for i in (reversed(range(len(xs))) if reverse else range(len(xs))):
        h = np.tanh(h @ w + xs[i] @ u + b)
        ys[i] = np.sum(h * h)
    return np.sum(h) + np.sum(np.stack(ys) * np.arange(1.0, len(xs) + 1))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn_derivatives_match_finite_differences(reverse):
    def f(*args):
        return rnn(*args, reverse=reverse)
    check_grad(f, W, U, B, H0, XS)
    check_jvp(f, W, U, B, H0, XS)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_grad_equals_the_grad_of_the_unrolled_loop(reverse):
    argnums = (0, 1, 2, 3, 4)
    scanned = ijit(tj.grad(lambda *a: rnn(*a, reverse=reverse), argnums=argnums))
    unrolled = ijit(tj.grad(lambda *a: rnn_unrolled(*a, reverse=reverse), argnums=argnums))
    for g, want in zip(scanned(W, U, B, H0, XS), unrolled(W, U, B, H0, XS)):
        assert_close(g, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stores", [True, False], ids=["storing", "recomputing"])
def test_both_reverse_scans_give_the_grad_of_the_unrolled_loop(stores, monkeypatch):
    monkeypatch.setattr(control_rules, "SCAN_STORES_RESIDUALS", stores)
    argnums = (0, 1, 2, 3, 4)
    scanned = ijit(tj.grad(lambda *a: rnn(*a, reverse=True), argnums=argnums))
    unrolled = ijit(tj.grad(lambda *a: rnn_unrolled(*a, reverse=True), argnums=argnums))
    for g, want in zip(scanned(W, U, B, H0, XS), unrolled(W, U, B, H0, XS)):
        assert_close(g, want, rtol=1e-12, atol=1e-12)
    tanhs = op_names(tj.grad(rnn), W, U, B, H0, XS).count("tanh")
    assert tanhs == (1 if stores else 2)           # recomputed in the backward scan, or not


def scan_ops(fn, *args) -> list:
    return [o for o in tj.make_ir(fn)(*args).ops if o.name == "scan"]


def reads_any(body, sources) -> set:
    """The values of ``body`` computed from ``sources``."""
    seen = set(sources)
    for o in body.ops:
        if any(v in seen for v in o.operands):
            seen.update(o.results)
    return seen


def test_the_backward_scan_reads_stored_residuals_instead_of_recomputing_the_forward():
    forward, backward = scan_ops(tj.grad(rnn, argnums=(0, 1, 2, 3, 4)), W, U, B, H0, XS)
    body = backward.regions[0]
    n, m = backward.attrs["consts"], backward.attrs["carries"]
    from_cotangents = reads_any(body, body.params[n:n + m] + body.params[-1:])
    matmuls = [o for o in body.ops if o.name == "matmul"]
    assert len(matmuls) == 4 and all(o.results[0] in from_cotangents for o in matmuls)
    assert "tanh" not in [o.name for o in body.ops]
    # After h and the ys, stacked per iteration: the incoming and the new h (not the x slices,
    # which the backward scan reads from xs).
    assert [r.type.shape for r in forward.results[2:]] == [(4, 3), (4, 3)]


def scaled(w, h0, xs):
    """The derivative through h / w needs 1 / w, the same in every iteration."""
    def cell(h, x):
        h = np.sin(h / w + x)
        return h, h
    h, ys = tj.scan(cell, h0, xs)
    return np.sum(h) + np.sum(ys * ys)


def test_residuals_of_the_consts_alone_are_computed_once_outside_the_loops():
    w, h0, xs = rng.standard_normal(3) + 3.0, rng.standard_normal(3), rng.standard_normal((4, 3))
    check_grad(scaled, w, h0, xs)
    forward, backward = scan_ops(tj.grad(scaled, argnums=(0, 1, 2)), w, h0, xs)
    body = forward.regions[0]
    per_iteration = reads_any(body, body.params[forward.attrs["consts"]:])
    assert all(r in per_iteration for r in body.results)          # nothing of w alone stacked
    assert "div" not in [o.name for o in backward.regions[0].ops]  # 1 / w before the loop


def test_a_checkpointed_scan_body_is_recomputed_in_the_backward_scan():
    def ckpt_rnn(w, u, b, h0, xs):
        def cell(h, x):
            h = np.tanh(h @ w + x @ u + b)
            return h, np.sum(h * h)
        h, ys = tj.scan(tj.checkpoint(cell), h0, xs)
        return np.sum(h) + np.sum(ys * np.arange(1.0, len(xs) + 1))
    argnums = (0, 1, 2, 3, 4)
    for g, want in zip(ijit(tj.grad(ckpt_rnn, argnums=argnums))(W, U, B, H0, XS),
                       ijit(tj.grad(rnn, argnums=argnums))(W, U, B, H0, XS)):
        assert_close(g, want, rtol=1e-12, atol=1e-12)
    forward = scan_ops(tj.grad(ckpt_rnn), W, U, B, H0, XS)[0]
    assert op_names(tj.grad(ckpt_rnn), W, U, B, H0, XS).count("tanh") == 2
    assert [r.type.shape for r in forward.results[2:]] == [(4, 3)]   # the incoming carries


def test_scan_gradient_is_a_reverse_scan_not_an_unrolled_loop():
    names = op_names(tj.grad(rnn), W, U, B, H0, XS)
    assert names.count("scan") == 2
    ir = tj.make_ir(tj.grad(rnn))(W, U, B, H0, XS)
    scans = [o for o in ir.ops if o.name == "scan"]
    assert [o.attrs["reverse"] for o in scans] == [False, True]
    assert str(tj.ir.parse(str(ir))) == str(ir)                      # printable, parseable


def states(h0, xs):
    def cell(h, x):
        h = np.tanh(h @ W + x @ U)
        return h, h
    return tj.scan(cell, h0, xs)[1]


def test_vjp_of_a_scan_splits_into_forward_and_backward_programs():
    check_vjp(states, H0, XS)


def test_jacfwd_and_jacrev_of_a_scan_agree():
    for argnum in (0, 1):
        fwd = ijit(tj.jacfwd(states, argnums=argnum))(H0, XS)
        rev = ijit(tj.jacrev(states, argnums=argnum))(H0, XS)
        assert fwd.shape == rev.shape == (4, 3) + np.shape((H0, XS)[argnum])
        assert_close(fwd, rev, rtol=1e-12, atol=1e-12)


def power_sum(x, a):
    """fori_loop with static bounds (a scan without xs) carrying the loop index."""
    return np.sum(tj.fori_loop(0, 3, lambda i, v: np.sin(v) * a + i, x))


def test_fori_loop_with_static_bounds_differentiates_in_both_modes():
    x, a = rng.standard_normal(3), rng.standard_normal(3)
    assert "scan" in op_names(power_sum, x, a)
    check_grad(power_sum, x, a)
    check_jvp(power_sum, x, a)

    def unrolled(x, a):
        for i in range(3):
            x = np.sin(x) * a + i
        return np.sum(x)
    for g, want in zip(ijit(tj.grad(power_sum, argnums=(0, 1)))(x, a),
                       ijit(tj.grad(unrolled, argnums=(0, 1)))(x, a)):
        assert_close(g, want, rtol=1e-12, atol=1e-12)


def counted(w):
    """A carry that starts as a constant and picks up w's derivative in the body, beside an
    integer carry and integer ys, which carry none."""
    def cell(c, x):
        i, h = c
        return (i + 1, np.tanh(h * w + x)), i * 2
    (n, h), evens = tj.scan(cell, (0, np.zeros(2)), XS)
    return np.sum(h) * n + np.sum(evens)


def test_a_carry_that_starts_constant_gets_the_derivative_the_body_gives_it():
    check_grad(counted, rng.standard_normal(2))
    check_jvp(counted, rng.standard_normal(2))


def pick(x, k):
    """Branches with an integer result beside the float one."""
    return tj.switch(k, [lambda a: (np.sum(a > 0), np.cos(a)), lambda a: (np.sum(a < 0), a * a)], x)


def test_cond_with_an_integer_result_differentiates_its_float_one():
    x = rng.standard_normal(3)
    for k in (0, 1):
        check_grad(lambda a, i: pick(a, i)[1] * pick(a, i)[0], x, np.int32(k))
        check_jvp(lambda a, i: pick(a, i)[1], x, np.int32(k))


def nested(x, xs):
    """A scan whose body runs a scan over the rows of its slice, both closing over x."""
    def outer(c, row):
        def inner(d, v):
            return d * np.cos(v * x) + v, d * v
        d, ys = tj.scan(inner, c, row)
        return d, np.sum(ys)
    c, ys = tj.scan(outer, x, xs)
    return np.sum(c) + np.sum(ys * ys)


def test_nested_scan_derivatives_match_finite_differences():
    x, xs = rng.standard_normal(2) * 0.5, rng.standard_normal((3, 2, 2)) * 0.5
    check_grad(nested, x, xs)
    check_jvp(nested, x, xs)


def test_second_derivatives_of_a_scan_match_finite_differences():
    def loss(h0, xs):
        return rnn(W, U, B, h0, xs)
    check_hvp(loss, H0, XS)


# -- while_loop ---------------------------------------------------------------------------------

def halve_until_small(x):
    """A dynamic trip count: scale x by 0.5 * cos(x) until its norm is below 0.1."""
    return tj.while_loop(lambda v: np.sum(v * v) > 0.01, lambda v: v * np.cos(v) * 0.5, x)


def test_while_loop_derivatives_in_forward_mode_match_finite_differences():
    x = np.array([1.5, -0.7, 0.9])
    check_jvp(halve_until_small, x)
    jac = ijit(tj.jacfwd(halve_until_small))(x)
    step = 1e-6
    for k in range(3):
        e = np.eye(3)[k] * step
        want = (ijit(halve_until_small)(x + e) - ijit(halve_until_small)(x - e)) / (2 * step)
        assert_close(jac[:, k], want, rtol=1e-5, atol=1e-7)


def test_reverse_mode_through_a_while_loop_says_to_use_fori_loop_or_scan():
    def loss(x, n):
        return np.sum(tj.fori_loop(0, n, lambda i, v: np.sin(v), x))  # traced bound
    with pytest.raises(ValueError) as e:
        ijit(tj.grad(loss))(np.ones(3), np.int64(3))
    msg = str(e.value)
    assert "while_loop" in msg and "fori_loop" in msg and "scan" in msg
    assert "test_control_flow_autodiff.py" in msg
