"""np.float16 end to end.

tracejit's float16 conversions (codegen/half.py) are checked exhaustively against NumPy's
astype (and the F16C ones kernels use where the CPU has them, NaN payloads aside);
float16 programs on the compiled backend and the NumPy tier against NumPy's own float16:
bit for bit for arithmetic and rounding ops (NumPy's float16 ufuncs also compute in float32
and round once), within one float16 ulp for transcendentals, within a float16 tolerance for
reductions and matmuls (accumulated in float32 and rounded once; NumPy rounds more often).
Jitted functions are module-level and called on few shapes, so kernels compile once.
"""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import tracejit as tj
from tracejit.codegen.half import (d2h, f2h, f2h_sw, h2f, h2f_sw, round16, round16_64,
                                   round16_64_sw, round16_sw)
from tracejit.ir import parse

F16 = np.float16
ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)      # every float16 pattern
ALL = ALL16.view(F16)
RNG = np.random.default_rng(16)


# -- the conversions, against NumPy -----------------------------------------------------------

def _over(fn, out_dtype):
    """``fn`` over every element of an array (each fn compiled once)."""
    @njit
    def run(x):
        out = np.empty(x.shape, out_dtype)
        for i in range(x.size):
            out[i] = fn(x[i])
        return out
    return run


_h2f_all, _f2h_all = _over(h2f_sw, np.float32), _over(f2h_sw, np.uint16)
_d2h_all = _over(d2h, np.uint16)
_round16_all, _round16_64_all = _over(round16_sw, np.float32), _over(round16_64_sw, np.float32)


def _numpy_bits(x) -> np.ndarray:
    with np.errstate(all="ignore"):
        return x.astype(F16).view(np.uint16)


def _boundaries(dtype) -> np.ndarray:
    """Every finite float16 value and every halfway point between neighbours (65520, where
    rounding reaches inf, and the subnormal halves included), each with its neighbours one
    ulp of ``dtype`` either way, both signs; and the special values."""
    values = np.unique(ALL[np.isfinite(ALL)].astype(np.float64))
    halves = (values[:-1] + values[1:]) / 2
    points = np.concatenate([values, halves, [65520.0, 2.0 ** -25, 3 * 2.0 ** -26]])
    points = points.astype(dtype)
    near = np.concatenate([points, np.nextafter(points, dtype(np.inf)),
                           np.nextafter(points, dtype(-np.inf))])
    special = np.array([0.0, np.inf, np.nan, np.finfo(dtype).max, np.finfo(dtype).tiny,
                        np.finfo(dtype).smallest_subnormal], dtype)
    return np.concatenate([near, -near, special, -special])


def test_every_float16_pattern_converts_to_float32_exactly_and_back():
    as32 = _h2f_all(ALL16)
    np.testing.assert_array_equal(as32.view(np.uint32), ALL.astype(np.float32).view(np.uint32))
    np.testing.assert_array_equal(_f2h_all(as32), _numpy_bits(as32))   # NaN payloads too


def test_float32_rounds_to_float16_as_numpy_at_every_rounding_boundary():
    x = _boundaries(np.float32)
    np.testing.assert_array_equal(_f2h_all(x), _numpy_bits(x))


def test_random_float32_patterns_round_to_float16_as_numpy():
    x = RNG.integers(0, 1 << 32, 10 ** 6, dtype=np.uint64).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(_f2h_all(x), _numpy_bits(x))


def test_float64_rounds_to_float16_once_as_numpy():
    """Straight from the float64's bits: through float32 a value just off a halfway point
    could first round onto it, then to even."""
    x = _boundaries(np.float64)
    values = np.unique(ALL[np.isfinite(ALL)].astype(np.float64))
    halves = (values[:-1] + values[1:]) / 2
    traps = np.concatenate([halves * (1 + 2.0 ** -40), halves * (1 - 2.0 ** -40)])
    assert (traps.astype(np.float32).astype(F16) != traps.astype(F16)).any()   # real traps
    rand = RNG.integers(0, 1 << 64, 10 ** 6, dtype=np.uint64).view(np.float64)
    for x in (x, traps, -traps, rand):
        np.testing.assert_array_equal(_d2h_all(x), _numpy_bits(x))


def test_round16_and_round16_64_give_the_float16_value_as_float32():
    for x, fn in ((_boundaries(np.float32), _round16_all),
                  (_boundaries(np.float64), _round16_64_all)):
        want = _numpy_bits(x).view(F16).astype(np.float32)
        got = fn(x)
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_kernels_conversions_agree_with_numpy_up_to_nan_payloads():
    """h2f, f2h, round16, round16_64: F16C's on this CPU if it has it (a NaN comes out
    quieted), the routines above if not."""
    x32 = np.concatenate([_boundaries(np.float32), _h2f_all(ALL16)])
    x64 = _boundaries(np.float64)
    with np.errstate(over="ignore"):
        cases = ((_over(h2f, np.float32)(ALL16), ALL.astype(np.float32)),
                 (_over(f2h, np.uint16)(x32).view(F16), x32.astype(F16)),
                 (_over(round16, np.float32)(x32), x32.astype(F16).astype(np.float32)),
                 (_over(round16_64, np.float32)(x64), x64.astype(F16).astype(np.float32)))
    for got, want in cases:
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan], want[~nan])
        assert (np.signbit(got[~nan]) == np.signbit(want[~nan])).all()


# -- elementwise ops against NumPy's float16 --------------------------------------------------

def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in float16 steps (NaN to NaN: 0; NaN to a number: huge)."""
    def ordered(b):
        b = b.astype(np.int64)
        return np.where(b & 0x8000, 0x8000 - (b & 0x7FFF), 0x8000 + b)
    d = np.abs(ordered(got.view(np.uint16)) - ordered(want.view(np.uint16)))
    both, either = np.isnan(got) & np.isnan(want), np.isnan(got) | np.isnan(want)
    return np.where(both, 0, np.where(either, 1 << 20, d))


def _check(name, got, want, exact: bool):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, want.dtype)
    if want.dtype != F16:
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    worst = int(_ulps(got, want).max(initial=0))
    assert worst <= (0 if exact else 1), f"{name}: {worst} float16 ulps from NumPy"


# name -> (function, bit-exact)
UNARY = {
    "negative": (np.negative, True), "abs": (np.abs, True), "sign": (np.sign, True),
    "sqrt": (np.sqrt, True), "square": (np.square, True), "reciprocal": (np.reciprocal, True),
    "floor": (np.floor, True), "ceil": (np.ceil, True), "rint": (np.rint, True),
    "isnan": (np.isnan, True), "isinf": (np.isinf, True), "isfinite": (np.isfinite, True),
    "to_f32": (lambda x: x.astype(np.float32), True), "to_f64": (lambda x: x.astype(np.float64),
                                                                 True),
    "to_i32": (lambda x: np.where(np.isfinite(x), x, 0).astype(np.int32), True),
    "to_u8": (lambda x: np.clip(np.nan_to_num(x), 0, 255).astype(np.uint8), True),
    "to_bool": (lambda x: x.astype(bool), True),
    "exp": (np.exp, False), "expm1": (np.expm1, False), "log": (np.log, False),
    "log1p": (np.log1p, False), "sin": (np.sin, False), "cos": (np.cos, False),
    "tan": (np.tan, False), "tanh": (np.tanh, False), "sinh": (np.sinh, False),
    "cosh": (np.cosh, False), "arcsin": (np.arcsin, False), "arccos": (np.arccos, False),
    "arctan": (np.arctan, False), "arcsinh": (np.arcsinh, False), "arctanh": (np.arctanh, False),
}

BINARY = {
    "add": (np.add, True), "subtract": (np.subtract, True), "multiply": (np.multiply, True),
    "divide": (np.divide, True), "floor_divide": (np.floor_divide, True),
    "remainder": (np.remainder, True), "fmod": (np.fmod, True), "maximum": (np.maximum, True),
    "minimum": (np.minimum, True), "fmax": (np.fmax, True), "copysign": (np.copysign, True),
    "less": (np.less, True), "equal": (np.equal, True), "where": (
        lambda a, b: np.where(a > b, a, b), True),
    "clip": (lambda a, b: np.clip(a, -1.5, b), True), "python_float": (
        lambda a, b: a * 1.1 + 0.3, True),
    "float16_scalar": (lambda a, b: a / F16(3), True),
    "power": (np.power, False), "arctan2": (np.arctan2, False), "hypot": (np.hypot, False),
    "logaddexp": (np.logaddexp, False),
}


def _unary_all(x):
    return tuple(fn(x) for fn, _ in UNARY.values())


def _binary_all(a, b):
    return tuple(fn(a, b) for fn, _ in BINARY.values())


_PAIRS = np.concatenate([RNG.choice(ALL, (2, 100_000)),
                         (RNG.standard_normal((2, 100_000)) * 4).astype(F16)], axis=1)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_unary_ops_on_every_float16_value_match_numpy(backend):
    with np.errstate(all="ignore"):
        want = _unary_all(ALL)
        got = tj.jit(_unary_all, backend=backend)(ALL)
    for (name, (_, exact)), g, w in zip(UNARY.items(), got, want):
        _check(name, g, w, exact or backend == "numpy")


@pytest.mark.parametrize("backend", [pytest.param("numba", marks=pytest.mark.slow), "numpy"])
def test_binary_ops_on_float16_pairs_match_numpy(backend):
    a, b = _PAIRS
    with np.errstate(all="ignore"):
        want = _binary_all(a, b)
        got = tj.jit(_binary_all, backend=backend)(a, b)
    for (name, (_, exact)), g, w in zip(BINARY.items(), got, want):
        _check(name, g, w, exact or backend == "numpy")


def _mixed(h, f, i8, i16):
    return (h + f, h + 1.5, h * 2, h + i8, h + i16, h * np.float64(2.0), np.exp(i8),
            np.sqrt(i8 > 0), h.sum(), h.mean(), (h > 0).astype(F16), h.astype(np.float32) + h)


@pytest.mark.slow
def test_mixed_float16_promotion_follows_numpy():
    """NEP 50: float16 with float32 is float32, with a Python float float16, with int8
    float16, with int16 float32, with a NumPy float64 scalar float64; exp of int8 and sqrt of
    bool are float16."""
    args = (ALL[:64].copy(), np.linspace(-2, 2, 64, dtype=np.float32),
            np.arange(-32, 32, dtype=np.int8), np.arange(64, dtype=np.int16))
    args[0][~np.isfinite(args[0])] = 1
    with np.errstate(over="ignore"):
        want = _mixed(*args)
    for backend in ("interpreter", "numpy", "numba"):
        got = tj.jit(_mixed, backend=backend)(*args)
        for k, (g, w) in enumerate(zip(got, want)):
            assert np.asarray(g).dtype == w.dtype, (backend, k, np.asarray(g).dtype, w.dtype)
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                       rtol=1e-3, err_msg=f"{backend} {k}")


def _scaled(x, s):
    return x * s + s


def test_float16_arguments_and_results_are_numpys_float16():
    x = np.linspace(-3, 3, 9, dtype=F16)
    before = x.copy()
    out = tj.jit(_scaled)(x, F16(1.5))
    assert type(out) is np.ndarray and out.dtype == F16
    np.testing.assert_array_equal(out, _scaled(x, F16(1.5)))
    np.testing.assert_array_equal(x, before)
    assert tj.jit(_scaled)(F16(2), F16(0.5)).dtype == F16


def _chain(x, y):
    return np.tanh(x * y + 0.5 * x) * (1 / (1 + np.exp(-y))) - x / (1 + y * y)


def test_kernels_hold_float16_as_uint16_bits_and_large_ones_run_on_threads():
    """Kernels take float16 arrays as uint16 views, convert on load and store; a large
    elementwise chain splits over threads (native hand-off) and still matches NumPy."""
    x, y = (RNG.standard_normal((2, 300_000)) * 2).astype(F16)
    lowered = tj.jit(_chain).lower(x, y)
    src = lowered.source
    assert "array(uint16, 1d, C)" in src and "h2f(" in src and "f2h(" in src
    assert ".view(" in src
    jitted = tj.jit(_chain)
    jitted(x, y)
    program = jitted.lower(x, y)._entry.program.wait().program
    assert program.plan.parallel and program.runner.jobs      # handed off natively
    for _ in range(2):
        got = jitted(x, y)
        assert (_ulps(got, _chain(x, y)) <= 1).all()


def _software(x):
    return _chain(x, x[::-1]), np.sqrt(x), x.sum(), np.exp(x - x.max())


@pytest.mark.slow
def test_kernels_with_tracejits_own_conversions_match_numpy(monkeypatch):
    """TRACEJIT_F16C=0: the kernels call the routines of codegen/half.py (a CPU without F16C
    runs them anyway), with NumPy's NaN payloads."""
    monkeypatch.setattr(tj.config, "f16c", False)
    x = ALL[np.isfinite(ALL)]
    x = x[np.abs(x) < 8]
    jitted = tj.jit(_software)
    assert "round16_sw(" in jitted.lower(x).source
    with np.errstate(invalid="ignore"):
        got, want = jitted(x), _software(x)
    _check("chain", got[0], want[0], exact=False)
    _check("sqrt", got[1], want[1], exact=True)
    assert abs(float(got[2]) - float(x.astype(np.float64).sum())) <= abs(float(want[2])) * 1e-3
    _check("exp", got[3], want[3], exact=False)
    nan = np.array([np.nan, -np.nan], np.float32).astype(F16)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(jitted(nan)[1].view(np.uint16),
                                      np.sqrt(nan).view(np.uint16))


# -- reductions, cumulative ops, matmul, softmax -----------------------------------------------

def _reductions(x):
    return (x.sum(), x.sum(axis=0), x.sum(axis=1), x.mean(axis=1), x.max(axis=1), x.min(axis=0),
            np.argmax(x, axis=1), x.prod(axis=1), x.var(axis=1), np.sum(x * x, axis=(0, 1)))


def test_reductions_accumulate_in_float32_and_round_once():
    """Against float64 sums rounded to float16 (NumPy's float16 sums round more often, so
    they are compared with a float16 tolerance)."""
    x = (RNG.standard_normal((40, 3000)) * 0.3).astype(F16)
    want = _reductions(x)
    exact = _reductions(x.astype(np.float64))
    for backend in ("numba", "numpy"):
        got = tj.jit(_reductions, backend=backend)(x)
        for k, (g, w, e) in enumerate(zip(got, want, exact)):
            assert g.dtype == w.dtype and g.shape == w.shape, (backend, k)
            if g.dtype == F16:
                np.testing.assert_allclose(g.astype(np.float64), e, rtol=2e-3,
                                           atol=2e-3 * np.abs(e).max(), err_msg=f"{k}")
            else:
                np.testing.assert_array_equal(g, w)
    # the full float32 blocked sum rounds the float64 total once: the exact float16 rounding
    got = tj.jit(_reductions)(x)
    assert got[0] == F16(exact[0])


def _cumulative(x):
    return np.cumsum(x, axis=1), np.cumprod(x, axis=0)


def test_cumsum_and_cumprod_round_each_step_as_numpy():
    x = (RNG.standard_normal((30, 200)) * 0.9 + 0.2).astype(F16)
    for g, w in zip(tj.jit(_cumulative)(x), _cumulative(x)):
        np.testing.assert_array_equal(g, w)


def _layer(x, w, b, t):
    return np.maximum(x @ w + b, 0), x @ t.T, np.einsum("bij,bjk->bik", x[None], w[None])


def test_matmul_converts_to_float32_for_blas_and_rounds_its_epilogue():
    """float32 sums rounded once, against float64 products; NumPy's own float16 matmul
    rounds every step, so it is only close."""
    x = RNG.standard_normal((150, 300)).astype(F16)
    w = (RNG.standard_normal((300, 40)) * 0.1).astype(F16)
    b, t = RNG.standard_normal(40).astype(F16), RNG.standard_normal((70, 300)).astype(F16)
    got = tj.jit(_layer)(x, w, b, t)
    exact = _layer(*(a.astype(np.float64) for a in (x, w, b, t)))
    numpy = _layer(x, w, b, t)
    for g, e, n in zip(got, exact, numpy):
        assert g.dtype == F16 and g.shape == n.shape
        # a float32 product rounded once: a float16 rounding of the exact one, and the
        # product's own rounding (half an ulp) before the epilogue's
        np.testing.assert_allclose(g.astype(np.float64), e, rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(g.astype(np.float64), n.astype(np.float64), rtol=2e-2,
                                   atol=0.05)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layer_norm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    return xc / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + 1e-5) * g + b


def test_softmax_and_layer_norm_match_numpy_within_a_float16_ulp_or_two():
    x = (RNG.standard_normal((64, 700)) * 3).astype(F16)
    g, b = RNG.standard_normal((2, 700)).astype(F16)
    for backend in ("numba", "numpy"):
        got = tj.jit(_softmax, backend=backend)(x)
        assert got.dtype == F16 and (_ulps(got, _softmax(x)) <= 2).all()
        got = tj.jit(_layer_norm, backend=backend)(x, g, b)
        np.testing.assert_allclose(got.astype(np.float64), _layer_norm(x, g, b), rtol=1e-2,
                                   atol=1e-2)


# -- data movement, gathers, scatters, control flow --------------------------------------------

def _moves(x, idx):
    y = x.copy()
    y[idx] += x[:len(idx)]
    z = np.zeros_like(x)
    np.add.at(z, idx, x[:len(idx)])
    return (np.sort(x, axis=1), np.pad(x, 2, constant_values=1.5),
            np.concatenate([x, -x], axis=0), x.T * 2, x[:, idx], y, z, np.flip(x, 1)[::2])


def test_movement_sorts_gathers_and_scatters_of_float16_match_numpy():
    x = (RNG.standard_normal((6, 50)) * 10).astype(F16)
    idx = np.array([3, 1, 1, 4])
    for g, w in zip(tj.jit(_moves)(x, idx), _moves(x, idx)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def _loops(x, n):
    def step(carry, row):
        carry = np.tanh(carry * 0.5 + row)
        return carry, np.pad(carry, 1, constant_values=2.5)
    last, ys = tj.scan(step, x[0], x)
    total = tj.fori_loop(0, 3, lambda i, c: c * 1.5 - x[2], x[0])
    picked = tj.cond(n > 0, lambda v: v * 2, lambda v: -v, x[1])
    grown = tj.while_loop(lambda c: c[0] < 100, lambda c: c * 1.5 + 1, np.abs(x[3]))
    return last, ys, total, picked, grown


def _loops_numpy(x, n):
    carry, ys = x[0], []
    for row in x:
        carry = np.tanh(carry * 0.5 + row)
        ys.append(np.pad(carry, 1, constant_values=2.5))
    total = x[0]
    for i in range(3):
        total = total * 1.5 - x[2]
    grown = np.abs(x[3])
    while grown[0] < 100:
        grown = grown * 1.5 + 1
    return carry, np.stack(ys), total, (x[1] * 2 if n > 0 else -x[1]), grown


@pytest.mark.slow
def test_scan_fori_loop_while_loop_and_cond_over_float16_match_numpy():
    """The loops are native loop modules (uint16 buffers, a float16 pad fill)."""
    x = RNG.standard_normal((5, 7)).astype(F16)
    jitted = tj.jit(_loops)
    assert "native loop module" in "".join(
        note for spec in jitted.lower(x, 1)._entry.program.program.plan.kernels
        for note in spec.notes)
    for n in (1, -1):
        for g, w in zip(jitted(x, n), _loops_numpy(x, n)):
            assert g.dtype == F16
            assert (_ulps(g, w) <= 1).all()


# -- gradients, the text form -----------------------------------------------------------------

def _loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2) / x.shape[0]


def test_grad_of_a_float16_function_is_float16_and_close_to_finite_differences():
    w = (RNG.standard_normal((6, 3)) * 0.5).astype(F16)
    x = RNG.standard_normal((8, 6)).astype(F16)
    g = tj.jit(tj.grad(_loss))(w, x)
    assert g.dtype == F16 and g.shape == w.shape
    w64, x64, eps = w.astype(np.float64), x.astype(np.float64), 1e-6
    numeric = np.zeros_like(w64)
    for k in np.ndindex(*w.shape):
        d = np.zeros_like(w64)
        d[k] = eps
        numeric[k] = (_loss(w64 + d, x64) - _loss(w64 - d, x64)) / (2 * eps)
    np.testing.assert_allclose(g.astype(np.float64), numeric, rtol=3e-2, atol=1e-2)


def test_ir_text_form_holds_float16_bit_exactly():
    def f(x):
        return x * F16(0.1) + np.array([np.inf, -0.0, 65504, 6e-8], F16)
    fn = tj.make_ir(f)(np.ones(4, F16))
    text = str(fn)
    assert "f16[4]" in text
    again = parse(text)
    assert str(again) == text
    x = np.array([1, -2, 3, 0.5], F16)
    from tracejit.ir import interpret
    np.testing.assert_array_equal(interpret(again, [x])[0], f(x))
