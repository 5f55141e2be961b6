"""Generated kernels follow NumPy's scalar semantics, compared with the interpreter."""
import re

import numba
import numpy as np
import pytest

from tracejit.driver import compile_function, fusion_of
from tracejit.ir import Builder, TensorType, as_dtype, interpret, ops


def _binary(opdef, a, b):
    bld = Builder()
    t = TensorType(as_dtype(a.dtype), a.shape)
    x, y = bld.param(t), bld.param(t)
    fn = bld.build([bld.emit(opdef, [x, y]).result])
    return fn, [a, b]


def _unary(opdef, a, **attrs):
    bld = Builder()
    x = bld.param(TensorType(as_dtype(a.dtype), a.shape))
    fn = bld.build([bld.emit(opdef, [x], **attrs).result])
    return fn, [a]


def _check(fn, args):
    expected = interpret(fn, args)
    got = compile_function(fn, "numba")(args)
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


INTS = np.array([7, -7, 7, -7, 0, 5, -2**31, 2**31 - 1])
DIVS = np.array([2, 2, -2, -2, 3, 0, -1, -1])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("opdef", [ops.floor_divide, ops.remainder, ops.fmod])
def test_integer_floor_division_and_remainder_signs_and_zero(opdef, dtype):
    a, b = INTS.astype(dtype), DIVS.astype(dtype)
    if dtype == "int64":
        a[6] = np.iinfo(np.int64).min
    _check(*_binary(opdef, a, b))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("opdef", [ops.add, ops.sub, ops.mul, ops.neg, ops.abs])
def test_integer_overflow_wraps(opdef, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max, 3], dtype)
    b = np.array([1, -1, info.max, -4], dtype)
    _check(*(_binary(opdef, a, b) if opdef.num_operands == 2 else _unary(opdef, a)))


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 7.0])
SPECIAL2 = np.array([1.0, np.nan, 2.0, 0.0, 3.0, 0.0, np.inf, -np.inf])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opdef", [ops.div, ops.floor_divide, ops.remainder, ops.maximum,
                                   ops.minimum, ops.add, ops.mul, ops.power, ops.arctan2,
                                   ops.hypot, ops.copysign, ops.logaddexp, ops.fmod])
def test_float_binary_ops_propagate_nan_and_inf_like_numpy(opdef, dtype):
    _check(*_binary(opdef, SPECIAL.astype(dtype), SPECIAL2.astype(dtype)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opdef", [ops.exp, ops.tanh, ops.logistic, ops.log, ops.sqrt,
                                   ops.sign, ops.isnan, ops.isinf, ops.isfinite, ops.round])
def test_float_unary_special_values(opdef, dtype):
    fn, args = _unary(opdef, SPECIAL.astype(dtype))
    expected = interpret(fn, args)[0]
    got = compile_function(fn, "numba")(args)[0]
    np.testing.assert_allclose(got, expected, rtol=2e-7 if dtype == "float32" else 1e-15)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_float_to_int_conversion_of_special_values(dtype):
    a = np.array([np.nan, np.inf, -np.inf, 1e30, -3.7, 2.9, 0.0])
    with np.errstate(invalid="ignore"):
        _check(*_unary(ops.convert, a, dtype=as_dtype(dtype)))


@pytest.mark.parametrize("opdef", [ops.reduce_max, ops.reduce_min, ops.reduce_sum])
def test_reductions_propagate_nan(opdef):
    a = np.arange(40, dtype=np.float32).reshape(2, 20)
    a[1, 17] = np.nan
    _check(*_unary(opdef, a, axes=(1,)))


@pytest.mark.parametrize("opdef", [ops.argmax, ops.argmin])
def test_argmax_takes_the_first_nan_and_the_first_tie(opdef):
    a = np.array([[1.0, 3.0, 3.0, np.nan, np.nan], [2.0, 2.0, 1.0, 1.0, 0.5]], np.float32)
    _check(*_unary(opdef, a, axis=1))


def test_integer_power_wraps():
    a = np.array([3, -3, 2**20, 7], np.int64)
    b = np.array([3, 5, 4, 0], np.int64)
    _check(*_binary(ops.power, a, b))


def test_reshape_group_is_a_view_but_results_are_copies():
    import tracejit

    def f(x):
        h = np.exp(x)
        return h.reshape(6, 4) * 2, h.reshape(24)
    x = np.random.rand(4, 6).astype(np.float32)
    a, b = tracejit.jit(f)(x)
    np.testing.assert_allclose(a, np.exp(x).reshape(6, 4) * 2, rtol=1e-6)
    np.testing.assert_allclose(b, np.exp(x).reshape(24), rtol=1e-6)
    assert not np.shares_memory(b, x)


def test_softmax_keeps_nan_and_inf_semantics():
    import tracejit

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    x = np.random.rand(5, 37).astype(np.float32)
    x[1, 3] = np.nan
    x[2, 30] = np.inf
    x[3, :] = -np.inf
    x[4, 36] = np.nan
    with np.errstate(all="ignore"):
        want = softmax(x)
    got = tracejit.jit(softmax)(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    m = tracejit.jit(lambda x: (x.max(axis=1), x.min(axis=1)))(x)
    np.testing.assert_array_equal(m[0], x.max(axis=1))
    np.testing.assert_array_equal(m[1], x.min(axis=1))


def test_large_matmul_parallel_split_matches_numpy():
    import tracejit

    def f(a, b, c):
        return np.maximum(a @ b.T, 0) + (a.T @ c).sum()
    rng = np.random.default_rng(0)
    a = rng.random((70, 300), dtype=np.float32)
    b = rng.random((500, 300), dtype=np.float32)
    c = rng.random((70, 40), dtype=np.float32)
    np.testing.assert_allclose(tracejit.jit(f)(a, b, c), f(a, b, c), rtol=2e-5)


def test_blas_thread_configuration_respects_the_environment(monkeypatch):
    from tracejit.codegen import blas_threads
    calls = []
    monkeypatch.setattr(blas_threads, "_scipy_openblas", lambda: calls.append("blas"))
    for k in blas_threads.ENV:
        monkeypatch.delenv(k, raising=False)

    def configure():
        monkeypatch.setattr(blas_threads, "_scipy_configured", False)
        blas_threads.single_threaded_blas()

    monkeypatch.setenv("TRACEJIT_THREADS", "keep")
    configure()
    assert calls == []
    monkeypatch.delenv("TRACEJIT_THREADS")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    configure()
    assert calls == []
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    configure()
    assert calls == ["blas"]


def test_float32_sums_vectorize_with_numpys_accuracy():
    """A float32 row sum adds float32 partial sums that LLVM vectorizes (radd's reassoc flag)
    over blocks, and the blocks' totals in float64: the kernel's optimized LLVM IR adds whole
    vectors of floats, and its error against float64 is NumPy's pairwise sum's, within an
    ulp, for rows shorter than a block, a block and a partial one, and many blocks."""
    import re

    rng = np.random.default_rng(0)
    for n in (1000, 1500, 200_000):
        a = rng.standard_normal((3, n)).astype(np.float32) + 0.5
        fn, args = _unary(ops.reduce_sum, a, axes=(1,))
        program = compile_function(fn, "numba")
        got = program(args)[0].astype(np.float64)
        exact = a.astype(np.float64).sum(axis=1)
        scale = np.abs(a).astype(np.float64).sum(axis=1)
        numpy_err = np.abs(a.sum(axis=1) - exact)
        assert np.all(np.abs(got - exact) <= numpy_err + 1.2e-7 * scale), n
    (kernel,), (spec,) = program.program.modules, program.program.plan.kernels
    # compiled afresh: a kernel loaded from the disk cache keeps no LLVM IR to inspect
    fresh = numba.njit(error_model="numpy", fastmath={"contract"})(kernel.kernel.py_func)
    fresh(a, np.empty(3, np.float32), *spec.sizes, 0, spec.span)
    llvm = "".join(fresh.inspect_llvm().values())
    assert re.search(r"fadd reassoc <\d+ x float>", llvm)


def test_a_1d_kernel_over_a_block_vectorizes_and_computes_only_that_block():
    """A block loop counts from 0 (source.py): from ``lo``, Numba's wrap-around of negative
    indices stayed in the loop and a 1-D kernel ran 6x slower than NumPy, unvectorized."""
    import re

    from tracejit.codegen import direct

    a = np.linspace(-3, 3, 1001, dtype=np.float32)
    fn, args = _unary(ops.exp, a)
    program = compile_function(fn, "numba")
    (kernel,), (spec,) = program.program.modules, program.program.plan.kernels
    fresh = numba.njit(error_model="numpy", fastmath={"contract"})(kernel.kernel.py_func)
    out = np.zeros_like(a)
    fresh(a, out, *spec.sizes, 300, 700)
    np.testing.assert_array_equal(out[300:700], program(args)[0][300:700])
    assert not out[:300].any() and not out[700:].any()
    llvm = "".join(fresh.inspect_llvm().values())
    assert re.search(r"store <\d+ x float>", llvm)
    # the same kernel compiled by tracejit's own compiler: whole-vector loads and stores, and
    # no wraparound select left in the loop (signed index arithmetic is "nsw", as Numba's)
    src, sig = program.program.plan.kernel_sources[0], program.program.plan.signatures[0]
    llvm = direct.inspect_llvm(src, sig, kernel.__dict__)
    body = llvm[llvm.index("vector.body:"):]
    body = body[:body.index("\n\n")]
    assert re.search(r"load <\d+ x float>", body) and re.search(r"store <\d+ x float>", body)
    assert "insertelement" not in body and "select i1" not in body


def _both_variants(f, *args):
    """``f`` jitted, run with each kernel in one call and in blocks on threads (par_min=1)."""
    import tracejit
    from tracejit.codegen import Plan, Program
    fusion = fusion_of(tracejit.jit(f).lower(*args).function)
    return [Program(Plan(fusion, par_min=m))(list(args)) for m in (1 << 62, 1)]


def test_reductions_over_leading_axes_match_numpy_in_both_variants():
    def f(d, b, x, n):
        return (b - 0.1 * d.sum(axis=0), x.max(axis=(0, 1)), x.min(axis=0) * 2,
                n.sum(axis=0))
    rng = np.random.default_rng(0)
    d = rng.standard_normal((37, 19)).astype(np.float32)
    b = rng.standard_normal(19).astype(np.float32)
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    x[1, 2, 3] = np.nan
    n = rng.integers(-100, 100, (9, 4, 6))
    want = f(d, b, x, n)
    for got in _both_variants(f, d, b, x, n):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[2], want[2])
        np.testing.assert_array_equal(got[3], want[3])


def test_a_reshaped_matmul_operand_that_is_also_a_result_keeps_the_product():
    """The product went into the first output of its shape, which was the reshaped operand's,
    and was overwritten by it (found with the batch-times-matrix rewrite, whose vjp keeps the
    reshaped batch as a residual)."""
    import tracejit

    def f(x, w):
        h = x.reshape(6, 4)
        return h, h @ w
    x, w = np.arange(24.0).reshape(2, 3, 4), np.diag([2.0, 3.0, 4.0, 5.0])
    for got, want in zip(tracejit.jit(f)(x, w), f(x, w)):
        np.testing.assert_array_equal(got, want)


def test_large_matmul_epilogue_runs_in_each_threads_block():
    def f(a, b, bias):
        return np.maximum(a @ b + bias, 0), np.tanh(b.T @ a.T)   # tall and wide products
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 33)).astype(np.float32)
    b = rng.standard_normal((33, 90)).astype(np.float32)
    bias = rng.standard_normal(90).astype(np.float32)
    want = f(a, b, bias)
    for got in _both_variants(f, a, b, bias):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)


def test_large_results_reuse_a_buffer_only_when_nothing_holds_it():
    import tracejit

    f = tracejit.jit(lambda x: x * 2)
    x = np.arange(1 << 19, dtype=np.float32)          # a 2 MiB result: pooled
    first = f(x)
    view = f(x)[10:20]                                # only a view of the second is held
    third = f(x)
    for held in (first, third):
        np.testing.assert_array_equal(held, x * 2)
    assert not np.shares_memory(first, third) and not np.shares_memory(view, third)
    first[:] = -1                                     # the caller owns what it holds
    np.testing.assert_array_equal(f(x), x * 2)
    np.testing.assert_array_equal(view, x[10:20] * 2)
    address = f(x).ctypes.data                        # dropped at once: reused
    assert f(x).ctypes.data == address


def test_constant_results_are_fresh_copies():
    import tracejit

    f = tracejit.jit(lambda x: (np.ones(3, np.float32), x + 1))
    a, _ = f(np.zeros(3, np.float32))
    a[0] = 5
    np.testing.assert_array_equal(f(np.zeros(3, np.float32))[0], np.ones(3, np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opdef", [ops.hypot, ops.copysign, ops.logaddexp, ops.fmod])
def test_new_binary_ops_match_numpy_on_extremes_and_signed_zeros(opdef, dtype):
    info = np.finfo(dtype)
    a = np.array([info.max, -info.max, info.tiny, 0.0, -0.0, -0.0, 3.0, -3.0, 1e30, 5.5,
                  np.inf, -np.inf, np.nan, 2.0], dtype)
    b = np.array([info.max, info.max, info.tiny, -0.0, 0.0, -0.0, -4.0, 4.0, -1e30, -2.0,
                  np.inf, -np.inf, 1.0, np.nan], dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([a, rng.standard_normal(50).astype(dtype) * 30])
    y = np.concatenate([b, rng.standard_normal(50).astype(dtype) * 30])
    fn, args = _binary(opdef, x, y)
    got = compile_function(fn, "numba")(args)[0]
    with np.errstate(all="ignore"):
        want = getattr(np, opdef.name)(x, y)
    assert got.dtype == want.dtype
    if opdef is ops.logaddexp and dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=2e-7)      # float32 libm exp/log1p
    else:
        np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 5), 0), ((3, 5), 1), ((2, 0, 3), 1),
                                        ((2, 3, 4), 2), ((300, 40), 0)])
def test_cumsum_kernel_matches_numpy(dtype, shape, axis):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    if dtype == "int32" and x.size:
        x.flat[0] = 2**31 - 1                 # wraps like NumPy
    if dtype.startswith("float") and x.size:
        x.flat[0] = -0.0
    fn, args = _unary(ops.cumsum, x, axis=axis)
    got = compile_function(fn, "numba")(args)[0]
    want = np.add.accumulate(x, axis=axis, dtype=x.dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all()


def test_cumsum_feeds_and_reads_fused_kernels():
    # (square and sqrt, correctly rounded everywhere: NumPy's exp and log on AVX-512 are its
    # own, not libm's, and differ from a kernel's in the last bit)
    bld = Builder()
    x = bld.param(TensorType(as_dtype("float64"), (4, 6)))
    e = bld.emit(ops.mul, [x, x]).result
    c = bld.emit(ops.cumsum, [e], axis=1).result
    fn = bld.build([bld.emit(ops.sqrt, [c]).result])
    kinds = [g.kind for g in fusion_of(fn).groups]
    assert kinds == ["loop", "op", "loop"], kinds
    _check(fn, [np.random.default_rng(2).standard_normal((4, 6))])


def test_scipys_blas_is_loaded_without_scipy_linalg_and_scipy_linalg_still_imports(tmp_path):
    """A matmul program loads scipy.linalg.cython_blas from its file, without scipy.linalg's
    __init__ (0.17-0.20 s of a first call); a later import of either works as usual."""
    import os
    import subprocess
    import sys
    code = """
import sys, numpy as np, tracejit
f = tracejit.jit(lambda a, b: a @ b, tiered=False)
a = np.ones((4, 4), np.float32)
assert (f(a, a) == 4).all()
assert "scipy.linalg" not in sys.modules, "scipy.linalg's __init__ ran"
import scipy.linalg.cython_blas
import scipy.linalg
assert scipy.linalg.cython_blas.__pyx_capi__
assert (scipy.linalg.solve(np.eye(2), [1.0, 2.0]) == [1, 2]).all()
print("ok")
"""
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path), TRACEJIT_COMPILE_WORKERS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.parametrize("shapes", [((40, 33), (33, 90)), ((90, 33), (33, 40)),
                                    ((1, 33), (33, 40)), ((40, 33), (33, 1)),
                                    ((40, 0), (0, 90))], ids=["wide", "tall", "row", "col", "k0"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_added_to_an_input_is_accumulated_by_blas_in_either_order(shapes, dtype):
    """``x + a @ b`` (and ``a @ b + x``) is one gemm adding to a copy of ``x``, in one call and
    in blocks on threads; the kernel says which input its output may be (KernelSpec.in_place)."""
    (m, k), (_, n) = shapes
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    x = rng.standard_normal((m, n)).astype(dtype)

    def f(x, a, b):
        return x + a @ b, a @ b + 2 * x     # the second has an epilogue of its own
    want = (x.astype(np.float64) + a.astype(np.float64) @ b, a @ b + 2 * x)
    for got in _both_variants(f, x, a, b):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
    import tracejit
    from tracejit.codegen import Plan
    plan = Plan(fusion_of(tracejit.jit(lambda x, a, b: x + a @ b).lower(x, a, b).function))
    (spec,) = [s for s in plan.kernels if s is not None and "gemm" in s.source]
    assert re.search(r"gemm\(.*, 1\)", spec.source) and spec.in_place is not None

