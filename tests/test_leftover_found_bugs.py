"""Correctness gaps that earlier bug hunts found and left: tied weights in a jitted method's
``self``, the names in the refusal of a write into a loop carry, non-array ys of scan, and
gradients through loops of zero trips."""
import numpy as np
import pytest

import tracejit as tj
from tracejit import lax, nn
from tracejit.tracer.control_flow import ControlFlowTypeError
from tracejit.tracer.errors import TracerError


# -- tied weights in a jitted method's self ------------------------------------------------

class _Tied(nn.Module):
    """An embedding that is also the output layer's weight (``out.weight = emb``)."""

    def __init__(self):
        self.emb = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
        self.out = nn.Linear(2, 3, bias=False, dtype=np.float64)
        self.out.weight = self.emb

    def forward(self, ids):
        return (self.out(np.tanh(self.emb[ids])) ** 2).sum()

    @tj.jit
    def grads(self, ids):
        return tj.grad(lambda m: m(ids))(self)

    def scale_in_place(self, x):
        self.emb *= 2.0
        return self.out(x)

    def rebind(self, x):
        self.emb = self.emb * 2.0
        return self.out(x) + self.emb.sum()

    jit_scale_in_place = tj.jit(scale_in_place)
    jit_rebind = tj.jit(rebind)


def _untied_loss(e, w, ids):
    """The model's loss with its two uses of the tied weight as two arguments."""
    return ((np.tanh(e[ids]) @ w.T) ** 2).sum()


def test_jitted_method_grad_of_tied_self_sums_both_uses():
    """grad of a tied Module inside one of its jitted methods gives the tied weight one
    gradient, the sum of both uses, as for the Module passed as an argument (each place had
    its own part: self was flattened through its attributes, and the tie was not seen)."""
    m, ids = _Tied(), np.array([0, 2, 2])
    g = m.grads(ids)
    assert g.emb is g.out.weight
    e, w = m.emb, m.out.weight
    untied = tj.grad(_untied_loss, argnums=(0, 1))(e, w, ids)
    np.testing.assert_allclose(g.emb, untied[0] + untied[1], rtol=1e-12)
    eps, fd = 1e-6, np.zeros_like(e)
    for i in np.ndindex(e.shape):
        up, down = e.copy(), e.copy()
        up[i] += eps
        down[i] -= eps
        fd[i] = (_untied_loss(up, up, ids) - _untied_loss(down, down, ids)) / (2 * eps)
    np.testing.assert_allclose(g.emb, fd, rtol=1e-6, atol=1e-9)


def test_jitted_method_writes_through_tied_self_as_eagerly():
    """A jitted method of a tied Module writing into the tied weight in place (self.emb *= 2)
    is seen through its other name within the call, and the caller's one array changes once
    (it was refused: two arguments sharing memory); rebinding one name (self.emb = ...) leaves
    the other the old array, as eagerly."""
    x = np.array([[1.0, -0.5]])
    for method in ("scale_in_place", "rebind"):
        eager, jitted = _Tied(), _Tied()
        for _ in range(2):
            want = getattr(eager, method)(x)
            got = getattr(jitted, "jit_" + method)(x)
            np.testing.assert_allclose(got, want, rtol=1e-12)
            np.testing.assert_array_equal(jitted.emb, eager.emb)
            np.testing.assert_array_equal(jitted.out.weight, eager.out.weight)
            assert (jitted.emb is jitted.out.weight) == (eager.emb is eager.out.weight)


# -- a write into a loop carry names the user's parameter ----------------------------------

def _refusal(fn, *args) -> str:
    with pytest.raises(TracerError) as info:
        tj.jit(fn)(*args)
    return str(info.value)


def test_write_into_loop_carry_error_names_the_body_parameter():
    """The refusal of ``c[i] = v`` into a loop carry or cond operand names the body's own
    parameter (c, carry[1], v) and the function it is (fori_loop's body_fun), not "args1"
    and "scan_body", with the line of the write."""
    def fori(x):
        def body(i, c):
            c[i] = 1.0
            return c
        return lax.fori_loop(0, 2, body, x)

    def scan(x):
        def f(carry, xi):
            carry[1][0] = xi
            return carry, None
        return lax.scan(f, (x, x), np.arange(2.0))[0]

    def cond(x, p):
        def yes(v):
            v[0] = 2.0
            return v
        return lax.cond(p, yes, lambda v: v, x)

    msg = _refusal(fori, np.zeros(2))
    assert "its argument c " in msg and "fori_loop's body_fun" in msg and "args" not in msg
    assert "c[i] = 1.0" in msg
    msg = _refusal(scan, np.zeros(2))
    assert "its argument carry[1] " in msg and "scan's f" in msg and "carry[1][0] = xi" in msg
    msg = _refusal(cond, np.zeros(2), np.bool_(True))
    assert "its argument v " in msg and "cond's true_fun" in msg and "v[0] = 2.0" in msg


# -- scan's ys hold arrays only ------------------------------------------------------------

@pytest.mark.parametrize("y", ["s", object()], ids=["str", "object"])
def test_scan_non_array_y_refused_alike_eagerly_and_under_jit(y):
    """A string (or another object that is not an array or a number) in scan's ys is a
    TypeError naming where it is, eagerly and under jit alike, as in JAX (eagerly a string
    came back as the first step's, an object as an object array; under jit the string came
    back unstacked and the object was refused as a result of "scan_body")."""
    def f(x):
        return lax.scan(lambda c, xi: (c + xi, (xi, y)), 0.0, x)

    for run in (f, tj.jit(f)):
        with pytest.raises(ControlFlowTypeError, match=r"scan: f returns .* in y\[1\], not an "
                                                       r"array") as info:
            run(np.arange(3.0))
        assert isinstance(info.value, TypeError)


# -- gradients through loops of zero trips -------------------------------------------------

def _log_in_loops(y, lax, np):
    c, _ = lax.scan(lambda c, x: (c + np.log(y), None), 0.0 * y, None, length=0)
    return c + lax.fori_loop(0, 0, lambda i, c: c + np.log(y), 0.0 * y)


def test_zero_trip_loop_gradient_of_closed_over_log_matches_jax():
    """A scan of length 0 and a fori_loop(0, 0) whose body takes log(y) of a closed-over y
    have the gradient 0 at y = 0, as in JAX (the log was hoisted before the loop, ran though
    the body never did, and its derivative, 0 times 1/y, made it NaN). A loop that runs still
    differentiates through the hoisted op."""
    y = np.float64(0.0)
    assert tj.grad(lambda y: _log_in_loops(y, lax, np))(y) == 0.0
    assert tj.jit(tj.grad(lambda y: _log_in_loops(y, lax, np)))(y) == 0.0

    def two_trips(y):
        return lax.fori_loop(0, 2, lambda i, c: c + np.log(y), 0.0 * y)
    assert tj.grad(two_trips)(np.float64(4.0)) == pytest.approx(0.5)

    jax = pytest.importorskip("jax")
    assert float(jax.grad(lambda y: _log_in_loops(y, jax.lax, jax.numpy))(0.0)) == 0.0
