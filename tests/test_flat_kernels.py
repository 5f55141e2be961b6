"""Elementwise groups over one shape run as one loop over 1-D views of their arrays
(kernel.LoopKernel.generate_flat): the same results as NumPy for every dtype, rank, scalar
broadcast and reshape, also when the plan splits the call into blocks over threads."""
import numpy as np
import pytest

import tracejit as tj


def _check(f, *args):
    jitted = tj.jit(f, tiered=False)
    for _ in range(2):
        got, want = jitted(*args), f(*args)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            # float kernels may contract a * b + c into an fma (one rounding fewer)
            tol = {np.float32: 1e-5, np.float64: 1e-12}.get(w.dtype.type, 0)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    source = jitted.lower(*args).source
    assert "reshape((fn,))" in source          # the flat kernel ran
    return source


@pytest.mark.parametrize("shape", [(7, 3), (2, 5, 3), (1, 1), (4, 1, 6, 2)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32])
def test_flat_elementwise_kernel_matches_numpy(shape, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    y = (rng.standard_normal(shape) * 4).astype(dtype)

    def f(x, y):
        s = x * y + x - y * dtype(3)
        return s, np.maximum(s, x), (s > y)
    _check(f, x, y)


def test_flat_kernel_reads_a_reshaped_input_and_a_0d_input():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 4))
    flat = rng.standard_normal(24)
    c = np.array(2.5)

    def f(x, flat, c):
        return (x + flat.reshape(6, 4) * c,)
    _check(f, x, flat, c)


@pytest.mark.parametrize("shape", [(1001, 3), (1, 5000)])
def test_flat_kernel_split_over_threads_covers_every_element(shape):
    # blocks lo:hi split the elements, also of a batch of one
    from tracejit.codegen import Plan, Program
    from tracejit.driver import fusion_of
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)

    def f(x, y):
        return (np.tanh(x) * y - np.float32(0.5),)
    fusion = fusion_of(tj.jit(f).lower(x, y).function)
    plan = Plan(fusion, par_min=1)                    # every kernel on blocks
    assert any(spec.parallel for spec in plan.kernels)
    np.testing.assert_array_equal(Program(plan)([x, y])[0], tj.jit(f, tiered=False)(x, y)[0])
    np.testing.assert_allclose(Program(plan)([x, y])[0], f(x, y)[0], rtol=1e-5, atol=1e-6)


def test_flat_kernel_over_a_narrow_inner_dim_is_vectorized():
    """A nest over (n, 3) vectorized only its inner loop of 3: 9x slower than now."""
    import re

    from tracejit.codegen import direct
    from tracejit.driver import compile_function

    x = np.ones((100, 3), np.float32)
    fn = tj.jit(lambda x, y: x * y + np.float32(1)).lower(x, x).function
    program = compile_function(fn, "numba")
    (kernel,), = program.program.modules,
    src, sig = program.program.plan.kernel_sources[0], program.program.plan.signatures[0]
    llvm = direct.inspect_llvm(src, sig, kernel.__dict__)
    body = llvm[llvm.index("vector.body:"):]
    body = body[:body.index("\n\n")]
    assert re.search(r"load <\d+ x float>", body) and re.search(r"store <\d+ x float>", body)
    assert "select i1" not in body             # no wrap-around of a negative index left


def test_a_group_with_a_transpose_keeps_its_loop_nest():
    x = np.arange(12.0).reshape(3, 4)

    def f(x, y):
        return (x.T + y,)
    source = tj.jit(f, tiered=False).lower(x, x.T.copy()).source
    assert "reshape((fn,))" not in source
    np.testing.assert_array_equal(tj.jit(f, tiered=False)(x, x.T.copy())[0], x.T + x.T)
