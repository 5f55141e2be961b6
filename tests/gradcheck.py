"""Finite-difference checkers shared by the autodiff tests (a helper module, not tests)."""
from __future__ import annotations

import contextlib
import functools

import numpy as np

import tracejit as tj

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-7

# Everything here runs on the interpreter: these tests pin down derivatives, not compilation.
ijit = functools.partial(tj.jit, backend="interpreter")


def float_positions(args):
    return [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]


def numeric_grad(f, args, i):
    """Central differences of the scalar f with respect to args[i] (float64)."""
    args = [np.array(a, copy=True) if np.ndim(a) else a for a in args]
    x = np.array(args[i], dtype=np.float64, copy=True, order="C")
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + EPS
        up = float(f(*args[:i], x.copy(), *args[i + 1:]))
        flat[k] = old - EPS
        down = float(f(*args[:i], x.copy(), *args[i + 1:]))
        flat[k] = old
        gflat[k] = (up - down) / (2 * EPS)
    return g


def numeric_jvp(f, args, tangents):
    up = f(*[a + EPS * t if t is not None else a for a, t in zip(args, tangents)])
    down = f(*[a - EPS * t if t is not None else a for a, t in zip(args, tangents)])
    return (np.asarray(up) - np.asarray(down)) / (2 * EPS)


def assert_close(actual, expected, rtol=RTOL, atol=ATOL, what=""):
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, rtol=rtol, atol=atol,
                               err_msg=what)


def projected(f, w):
    """The scalar sum(f(*args) * w): its gradient is the vjp of f with cotangent w."""
    def loss(*args):
        return np.sum(f(*args) * w)
    return loss


def check_grad(f, *args, rtol=RTOL, atol=ATOL, seed=0):
    """grad of sum(f * w) (a vjp with a random cotangent) against central differences."""
    rng = np.random.default_rng(seed)
    out = np.asarray(ijit(f)(*args))
    w = rng.standard_normal(out.shape) if out.shape else 1.0
    loss = projected(f, w)
    pos = float_positions(args)
    grads = ijit(tj.grad(loss, argnums=tuple(pos)))(*args)
    fwd = ijit(loss)
    for i, g in zip(pos, grads):
        assert_close(g, numeric_grad(fwd, args, i), rtol, atol, f"grad of argument {i}")


def check_vjp(f, *args, rtol=RTOL, atol=ATOL, seed=1, backend="interpreter"):
    """tracejit.vjp's cotangents against central differences of the projected function: inside
    a trace (inlined, on the interpreter) and standalone on arrays, where the split forward and
    backward programs run on ``backend``."""
    rng = np.random.default_rng(seed)
    ct = rng.standard_normal(np.shape(ijit(f)(*args)))

    def pulled(args, ct):
        _, pull = tj.vjp(f, *args)
        return pull(ct)

    inlined = ijit(pulled)(tuple(args), ct)
    with _backend(backend):
        standalone = pulled(args, ct)
    fwd = ijit(projected(f, ct))
    for i in float_positions(args):
        expected = numeric_grad(fwd, args, i)
        assert_close(inlined[i], expected, rtol, atol, f"vjp of argument {i}")
        assert_close(standalone[i], expected, rtol, atol, f"standalone vjp of argument {i}")


@contextlib.contextmanager
def _backend(name):
    saved, tj.config.backend = tj.config.backend, name
    try:
        yield
    finally:
        tj.config.backend = saved


def check_jvp(f, *args, rtol=RTOL, atol=ATOL, seed=2):
    """jvp's output tangent against a central difference along a random direction."""
    rng = np.random.default_rng(seed)
    pos = set(float_positions(args))
    tangents = [rng.standard_normal(np.shape(a)) if i in pos else np.zeros_like(a)
                for i, a in enumerate(args)]
    _, t_out = ijit(lambda p, t: tj.jvp(f, p, t))(tuple(args), tuple(tangents))
    expected = numeric_jvp(ijit(f), list(args), [t if i in pos else None
                                                 for i, t in enumerate(tangents)])
    assert_close(t_out, expected, rtol, atol, "jvp")


def check_hvp(f, *args, rtol=1e-4, atol=1e-6, seed=3):
    """Second derivatives: jvp(grad(f)) (Hessian-vector product) and grad(grad(f) . v) against
    central differences of the first derivative."""
    rng = np.random.default_rng(seed)
    x = args[0]
    v = rng.standard_normal(np.shape(x))
    g = ijit(tj.grad(f))

    def g_at(x0):
        return np.asarray(g(x0, *args[1:]))

    expected = (g_at(x + EPS * v) - g_at(x - EPS * v)) / (2 * EPS)
    _, hvp = ijit(lambda x0, v0: tj.jvp(lambda y: tj.grad(f)(y, *args[1:]), (x0,), (v0,)))(
        x, v)
    assert_close(hvp, expected, rtol, atol, "jvp(grad(f))")
    hvp2 = ijit(tj.grad(lambda y: np.sum(tj.grad(f)(y, *args[1:]) * v)))(x)
    assert_close(hvp2, expected, rtol, atol, "grad(grad(f) . v)")
