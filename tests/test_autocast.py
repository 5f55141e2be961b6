"""tracejit.amp.autocast: mixed precision as an IR transform (tracejit/amp/autocast.py).

What the policy does to a small MLP's loss (read off the traced Function), that the numbers
stay within float16's tolerance of float32's, that gradients of float32 parameters are float32,
that every composition order with jit and grad agrees, and a short training run under
autocast and GradScaler. Most tests run on the NumPy backend ("numpy": the first tier alone,
NumPy's own float16; TRACEJIT_AUTOCAST_BACKEND=numba runs them compiled); the ones
parametrized by BACKENDS run compiled as well.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import tracejit as tj
from tracejit import optim
from tracejit.amp import POLICY, GradScaler, autocast, autocast_function
from tracejit.amp.policy import resolve, table
from tracejit.ir import dtypes
from tracejit.nn import functional as F
from tracejit.tracer.pytree import flatten

F16, F32 = dtypes.float16, dtypes.float32
BACKEND = os.environ.get("TRACEJIT_AUTOCAST_BACKEND", "numpy")
BACKENDS = ["numpy", "numba"]
RTOL = 1e-2     # float16 keeps 11 significant bits; a loss or gradient within 1 % of float32


@pytest.fixture(autouse=True)
def numpy_backend(monkeypatch):
    """Eager transforms (run through jit without a backend argument) use BACKEND."""
    monkeypatch.setattr(tj.config, "backend", BACKEND)


def mlp_loss(p, x, y):
    h = np.maximum(x @ p["w1"] + p["b1"], 0.0)
    return F.cross_entropy(h @ p["w2"] + p["b2"], y)


def mlp_data(seed=0, n=16, d=12, hidden=32, classes=5):
    rng = np.random.default_rng(seed)
    p = {"w1": (rng.standard_normal((d, hidden)) / np.sqrt(d)).astype(np.float32),
         "b1": np.zeros(hidden, np.float32),
         "w2": (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
         "b2": np.zeros(classes, np.float32)}
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, classes, n)
    return p, x, y


def ops_of(fn, *args):
    """The traced Function's ops, as (name, operand dtypes, result dtypes)."""
    f = tj.make_ir(fn)(*args)
    return [(op.name, [v.type.dtype for v in op.operands], [r.type.dtype for r in op.results])
            for op in f.ops], f


def close(a, b, rtol=RTOL, atol=1e-3):
    for u, v in zip(tj.tree_map(np.asarray, a).values() if isinstance(a, dict) else [a],
                    tj.tree_map(np.asarray, b).values() if isinstance(b, dict) else [b]):
        np.testing.assert_allclose(np.asarray(u, np.float64), np.asarray(v, np.float64),
                                   rtol=rtol, atol=atol)


# -- the policy ---------------------------------------------------------------------------------

def test_policy_is_a_readable_table_of_ir_ops():
    assert POLICY["matmul"] == "lower"
    for name in ("exp", "log", "reduce_sum", "div", "power", "logaddexp", "cumsum"):
        assert POLICY[name] == "float32"
    assert "maximum" not in POLICY          # promote: the default
    assert table().splitlines()[0].startswith("lower    matmul")
    with pytest.raises(ValueError, match="not an IR op"):
        resolve({"softmax": "float32"})
    with pytest.raises(ValueError, match="category is one of"):
        resolve({"tanh": "float64"})


def test_mlp_loss_runs_matmuls_in_float16_and_softmax_and_loss_in_float32():
    p, x, y = mlp_data()
    ops, f = ops_of(autocast(mlp_loss), p, x, y)
    matmuls = [o for o in ops if o[0] == "matmul"]
    assert len(matmuls) == 2
    assert all(ins == [F16, F16] and outs == [F16] for _, ins, outs in matmuls)
    for name in ("exp", "log", "reduce_sum", "div"):
        assert [o for o in ops if o[0] == name]
        assert all(ins == [F32] * len(ins) for n, ins, _ in ops if n == name), name
    # the weights are converted where a matmul reads them; the parameters stay float32
    assert all(prm.type.dtype == F32 for prm in f.params if prm.name != "y")
    assert [r.type.dtype for r in f.results] == [F32]
    assert sum(n == "convert" for n, _, _ in ops) >= 5


def test_lower_shows_the_converts():
    p, x, y = mlp_data()
    text = tj.jit(autocast(mlp_loss), backend=BACKEND).lower(p, x, y).ir
    assert "convert %p.w1 dtype=f16" in text
    assert "matmul" in text and ": f16[16,32]" in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_autocast_loss_is_close_to_float32(backend):
    p, x, y = mlp_data()
    got = tj.jit(autocast(mlp_loss), backend=backend)(p, x, y)
    assert got.dtype == np.float32
    close(got, mlp_loss(p, x, y))


@pytest.mark.parametrize("backend", ["numpy", pytest.param("numba", marks=pytest.mark.slow)])
def test_grad_of_autocast_gives_float32_gradients_close_to_float32s(backend):
    p, x, y = mlp_data()
    g16 = tj.jit(tj.grad(autocast(mlp_loss)), backend=backend)(p, x, y)
    g32 = tj.jit(tj.grad(mlp_loss), backend=backend)(p, x, y)
    assert all(g.dtype == np.float32 for g in g16.values())
    close(g16, g32, atol=2e-3)


def test_composition_orders_give_the_same_numbers():
    p, x, y = mlp_data()
    outer = tj.jit(tj.grad(autocast(mlp_loss)), backend=BACKEND)(p, x, y)
    eager = tj.grad(autocast(mlp_loss))(p, x, y)
    inner = tj.jit(autocast(tj.grad(mlp_loss)), backend=BACKEND)(p, x, y)
    inner_eager = autocast(tj.grad(mlp_loss))(p, x, y)

    @tj.jit(backend=BACKEND)
    @autocast
    def step(p, x, y):                     # grad called inside the autocast function
        g = tj.grad(mlp_loss)(p, x, y)
        return tj.tree_map(lambda a, b: a - 0.1 * b, p, g)

    stepped = step(p, x, y)
    for k in p:     # one IR, one backend: the same bits however it was reached
        np.testing.assert_array_equal(outer[k], eager[k])
        np.testing.assert_array_equal(inner[k], inner_eager[k])
        assert stepped[k].dtype == np.float32
    # grad(autocast(f)) differentiates the float16 forward; autocast(grad(f)) rewrites the
    # backward pass by the policy too: float16 matmuls both, within float16's rounding
    close(outer, inner, atol=2e-3)
    close(stepped, tj.tree_map(lambda a, b: a - 0.1 * b, p, inner), atol=1e-4)


def test_eager_autocast_equals_jitted():
    p, x, y = mlp_data(seed=1)
    eager = autocast(mlp_loss)(p, x, y)
    jitted = tj.jit(autocast(mlp_loss), backend=BACKEND)(p, x, y)
    np.testing.assert_array_equal(eager, jitted)
    assert np.asarray(eager).dtype == np.float32


# -- extending the policy -----------------------------------------------------------------------

def test_a_policy_argument_takes_effect():
    p, x, y = mlp_data()
    ops, _ = ops_of(autocast(mlp_loss, policy={"matmul": "promote"}), p, x, y)
    assert all(F16 not in ins + outs for _, ins, outs in ops)      # nothing lowered

    def f(x, w):
        return np.tanh(x @ w)
    w = p["w1"]
    ops, _ = ops_of(autocast(f), x, w)
    assert [o for o in ops if o[0] == "tanh"][0][1] == [F16]       # promote: float16 in
    ops, _ = ops_of(autocast(f, policy={"tanh": "float32"}), x, w)
    assert [o for o in ops if o[0] == "tanh"][0][1] == [F32]


def test_extending_POLICY_affects_autocasts_made_afterwards(monkeypatch):
    def f(x, w):
        return np.sin(x @ w)
    x, w = mlp_data()[1], mlp_data()[0]["w1"]
    before = autocast(f)
    monkeypatch.setitem(POLICY, "sin", "float32")
    after = autocast(f)
    assert [o for o in ops_of(before, x, w)[0] if o[0] == "sin"][0][1] == [F16]
    assert [o for o in ops_of(after, x, w)[0] if o[0] == "sin"][0][1] == [F32]


# -- what autocast leaves alone -----------------------------------------------------------------

def test_autocast_without_float_values_is_the_identity():
    def f(a, b):
        return (a @ b + 3) % 7, a.sum(axis=0)
    a = np.arange(12).reshape(3, 4)
    b = np.arange(8).reshape(4, 2)
    traced = tj.make_ir(f)(a, b)
    assert autocast_function(traced) is traced
    for got, want in zip(autocast(f)(a, b), f(a, b)):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_results_keep_the_dtypes_of_the_function_without_autocast():
    def f(x, w, x64, h):
        z = x @ w
        return z, np.exp(z).sum(), (x64 @ x64.T), h * 2, (z > 0).sum()
    x, w = mlp_data()[1], mlp_data()[0]["w1"]
    x64 = x.astype(np.float64)
    h = x.astype(np.float16)
    got = autocast(f)(x, w, x64, h)
    want = f(x, w, x64, h)
    assert [g.dtype for g in got] == [np.asarray(v).dtype for v in want]
    ops, _ = ops_of(autocast(f), x, w, x64, h)
    f64_matmul = [o for o in ops if o[0] == "matmul"][1]
    assert f64_matmul[1] == [dtypes.float64] * 2     # float64 is never lowered (as torch)
    np.testing.assert_array_equal(got[2], want[2])


def test_scalar_constants_follow_a_float16_operand():
    def f(x, w):
        return (x @ w) * 0.5 + 1.0
    x, w = mlp_data()[1], mlp_data()[0]["w1"]
    ops, _ = ops_of(autocast(f), x, w)
    assert [o[1] for o in ops if o[0] in ("mul", "add")] == [[F16, F16], [F16, F16]]
    close(autocast(f)(x, w), f(x, w), atol=1e-2)


def test_regions_are_autocast_with_their_signatures_kept():
    def f(h0, w, xs):
        def body(h, x):
            h = np.tanh(h @ w + x)
            return h, h.sum()
        h, ys = tj.scan(body, h0, xs)
        return tj.checkpoint(lambda a: a @ w)(h).sum() + ys.sum()
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((8, 8)) / 3).astype(np.float32)
    h0 = rng.standard_normal((2, 8)).astype(np.float32)
    xs = rng.standard_normal((5, 2, 8)).astype(np.float32)
    fn = tj.make_ir(autocast(f))(h0, w, xs)
    scan = [op for op in fn.ops if op.name == "scan"][0]
    body_ops = {op.name: op for op in scan.regions[0].ops}
    assert body_ops["matmul"].results[0].type.dtype == F16
    assert body_ops["reduce_sum"].operands[0].type.dtype == F32
    call = [op for op in fn.ops if op.name == "call"][0]
    assert [op.results[0].type.dtype for op in call.regions[0].ops if op.name == "matmul"] == [F16]
    close(autocast(f)(h0, w, xs), f(h0, w, xs), atol=2e-2)
    g = tj.grad(autocast(f), argnums=1)(h0, w, xs)
    assert g.dtype == np.float32
    close(g, tj.grad(f, argnums=1)(h0, w, xs), rtol=3e-2, atol=3e-2)


# -- the forms of the call ----------------------------------------------------------------------

def test_decorator_forms_and_enabled():
    p, x, y = mlp_data()

    @autocast
    def a(p, x, y):
        return mlp_loss(p, x, y)

    @autocast(dtype="float16")
    def b(p, x, y):
        return mlp_loss(p, x, y)

    np.testing.assert_array_equal(a(p, x, y), b(p, x, y))
    assert a.__name__ == "a"
    np.testing.assert_array_equal(autocast(mlp_loss, enabled=False)(p, x, y), mlp_loss(p, x, y))


def test_dtypes_that_are_no_low_precision_and_bfloat16_without_ml_dtypes_are_refused(
        monkeypatch):
    with pytest.raises(ValueError, match="not a low precision"):
        autocast(mlp_loss, dtype="float32")
    monkeypatch.setattr(dtypes, "bfloat16", None)          # as without ml_dtypes
    with pytest.raises(ValueError, match="pip install ml_dtypes"):
        autocast(mlp_loss, dtype="bfloat16")


@pytest.mark.parametrize("backend", BACKENDS)
def test_bfloat16_autocast_runs_matmuls_in_bfloat16_with_float32_results(backend):
    BF16 = dtypes.bfloat16
    p, x, y = mlp_data()
    ops, _ = ops_of(autocast(mlp_loss, dtype="bfloat16"), p, x, y)
    matmuls = [o for o in ops if o[0] == "matmul"]
    assert len(matmuls) == 2 and all(ins == [BF16, BF16] and outs == [BF16]
                                     for _, ins, outs in matmuls)
    got = tj.jit(autocast(mlp_loss, dtype="bfloat16"), backend=backend)(p, x, y)
    assert got.dtype == np.float32
    close(got, mlp_loss(p, x, y), rtol=3e-2, atol=1e-2)     # bfloat16 keeps 8 bits
    g = tj.jit(tj.grad(autocast(mlp_loss, dtype="bfloat16")), backend=backend)(p, x, y)
    assert all(v.dtype == np.float32 for v in g.values())
    close(g, tj.jit(tj.grad(mlp_loss), backend=backend)(p, x, y), rtol=5e-2, atol=1e-2)


# -- training under autocast and GradScaler -----------------------------------------------------

def _digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    x = (x - x.mean()) / x.std()
    order = np.random.default_rng(0).permutation(len(x))
    test, train = order[:360], order[360:]
    return (x[train], d.target[train]), (x[test], d.target[test])


def _train(amp: bool, steps: int, init_scale=2.0 ** 16, dtype="float16"):
    from tracejit.demo.models import MLP
    (xtr, ytr), (xte, yte) = _digits()
    model = MLP(sizes=(64, 64, 10), rng=np.random.default_rng(0))
    opt, scaler = optim.Adam(lr=3e-3), GradScaler(init_scale=init_scale)
    loss_fn = autocast(lambda m, x, y: F.cross_entropy(m(x), y), dtype=dtype, enabled=amp)

    @tj.jit(backend=BACKEND)
    def step(model, opt_state, scaler_state, x, y):
        loss, grads = tj.value_and_grad(
            lambda m: scaler.scale(loss_fn(m, x, y), scaler_state))(model)
        grads, found_inf = scaler.unscale(grads, scaler_state)
        model, opt_state = scaler.step(opt, grads, opt_state, model, found_inf)
        return model, opt_state, scaler.update(scaler_state, found_inf), found_inf

    rng = np.random.default_rng(1)
    opt_state, scaler_state, skipped = opt.init(model), scaler.init(), 0
    for _ in range(steps):
        idx = rng.integers(0, len(ytr), 64)
        model, opt_state, scaler_state, found_inf = step(model, opt_state, scaler_state,
                                                         xtr[idx], ytr[idx])
        skipped += bool(found_inf)
    accuracy = float((np.argmax(model(xte), axis=1) == yte).mean())
    loss = float(F.cross_entropy(model(xte), yte))
    return accuracy, loss, skipped, float(scaler_state["scale"]), model


@pytest.mark.slow
def test_training_under_autocast_and_grad_scaler_matches_float32():
    t0 = time.perf_counter()
    acc32, loss32, skipped32, _, _ = _train(amp=False, steps=300)
    acc16, loss16, skipped16, scale, model = _train(amp=True, steps=300)
    assert acc32 > 0.93 and acc16 > 0.93
    assert abs(acc16 - acc32) <= 0.02, (acc16, acc32)
    assert abs(loss16 - loss32) <= 0.05 + 0.2 * loss32, (loss16, loss32)
    assert skipped16 == skipped32 == 0 and scale == 2.0 ** 16
    assert all(leaf.dtype == np.float32 for leaf in flatten(model)[0])    # float32 masters
    assert time.perf_counter() - t0 < 60


@pytest.mark.slow
def test_training_under_bfloat16_autocast_matches_float32():
    acc32, loss32, _, _, _ = _train(amp=False, steps=300)
    acc16, loss16, skipped, _, model = _train(amp=True, steps=300, dtype="bfloat16")
    assert acc16 > 0.93 and abs(acc16 - acc32) <= 0.02, (acc16, acc32)
    assert abs(loss16 - loss32) <= 0.05 + 0.2 * loss32, (loss16, loss32)
    assert skipped == 0 and all(leaf.dtype == np.float32 for leaf in flatten(model)[0])


def test_grad_scaler_backs_off_when_the_float16_backward_overflows():
    # A scale of 2**24 times the cross-entropy's cotangent (1/batch per row) exceeds float16's
    # 65504 in the float16 backward matmuls: those steps are skipped and the scale halves,
    # as in torch, until the gradients are finite; float32 never overflows at that scale.
    _, _, skipped16, scale16, _ = _train(amp=True, steps=12, init_scale=2.0 ** 24)
    _, _, skipped32, scale32, _ = _train(amp=False, steps=12, init_scale=2.0 ** 24)
    assert skipped16 >= 1 and scale16 == 2.0 ** 24 * 0.5 ** skipped16
    assert skipped32 == 0 and scale32 == 2.0 ** 24
