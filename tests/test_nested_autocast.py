"""Nested autocasts, as torch's nested ``with autocast(...)`` blocks: the innermost one decides
the precision of its ops, ``enabled=False`` inside an autocast keeps its ops in the dtypes they
were traced with, and the backward ops of such a region keep its precision too."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj
from tracejit.amp import autocast
from tracejit.ir import dtypes, parse, print_function

F16, F32 = dtypes.float16, dtypes.float32
RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = (RNG.standard_normal((8, 8)) / 3).astype(np.float32)


def matmuls(fn) -> list:
    """The operand dtype of every matmul in ``fn`` and its regions, in order."""
    out = []
    for op in fn.ops:
        for r in op.regions or ():
            out += matmuls(r)
        if op.name == "matmul":
            out.append(op.operands[0].type.dtype)
    return out


def precise(x, w):
    return np.tanh(x @ w).sum()


def mixed(x, w):
    """A float32 part (autocast off) and an autocast part."""
    return autocast(precise, enabled=False)(x, w) + (x @ w).sum()


def test_a_region_with_autocast_disabled_keeps_float32_inside_an_autocast():
    fn = tj.make_ir(autocast(mixed))(X, W)
    assert matmuls(fn) == [F32, F16]
    got = tj.jit(autocast(mixed), backend="numba")(X, W)
    half = (X.astype(np.float16) @ W.astype(np.float16)).astype(np.float32).sum()
    np.testing.assert_allclose(got, precise(X, W) + half, rtol=1e-5)


def test_the_innermost_autocast_decides_the_dtype():
    if dtypes.bfloat16 is None:
        pytest.skip("bfloat16 needs ml_dtypes")

    def outer(x, w):
        return autocast(precise, dtype="bfloat16")(x, w) + (x @ w).sum()

    fn = tj.make_ir(autocast(outer))(X, W)
    assert matmuls(fn) == [dtypes.bfloat16, F16]
    alone = autocast(precise, dtype="bfloat16")(X, W)
    half = autocast(lambda x, w: (x @ w).sum())(X, W)
    np.testing.assert_allclose(tj.jit(autocast(outer))(X, W), alone + half, rtol=1e-6)


def test_autocast_disabled_outside_any_autocast_is_the_function():
    off = autocast(precise, enabled=False)
    assert off(X, W) == precise(X, W)
    assert matmuls(tj.make_ir(off)(X, W)) == [F32]
    assert not any(op.name == "call" for op in tj.make_ir(off)(X, W).ops)


@pytest.mark.parametrize("order", ["autocast(grad)", "grad(autocast)"])
def test_the_backward_ops_of_a_disabled_region_stay_float32(order):
    def loss(w):
        return autocast(precise, enabled=False)(X, w)

    g = (autocast(tj.grad(loss)) if order == "autocast(grad)" else tj.grad(autocast(loss)))
    fn = tj.make_ir(g)(W)
    assert F16 not in matmuls(fn), print_function(fn)
    np.testing.assert_allclose(tj.jit(g, backend="numba")(W), tj.grad(precise, argnums=1)(X, W),
                               rtol=1e-5, atol=1e-6)


def test_the_backward_ops_of_an_inner_autocast_stay_in_its_dtype():
    if dtypes.bfloat16 is None:
        pytest.skip("bfloat16 needs ml_dtypes")

    def loss(w):
        return autocast(precise, dtype="bfloat16")(X, w)

    fn = tj.make_ir(autocast(tj.grad(loss)))(W)
    assert set(matmuls(fn)) == {dtypes.bfloat16}, print_function(fn)


def test_forward_mode_through_a_disabled_region_is_float32():
    def f(w):
        return autocast(precise, enabled=False)(X, w)

    v = np.ones_like(W)
    _, t = tj.jvp(autocast(f), (W,), (v,))
    _, ref = tj.jvp(lambda w: precise(X, w), (W,), (v,))
    np.testing.assert_allclose(t, ref, rtol=1e-5)


def test_a_marked_region_prints_and_parses_back():
    fn = tj.make_ir(autocast(mixed))(X, W)
    text = print_function(fn)
    assert 'autocast="off"' in text
    assert print_function(parse(text)) == text
