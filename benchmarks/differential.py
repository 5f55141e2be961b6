"""Every case of the differential suite (tests/test_numpy_differential.py) at realistic sizes,
NumPy eager against tracejit (``jit(fn, tiered=False)``, warmed up), each row timed side by side
(timing.compare: the two take turns, medians), plus NPBench's ``arc_distance`` and ``go_fast``.

    python -m benchmarks differential            # every row
    python -m benchmarks.differential softmax go_fast --budget 0.3

Sizes: the suite's shape helpers multiply each dim above 1 by the test module's ``SCALE``; here
it is chosen per case so that the case's largest argument holds about ``TARGET`` elements.
Cases whose bodies fix a size get their own scale (``SCALES``) or arguments (``ARGS``).
``ratio`` is NumPy's time over tracejit's: above 1, tracejit is faster. ``REASONS`` says, for
each row below 1.0x, what the profile (benchmarks.profile_plan) showed. Every row's results are
checked against NumPy's too; a mismatch is listed after the table.

Steady state: tracejit is timed after ``wait_compiled()`` (the native hand-off of parallel
kernels is built after the first call), and each turn starts after timing.compare's 0.1 s pause
(with 0.02 s, NumPy's OpenBLAS threads still spun when tracejit's turn began: a GEMM row read
0.61x instead of 1.1x). docs/performance.md has a run's table and what it found.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

import tracejit as tj

from .timing import compare

TARGET = 5e5        # elements of a case's largest argument
BUDGET = 0.6        # seconds of timed calls per row, both implementations together


def _suite():
    """tests/test_numpy_differential.py, loaded by path (tests/ is not a package)."""
    name = "tests_numpy_differential"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "tests" / "test_numpy_differential.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        for t in tree:
            yield from _leaves(t)
    else:
        yield np.asarray(tree)


def _with_scale(suite, make, scale):
    def made(dt, rng):
        old, suite.SCALE = suite.SCALE, scale
        try:
            return make(dt, rng)
        finally:
            suite.SCALE = old
    return made


# Cases whose bodies fix a size: a scale that fits, or arguments of another (batch) shape.
SCALES = {
    "pairwise_distances": 24,       # a[:, None] - b[None]: a 144 x 96 x 72 intermediate
    "cumulative_expressions": 88,   # an n x n triangular matrix, n = 704
    "reshapes": 1,                  # x.reshape(2, 12): the test's 2 x 3 x 4 only
}


def _args(suite):
    s = suite
    return {
        # np.arange(5) in the body: 5 classes
        "one_hot_by_comparison": s.args(s.randn(100000, 5), s.labels(100000, 5)),
        # np.ones((4, 4)) in the body: a batch of 4 x 4 matrices (triu/tril take the last two)
        "triangular_masks": s.args(s.randn(30000, 4, 4)),
        # np.broadcast_to(x[0], (5, 4)): rows of 4
        "broadcast_and_like": s.args(s.randn(125000, 4)),
        # np.ones(4) @ x.transpose(0, 2, 1): 4 features; a Python loop over x[0]'s 10 rows
        "sequence_model_idioms": s.args(s.randn(12500, 10, 4), s.randn(4, 3),
                                        s.labels(12500, 11)),
        # 6 coordinates along axis 1
        "finite_differences": s.args(s.randn(80000, 6)),
        # np.eye(3) in the body: a batch of 50000 3 x 3 systems beside the single ones
        "linalg_solvers": s.args(s.well_conditioned(3, 3), s.randn(3, 2), s.randn(3),
                                 s.well_conditioned(50000, 3, 3)),
        # np.eye(3) in the body: 150000 points in 3 dimensions
        "scipy_stats_logpdfs": s.args(s.randn(150000, 3), s.randn(3), s.randn(3, 3)),
    }


def sized_make(suite, case):
    """(make, how it was sized) for ``case`` at about TARGET elements."""
    if case.name in _args(suite):
        return _args(suite)[case.name], "own args"
    if case.name in SCALES:
        return _with_scale(suite, case.make, SCALES[case.name]), f"x{SCALES[case.name]}"
    small = list(_leaves(_with_scale(suite, case.make, 1)(case.dtypes[0],
                                                          np.random.default_rng(0))))
    big = max(small, key=lambda a: a.size)
    rank = sum(d > 1 for d in big.shape) or 1
    scale = max(1, round((TARGET / big.size) ** (1 / rank)))
    make = _with_scale(suite, case.make, scale)
    try:                            # a size fixed in the body that SCALES does not know yet
        with np.errstate(all="ignore"):
            case.fn(*make(case.dtypes[0], np.random.default_rng(0)))
    except (ValueError, IndexError, MemoryError):
        return _with_scale(suite, case.make, 1), "x1 (test size: scaled, it failed)"
    return make, f"x{scale}"


# --- NPBench kernels ------------------------------------------------------------------------


def arc_distance(theta_1, phi_1, theta_2, phi_2):
    temp = np.sin((theta_2 - theta_1) / 2)**2 + np.cos(theta_1) * np.cos(theta_2) * np.sin(
        (phi_2 - phi_1) / 2)**2
    return 2 * np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def _npbench_rows():
    """(name, fn, make, dtypes) like the suite's cases; NPBench's inputs are uniform [0, 1)."""
    n = 10**7
    return [("npbench arc_distance", arc_distance,
             lambda dt, rng: tuple(rng.random(n).astype(dt) for _ in range(4)),
             ("float32", "float64"), "N=1e7"),
            ("npbench go_fast", go_fast, lambda dt, rng: (rng.random((300, 300)).astype(dt),),
             ("float64",), "300x300")]


# --- why a row is below 1.0x (from profiles; see the module docstring) ------------------------

# name -> reason, or (name, dtype) -> reason where only one dtype is slower; shown for rows
# below 1.0x. Each comes from profiling the row (benchmarks.profile_plan, kernel by kernel)
# and timing its parts alone against NumPy's; times are float32 unless said, 2026-11-30.
_VIEWS = "NumPy returns views (no copy); tracejit copies every result (results never alias"
_PARITY = ("memory-bound (one pass per result in both, at memory bandwidth): parity within "
           "the run-to-run noise; on 2 threads no faster than on 1 at this size")
_EXP64 = ("float64 exp: vector code in both (codegen's exp64; NumPy's own SIMD exp on AVX-512, "
          "libm elsewhere): np.exp of 5e5 alone, AVX-512 VM: NumPy 0.61-0.67 ms, tracejit "
          "0.63-0.69")
REASONS: dict = {
    # NumPy returns views
    "split_parts": f"{_VIEWS} arguments)",
    "transposes": f"{_VIEWS} arguments): 8 transposed copies",
    "squeeze_expand": f"{_VIEWS} arguments)",
    "reshapes": "test size (the body's x.reshape(2, 12) fixes 2x3x4): 13 us of per-call "
                "overhead against NumPy's views",
    "basic_indexing": "9 of 12 results are views in NumPy; x[:, [1, 3], 0] gathers from a "
                      "transposed copy of all of x (0.19 of 0.29 ms)",
    "arrays_from_traced_values": "np.asarray(x) is x itself in NumPy; tracejit copies it "
                                 "(0.2 of 0.24 ms)",
    "pad_flip": "6 of 9 results are views in NumPy (flips, x[::-1], x[:, ::-2]); tracejit "
                "copies them (its pads match np.pad's time)",
    "properties_as_python_values": "x.reshape(n * d) and x[: n // 2] are views in NumPy; "
                                   "tracejit copies them (0.49 of 1.1 ms)",
    "diagonal_and_trace": "np.diag(v) writes all 885x885 elements (0.22 ms a matrix); NumPy's "
                          "np.zeros is calloc (pages zeroed when first touched: never, here); "
                          "np.diag(m), m.diagonal() are views in NumPy",
    "broadcast_and_like": "(125000, 4): a kernel loops over the array's own shape, and a last "
                          "axis of 4 is too short to vectorize (x * 2: 0.24 ms, NumPy 0.10); "
                          "np.broadcast_to is a view in NumPy",
    # gathers and data movement
    "repeat_tile": "np.tile and np.repeat(x, 3) gather element by element through an index "
                   "array, on one thread (take kernels: 2.0 + 1.5 of 4.2 ms); NumPy copies "
                   "broadcast slices",
    "diff_roll_and_stacks": "np.roll is a take (a gather on one thread: 3 x 0.65 + 1.07 of "
                            "4.9 ms); NumPy's roll copies two slices",
    "pad_modes": "per-side constants are a pad op per axis and side (4 copies; np.pad(x, 1, "
                 "constant_values=((1, 2), (3, 4))) 0.32x); edge/reflect/symmetric/wrap are "
                 "slices joined by a concatenate per axis (2 copies; NumPy pads in place)",
    # reductions
    "batch_norm_stats": "np.std(x, axis=0): a two-pass reduction over the leading axis walks "
                        "each column with a stride (the turned-around leading-axis loops "
                        "cover one-pass sum/max/min only): 0.55 ms, NumPy 0.36",
    "argmax_accuracy": "argmax: a scalar compare-and-select loop carrying value and index "
                       "(LLVM does not vectorize an index-of-max reduction): 0.41 ms against "
                       "NumPy's vectorized argmax, 0.10 ms; max alone is at parity",
    "reductions": "argmax/argmin as in argmax_accuracy (1.06 of 2.1 ms); np.prod(x, 0) walks "
                  "columns with a stride",
    # integer division
    "astype_conversions": "(x * 10).astype(int) // 3: a 64-bit hardware divide per element "
                          "(3.7 of 5.1 ms; 8.3 ms against 1.0 alone); NumPy divides by a "
                          "scalar with libdivide (multiply and shift)",
    "int64_and_int32_with_python_ints": "b // 3: integer floor division, a hardware divide "
                                        "per element (2.5 of 5.7 ms; see astype_conversions)",
    "int32_plus_float32": "i // 2: integer floor division, a hardware divide per element "
                          "(3.0 of 6.3 ms; see astype_conversions)",
    # BLAS
    "mlp_layer": "h.T @ h: NumPy calls SYRK for a matrix times its own transpose (half the "
                 "work: x.T @ x 1.9 ms, x.T @ y 2.8 ms); tracejit a GEMM (2.8 of 7.1 ms)",
    "matmul_ranks": "the (56, 84, 140) product of t @ b is copied from the arena into the "
                    "result (0.24 of 2.0 ms); the small products run serially",
    "attention_3d_matmul": "batched products (q @ k.T, p @ v) run one GEMM per matrix on one "
                           "thread (2.25 + 3.72 of 8.4 ms), after copying k transposed",
    "cosine_similarity": "an @ bn.T: one GEMM (91% of the time), at parity with NumPy's BLAS "
                         "(float64: 6.9 vs 7.2 ms in one run, 8.2 vs 9.8 in another)",
    "cumulative_expressions": "lower @ x (704 x 704 @ 704): a matrix-vector product is a GEMM "
                              "with one column, on one thread: 0.44 ms against NumPy's GEMV, "
                              "0.10 ms (float64); tracejit folds the np.tril(np.ones(...)) "
                              "NumPy builds every call",
    "linalg_solvers": "50000 LAPACK calls on 3x3 systems in both (solve and slogdet per "
                      "matrix): parity within noise",
    # scalar libm in both
    "gelu_tanh": "x ** 3 (a libm pow per element in NumPy too) and float64 tanh (np.sqrt(2 / "
                 "np.pi) is a NumPy float64: float32 input computes in float64), scalar in "
                 "both: parity",
    ("softplus_and_silu", "float32"): "log1p: a scalar libm call per element in both (98% of "
                                      "the kernel): parity",
    ("softplus_and_silu", "float64"): f"{_EXP64}; log1p is scalar in both: parity",
    ("sigmoid", "float64"): f"{_EXP64}: parity",
    "polynomial": "x ** 3: a libm pow per element in both (6.1 of 6.4 ms): parity",
    ("unary_math", "float32"): "tan, sinh, cosh, arcsin, arccos, arcsinh, arctanh, exp2, "
                               "expm1 of float32: a libm call per element here, NumPy's "
                               "SIMD versions on AVX-512 (np.tan of 5e5: NumPy 0.63 ms, "
                               "tracejit 2.82; sinh 0.53 against 6.16; exp, sin, log10 are "
                               "vector code in both, tracejit 1.5-2.7x faster)",
    # memory-bound
    "float_times_python_float": f"{_PARITY} (serial 0.97 ms, 2 threads 1.18, NumPy 1.13)",
    "ufunc_dtype_keyword": f"{_PARITY} (serial 0.32 ms, 2 threads 0.42, NumPy 0.40, float64)",
    "zero_d_arrays_and_scalars": f"{_PARITY} (serial 0.16 ms, 2 threads 0.21, NumPy 0.25)",
    "bitwise_and_bool_logic": f"{_PARITY}: 13 kernels, one per result",
    "min_max_binary": f"{_PARITY} (float64: 0.94-0.99x in two runs, 1.07-1.36x in four)",
    "concatenate_stack": "np.concatenate/stack copies in both (NumPy's own statements here); "
                         "NumPy's time swings with page faults of its fresh results (2.7 ms in "
                         "one run, 18-21 ms in others; tracejit reuses its result buffers)",
    "scalar_arithmetic": "1.5 ** x: a libm pow per element in both (7.6 of 9.8 ms, float64); "
                         f"the other 10 results are {_PARITY}",
}


def reason(name: str, dtype: str) -> str:
    return REASONS.get((name, dtype), REASONS.get(name, ""))


# --- the run ----------------------------------------------------------------------------------


def rows(names=None):
    """(name, fn, make, dtypes, size note) for every case, then the NPBench kernels."""
    suite = _suite()
    out = []
    for case in suite.CASES:
        make, how = sized_make(suite, case)
        out.append((case.name, case.fn, make, case.dtypes, how))
    out += _npbench_rows()
    if names:
        out = [r for r in out if any(n in r[0] for n in names)]
    return out


def _shape_note(args) -> str:
    big = max(_leaves(args), key=lambda a: a.size)
    return "x".join(map(str, big.shape)) or "()"


def measure(fn, args, budget: float = BUDGET) -> dict:
    """Median seconds of NumPy eager and of tracejit (untiered, compiled before timing)."""
    jitted = tj.jit(fn, tiered=False)
    eager = lambda: fn(*args)                   # noqa: E731
    compiled = lambda: jitted(*args)            # noqa: E731
    t = time.perf_counter()
    compiled()                                  # trace and compile (or load from disk)
    jitted.wait_compiled()      # and the native hand-off of parallel kernels, built after it
    compile_s = time.perf_counter() - t
    one = {}
    for name, f in (("numpy", eager), ("tracejit", compiled)):
        f()
        t = time.perf_counter()
        f()
        one[name] = time.perf_counter() - t
    repeat = int(min(15, max(3, budget / max(sum(one.values()), 1e-9))))
    med = compare({"numpy": eager, "tracejit": compiled}, repeat=repeat, rounds=3)
    return dict(med, compile=compile_s, repeat=repeat, jitted=jitted)


def _check(jitted_out, eager_out, dtype) -> str:
    """'' when tracejit's results equal NumPy's (tolerance for long float32 sums), else why."""
    tol = 1e-3 if dtype == "float32" else 1e-9
    got, want = list(_leaves(jitted_out)), list(_leaves(eager_out))
    if len(got) != len(want):
        return "result count differs"
    for i, (g, e) in enumerate(zip(got, want)):
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"result {i}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        if e.dtype.kind in "fc":
            if not np.allclose(g, e, rtol=tol, atol=tol, equal_nan=True):
                return f"result {i}: values differ"
        elif not np.array_equal(g, e):
            return f"result {i}: values differ"
    return ""


def main(argv=None, budget: float = BUDGET):
    print(f"\nDifferential suite at realistic sizes: NumPy eager vs tracejit (untiered), "
          f"medians of interleaved runs; ratio = numpy / tracejit ({time.strftime('%Y-%m-%d')})")
    print("| case | dtype | largest input | scale | numpy ms | tracejit ms | ratio | reason |")
    print("|---|---|---|---|---|---|---|---|")
    unexplained, mismatched, total = [], [], time.perf_counter()
    with np.errstate(all="ignore"):
        for name, fn, make, dtypes, how in rows(argv):
            # float16 rows (a sample of the cases): benchmarks/half_precision.py times them
            for dt in (d for d in dtypes if d != "float16"):
                args = make(dt, np.random.default_rng(0))
                m = measure(fn, args, budget)
                ratio = m["numpy"] / m["tracejit"]
                why = reason(name, dt) if ratio < 1.0 else ""
                if ratio < 1.0 and not why:
                    unexplained.append(f"{name} {dt}")
                bad = _check(m["jitted"](*args), fn(*args), dt)
                if bad:
                    mismatched.append(f"{name} {dt}: {bad}")
                print(f"| {name} | {dt} | {_shape_note(args)} | {how} | {m['numpy'] * 1e3:.3f} "
                      f"| {m['tracejit'] * 1e3:.3f} | {ratio:.2f}x | {why} |", flush=True)
    print(f"\n{time.perf_counter() - total:.0f} s in all")
    if unexplained:
        print(f"below 1.0x with no reason recorded: {', '.join(unexplained)}")
    if mismatched:
        print(f"results differing from NumPy at these sizes: {'; '.join(mismatched)}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="rows whose name contains one of these")
    p.add_argument("--budget", type=float, default=BUDGET, help="timed seconds per row")
    a = p.parse_args()
    main(a.names, a.budget)
