"""amp.excess_precision: float16/bfloat16 elementwise chains computed in float32 and rounded
once where a value leaves its chain (XLA's and Inductor's default), against NumPy computing
the same chain in float32; without it, NumPy's float16 semantics (a rounding per op)."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.amp import excess_precision
from tracejit.ir import dtypes

F16, F32 = np.float16, np.float32


def chain(x, y):
    return np.tanh(x * y + 0.5 * x) * (1 / (1 + np.exp(-y))) - x / (1 + y * y)


def _inputs(n=500, dtype=F16, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(n).astype(dtype) for _ in range(2))


def _in_float32(fn, *args, dtype=F16):
    """The reference: ``fn`` on the arguments' float32 values, rounded once at the end."""
    out = fn(*(a.astype(F32) for a in args))
    return out.astype(dtype)


def test_chain_rounds_once_as_float32_computation_rounded():
    x, y = _inputs()
    ref = _in_float32(chain, x, y)
    interpreted = tj.jit(excess_precision(chain), backend="interpreter")(x, y)
    assert interpreted.dtype == F16
    np.testing.assert_array_equal(interpreted, ref)
    compiled = tj.jit(excess_precision(chain), tiered=False)(x, y)
    assert compiled.dtype == F16
    # float32 tanh and exp of the kernels are within 2 ulp of NumPy's: after the one rounding
    # to float16 they agree but for a rare tie
    np.testing.assert_allclose(compiled.astype(F32), ref.astype(F32), rtol=2 ** -10, atol=0)
    # NumPy's own float16 rounds each op: a different answer for many elements
    assert np.count_nonzero(chain(x, y) != ref) > 0
    np.testing.assert_array_equal(tj.jit(chain, backend="interpreter")(x, y), chain(x, y))


def test_lower_shows_the_converts_and_float32_ops():
    x, y = _inputs(8)
    ir = tj.jit(excess_precision(chain)).lower(x, y).ir
    assert "dtype=f32" in ir and "dtype=f16" in ir
    body = [line for line in ir.splitlines() if " = " in line and "convert" not in line]
    assert all("f16[8]" not in line for line in body if "tanh" in line or "exp" in line)


def test_a_value_leaving_the_chain_is_rounded_for_all_its_uses():
    """A returned intermediate is rounded, and the op after it reads the rounded value; one
    that stays in the chain is not rounded."""
    def f(x, y):
        a = x * y + x
        return a, a * 3 + y, (x * y) * 3
    x, y = _inputs()
    a, b, c = tj.jit(excess_precision(f), backend="interpreter")(x, y)
    x32, y32 = x.astype(F32), y.astype(F32)
    a_ref = (x32 * y32 + x32).astype(F16)
    np.testing.assert_array_equal(a, a_ref)
    np.testing.assert_array_equal(b, (a_ref.astype(F32) * 3 + y32).astype(F16))
    np.testing.assert_array_equal(c, (x32 * y32 * 3).astype(F16))


def test_a_matmul_reads_the_rounded_value():
    """A non-elementwise op on float16 operands reads the float16 value, as without the
    transform (but the value is the chain's, rounded once)."""
    def f(x, y, w):
        return (x * y + 1) @ w
    x, y = (a.reshape(50, 10) for a in _inputs())
    w = _inputs(30, seed=3)[0].reshape(10, 3)
    rounded = (x.astype(F32) * y.astype(F32) + 1).astype(F16)
    np.testing.assert_array_equal(tj.jit(excess_precision(f), backend="interpreter")(x, y, w),
                                  tj.jit(lambda a, w: a @ w, backend="interpreter")(rounded, w))


def test_a_sum_reads_the_rounded_value():
    def f(x, y):
        return (x * y + 1).sum(axis=0)
    x, y = (a.reshape(50, 10) for a in _inputs())
    rounded = (x.astype(F32) * y.astype(F32) + 1).astype(F16)
    np.testing.assert_array_equal(tj.jit(excess_precision(f), backend="interpreter")(x, y),
                                  tj.jit(lambda a: a.sum(axis=0), backend="interpreter")(rounded))


def test_explicit_astype_float16_still_rounds():
    def f(x, y):
        return (x.astype(F32) * 3).astype(F16) + y * 2
    x, y = _inputs()
    out = tj.jit(excess_precision(f), backend="interpreter")(x, y)
    x32, y32 = x.astype(F32), y.astype(F32)
    np.testing.assert_array_equal(out, ((x32 * 3).astype(F16).astype(F32) + y32 * 2).astype(F16))


def test_comparisons_and_where_read_unrounded_values():
    def f(x, y):
        p = x * y
        return np.where(p > 0.25, p * 2, y), (p > 0.25)
    x, y = _inputs(2000)
    w, m = tj.jit(excess_precision(f), backend="interpreter")(x, y)
    x32, y32 = x.astype(F32), y.astype(F32)
    p = x32 * y32
    np.testing.assert_array_equal(m, p > 0.25)
    np.testing.assert_array_equal(w, np.where(p > 0.25, p * 2, y32).astype(F16))


def test_widening_convert_of_a_chain_value_skips_its_rounding():
    def f(x, y):
        return (x * y + x).astype(np.float64)
    x, y = _inputs()
    out = tj.jit(excess_precision(f), backend="interpreter")(x, y)
    x32, y32 = x.astype(F32), y.astype(F32)
    np.testing.assert_array_equal(out, (x32 * y32 + x32).astype(np.float64))


def test_scan_body_chains_in_float32_carry_rounded_each_step():
    def f(c, xs):
        def step(c, x):
            c = np.tanh(c * 1.5 + x)
            return c, c * 3
        return tj.scan(step, c, xs)
    rng = np.random.default_rng(1)
    c0 = rng.standard_normal(16).astype(F16)
    xs = rng.standard_normal((5, 16)).astype(F16)
    c_out, ys = tj.jit(excess_precision(f), backend="interpreter")(c0, xs)
    c, outs = c0, []
    for x in xs:
        wide = np.tanh(c.astype(F32) * 1.5 + x.astype(F32))
        c = wide.astype(F16)              # the carry leaves the body: rounded, for ys too
        outs.append((c.astype(F32) * 3).astype(F16))
    np.testing.assert_array_equal(c_out, c)
    np.testing.assert_array_equal(ys, np.stack(outs))


def test_composes_with_grad_in_either_order():
    x = _inputs(64)[0]

    def loss(w):
        h = w.astype(F16)
        return np.tanh(h * x + 0.25).astype(F32).sum()

    def loss32(w):
        return np.tanh(w * x.astype(F32) + 0.25).sum()
    w = np.random.default_rng(2).standard_normal(64).astype(F32)
    ref = tj.grad(loss32)(w)
    for g in (tj.jit(tj.grad(excess_precision(loss))), tj.jit(excess_precision(tj.grad(loss)))):
        got = g(w)
        assert got.dtype == F32
        np.testing.assert_allclose(got, ref, atol=2e-2, rtol=2e-2)


def test_float32_functions_are_unchanged():
    x, y = _inputs(dtype=F32)
    np.testing.assert_array_equal(tj.jit(excess_precision(chain), backend="interpreter")(x, y),
                                  tj.jit(chain, backend="interpreter")(x, y))


@pytest.mark.skipif(dtypes.bfloat16 is None, reason="bfloat16 needs ml_dtypes")
def test_bfloat16_chain_rounds_once():
    bf16 = dtypes.bfloat16.np
    x, y = (a.astype(bf16) for a in _inputs(dtype=F32))
    out = tj.jit(excess_precision(chain), backend="interpreter")(x, y)
    assert out.dtype == bf16
    np.testing.assert_array_equal(out, _in_float32(chain, x, y, dtype=bf16))
