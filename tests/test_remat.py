"""jit(f, remat="auto"): cheap elementwise residuals recomputed in the backward pass
(ir/passes/remat.py). Mostly the NumPy tier: the pass is the same for every backend."""
from collections import Counter

import numpy as np
import pytest

import tracejit as tj
from tracejit.tracer.pytree import flatten


def _rng():
    return np.random.default_rng(0)


def chain_loss(w1, w2, x):
    t = np.tanh(x @ w1)          # kept: tanh's derivative reads it
    e = np.exp(t)                # read by w2's gradient, after the last layer's backward:
    u = np.tanh(e @ w2)          # recomputed there from t instead of held across it
    return np.sum((u @ w1) ** 2)


def chain_step(w1, w2, x):
    return tj.value_and_grad(chain_loss, argnums=(0, 1))(w1, w2, x)


def chain_args(n=64):
    rng = _rng()
    return [(rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32) for _ in range(3)]


def residual_loss(ws, x):
    h = x
    for w1, w2 in ws:
        h = h + np.maximum(np.tanh(h @ w1) @ w2, 0.0)
    return np.mean(h * h)


def residual_step(ws, x):
    return tj.value_and_grad(residual_loss)(ws, x)


def residual_args(blocks=4, width=64, batch=32):
    rng = _rng()
    ws = [tuple((rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
                for _ in range(2)) for _ in range(blocks)]
    return ws, rng.standard_normal((batch, width)).astype(np.float32)


def record(lowered, name):
    (r,) = [r for r in lowered.passes if r.name == name]
    return r


def count(text, op):
    return sum(line.split("=", 1)[-1].split()[0:1] == [op] for line in text.splitlines()
               if "=" in line)


def assert_bit_identical(a, b):
    la, lb = flatten(a)[0], flatten(b)[0]
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        assert np.asarray(u).dtype == np.asarray(v).dtype
        assert np.array_equal(u, v)


def test_exp_of_kept_tanh_is_recomputed_not_kept():
    args = chain_args()
    low = tj.jit(chain_step, backend="numpy", remat="auto").lower(*args)
    rec = record(low, "remat")
    assert rec.details["values_recomputed"] >= 1 and rec.details["bytes_saved"] > 0
    assert count(low.optimized, "exp") == 2          # forward, and again in the backward
    plain = tj.jit(chain_step, backend="numpy").lower(*args)
    assert count(plain.optimized, "exp") == 1
    assert not [r for r in plain.passes if r.name == "remat"]
    assert "values recomputed" in low.remat and "saved" in low.as_text()


def test_results_and_gradients_bit_identical_numpy_tier():
    for step, args in ((chain_step, chain_args()), (residual_step, residual_args())):
        plain = tj.jit(step, backend="numpy")(*args)
        remat = tj.jit(step, backend="numpy", remat="auto")(*args)
        assert_bit_identical(plain, remat)


def test_results_and_gradients_bit_identical_compiled():
    args = chain_args(32)
    plain = tj.jit(chain_step, tiered=False)(*args)
    remat = tj.jit(chain_step, tiered=False, remat="auto")(*args)
    assert_bit_identical(plain, remat)


def test_arena_peak_lower_with_big_elementwise_residuals():
    args = residual_args()
    low = tj.jit(residual_step, backend="numpy", remat="auto").lower(*args)
    plain = tj.jit(residual_step, backend="numpy").lower(*args)
    rec = record(low, "remat")
    assert rec.details["bytes_saved"] > 0
    assert rec.details["peak_after"] < rec.details["peak_before"]
    new, old = record(low, "arena").details, record(plain, "arena").details
    assert new["arena_bytes"] < old["arena_bytes"]


def test_activations_held_for_the_backward_pass_drop_with_remat():
    """The activation peak (remat.peaks) counts what stays alive unread between two uses (the residuals a
    gradient keeps from its forward pass); recomputing the tanh residuals lowers it."""
    args = residual_args()
    rec = record(tj.jit(residual_step, backend="numpy", remat="auto").lower(*args), "remat")
    before, after = rec.details["activations_before"], rec.details["activations_after"]
    assert 0 < after < before <= rec.details["peak_before"]


def test_matmuls_and_reductions_never_recomputed():
    for step, args in ((chain_step, chain_args()), (residual_step, residual_args())):
        low = tj.jit(step, backend="numpy", remat="auto").lower(*args)
        rec = record(low, "remat")
        before = [r for r in low.passes if r.name == "dce"][-1].after
        assert rec.after is not before                  # it did recompute something
        grown = Counter(op.opdef for op in rec.after.ops)
        grown.subtract(Counter(op.opdef for op in before.ops))
        added = {d for d, n in grown.items() if n > 0}
        assert added and all(n >= 0 for n in grown.values())
        assert {d.category for d in added} <= {"elementwise", "layout"}
        assert not [d for d in grown if d.category in ("matmul", "reduction") and grown[d]]


def test_custom_policy_callable_respected():
    args = chain_args()
    seen = []

    def no_exp(op):
        seen.append(op.opdef.name)
        return op.opdef.name != "exp"

    low = tj.jit(chain_step, backend="numpy", remat=no_exp).lower(*args)
    assert "exp" in seen
    assert count(low.optimized, "exp") == 1
    low = tj.jit(chain_step, backend="numpy", remat=lambda op: False).lower(*args)
    assert record(low, "remat").details["values_recomputed"] == 0
    low = tj.jit(chain_step, backend="numpy", remat=lambda op: op.opdef.name == "exp")
    assert count(low.lower(*args).optimized, "exp") == 2


@pytest.mark.parametrize("bad", ["always", "Auto", 3, True])
def test_invalid_remat_values_give_a_clear_error(bad):
    with pytest.raises(ValueError, match="remat=.*'none', 'auto' or a callable"):
        tj.jit(chain_step, remat=bad)


def test_a_small_cnns_columns_are_rebuilt_from_the_relu_output_in_the_backward_pass():
    """conv -> relu -> max_pool -> conv: the second convolution's im2col columns are rebuilt
    from the pooled relu output, which relu's backward keeps (its derivative reads the result,
    ops.relu). A relu written as where(x <= 0, 0, x) kept only its mask: nothing could be
    rebuilt and the CNN step's activations stayed 41 of 44 MiB (benchmarks/remat.py)."""
    from tracejit.nn import functional as F
    rng = _rng()
    w1 = (rng.standard_normal((8, 1, 3, 3)) / 3).astype(np.float32)
    w2 = (rng.standard_normal((8, 8, 3, 3)) / 8).astype(np.float32)
    x = rng.standard_normal((4, 1, 16, 16)).astype(np.float32)

    def loss(w1, w2, x):
        h = F.max_pool2d(F.relu(F.conv2d(x, w1, padding=1)), 2)
        return np.sum(F.relu(F.conv2d(h, w2, padding=1)) ** 2)

    step = tj.value_and_grad(loss, argnums=(0, 1))
    rec = record(tj.jit(step, backend="numpy", remat="auto").lower(w1, w2, x), "remat")
    assert rec.details["activations_after"] < 0.5 * rec.details["activations_before"]
    assert_bit_identical(tj.jit(step, backend="numpy", remat="auto")(w1, w2, x),
                         tj.jit(step, backend="numpy")(w1, w2, x))
