"""The differential suites through the CUDA backend: every case of
tests/test_numpy_differential.py, hypothesis random programs (tests/strategies.py) and model
gradients (tests/test_autodiff_models.py) run by ``jit(f, device="cuda")`` under Numba's CUDA
simulator (tests/cuda_simulator.py), against NumPy and the reference interpreter; and the
kernels they generate compiled to PTX by NVVM in a child process (the simulator runs kernels
as Python and types nothing: NVVM is what finds a kernel the device cannot compile).

The simulator runs each kernel element by element in Python threads, so ``make test`` runs a
representative part (every kind of kernel, every op category, one dtype each) and the slow
suite (``make test-slow``) runs the rest: the other dtype, the costly cases, more examples.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings

import cuda_simulator
import tracejit as tj
import test_autodiff_models as models
import test_backend_differential as backend_differential
from gradcheck import float_positions, projected
from strategies import random_programs
from test_numpy_differential import CASES, assert_same_tree

# Cases whose simulator run costs over ~0.8 s on one core (big einsums, many kernels):
# in the slow suite; the fast part still has every kernel kind and op category.
COSTLY = {"logsumexp", "batch_norm_stats", "attention_3d_matmul", "attention_4d_einsum",
          "pairwise_distances", "integer_arithmetic", "einsum_with_ellipsis",
          "sequence_model_idioms", "cosine_similarity"}


def _case_params():
    params = []
    for c in CASES:
        for k, dt in enumerate(c.dtypes):
            slow = k > 0 or c.name in COSTLY
            params.append(pytest.param(c, dt, id=f"{c.name}-{dt}",
                                       marks=[pytest.mark.slow] if slow else []))
    return params


@pytest.mark.parametrize("case,dtype", _case_params())
def test_cuda_matches_numpy_on_the_differential_case(case, dtype):
    inputs = case.make(dtype, np.random.default_rng(0))
    with np.errstate(all="ignore"):
        expected = case.fn(*inputs)
        got = tj.jit(case.fn, device="cuda")(*inputs)
    # float16 groups run on the CPU (placement), whose sums round once where some of NumPy's
    # loops round every step: test_numpy_differential's float16 tolerance
    assert_same_tree(got, expected, {"float16": 1e-2, "float32": 2e-5}.get(dtype, 1e-11))


# -- random programs: the backend-differential suite's checks, on the "cuda" backend ---------

def _run_on_cuda(program):
    backend_differential._run_both(*program, backend="cuda")


@settings(max_examples=40)
@given(random_programs(max_ops=8, special_values=False))
def test_random_programs_on_cuda_match_the_interpreter(program):
    _run_on_cuda(program)


@settings(max_examples=15)
@given(random_programs(max_ops=8, allow=backend_differential._CHAINS, dtypes=("f32", "f64"),
                       special_values=False))
def test_random_fused_chains_with_reductions_on_cuda_match_the_interpreter(program):
    _run_on_cuda(program)


@settings(max_examples=15)
@given(random_programs(max_ops=8, allow=backend_differential._ROW_OPS, dtypes=("f32", "f64"),
                       special_values=False, unit_dims=True))
def test_random_programs_on_size_one_and_empty_dims_on_cuda_match_the_interpreter(program):
    _run_on_cuda(program)


_REDUCING = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin", "exp",
             "add", "mul", "abs", "transpose", "gt", "where"]


@settings(max_examples=30)
@given(random_programs(max_ops=8, allow=_REDUCING, dtypes=("f32", "f64", "i32", "bool"),
                       special_values=False))
def test_random_reductions_in_two_passes_match_the_interpreter(program):
    """Reductions of few outputs as partials + final pass (blocks of 2 threads, from 1
    element a thread: the random programs' reductions of 4 or more elements), against the
    interpreter."""
    from tracejit.codegen.cuda import CudaProgram, LaunchConfig
    from tracejit.driver import fusion_of
    from tracejit.ir import interpret
    fn, inputs = program
    config = LaunchConfig(8, 4, 2, 4, 1, "simulator, 8 blocks", min_per_thread=1)
    with np.errstate(all="ignore"):
        expected = interpret(fn, inputs)
        got = CudaProgram(fn, fusion_of(fn), config=config)(inputs)
    backend_differential._same(expected, got)


@pytest.mark.slow
@settings(max_examples=400)
@given(random_programs(max_ops=8, special_values=False))
def test_many_random_programs_on_cuda_match_the_interpreter(program):
    _run_on_cuda(program)


# -- gradients: float64, the backward program on the device against the interpreter's ------

# models of distinct structure (matmul epilogues, softmax levels, gathers, pooling, layout)
FAST_MODELS = {"mlp_relu_softmax_xent", "layer_norm", "attention", "conv1d", "max_pool",
               "embedding_mean", "pad_flip_transpose"}


def _gradient_program(name):
    f, *args = models.MODELS[name]
    out = np.asarray(tj.jit(f, backend="interpreter")(*args))
    w = np.random.default_rng(0).standard_normal(out.shape) if out.shape else 1.0
    return tj.grad(projected(f, w), argnums=tuple(float_positions(args))), args


@pytest.mark.parametrize("name", [n if n in FAST_MODELS else pytest.param(
    n, marks=pytest.mark.slow) for n in sorted(models.MODELS)])
def test_gradient_on_cuda_matches_the_interpreter(name):
    grad, args = _gradient_program(name)
    want = tj.jit(grad, backend="interpreter")(*args)
    got = tj.jit(grad, device="cuda")(*args)
    for g, w in zip(got, want):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


# -- PTX: what the simulator cannot check ----------------------------------------------------

PTX_SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, {tests!r})
    from numba.cuda.cudadrv import nvvm
    try:
        nvvm.NVVM()
    except Exception as e:
        print("NO-NVVM", e)
        sys.exit(0)
    from hypothesis import HealthCheck, given, settings
    import tracejit as tj
    import test_cuda_differential as t
    from strategies import random_programs
    from tracejit.codegen.cuda import CudaProgram
    from tracejit.codegen.cuda.program import kernel_ptx
    from tracejit.driver import fusion_of
    slow, examples = {slow!r}, {examples!r}
    seen, kinds = set(), set()

    def compile_all(program):
        for spec in program.kernels:        # each distinct kernel once
            key = (spec.source, spec.signature)
            if key not in seen:
                ptx = kernel_ptx(spec, (9, 0))
                assert ".entry" in ptx and ".target sm_90" in ptx, spec.source
                seen.add(key)
                kinds.add(spec.kind)

    for case, dtype in t.ptx_cases(slow):
        compile_all(tj.jit(case.fn, device="cuda").lower(
            *case.make(dtype, np.random.default_rng(0)))._entry.program)
    for name in t.ptx_models(slow):
        grad, args = t._gradient_program(name)
        compile_all(tj.jit(grad, device="cuda").lower(*args)._entry.program)

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(random_programs(max_ops=8, special_values=False))
    def random(program):
        fn, _ = program
        compile_all(CudaProgram(fn, fusion_of(fn)))
    random()
    print("KINDS", sorted(kinds), len(seen))
""")


def ptx_cases(slow: bool):
    """The differential cases whose kernels the PTX check compiles: every case in every dtype
    (slow), or the fast part's cases of a budget: one per op family the simulator runs."""
    if slow:
        return [(c, dt) for c in CASES for dt in c.dtypes]
    fast = {"softmax", "reductions", "astype_conversions", "zero_d_arrays_and_scalars",
            "matmul_ranks", "basic_indexing", "bitwise_and_bool_logic", "argmax_accuracy"}
    return [(c, c.dtypes[-1]) for c in CASES if c.name in fast]


def ptx_models(slow: bool):
    return sorted(models.MODELS) if slow else ["mlp_relu_softmax_xent"]


def _compile_to_ptx(slow: bool, examples: int):
    tests = str(__import__("pathlib").Path(__file__).resolve().parent)
    proc = subprocess.run(
        [sys.executable, "-c", PTX_SCRIPT.format(tests=tests, slow=slow, examples=examples)],
        env=cuda_simulator.ptx_child_env(), capture_output=True, text=True,
        cwd=str(__import__("pathlib").Path(tests).parent))
    if "NO-NVVM" in proc.stdout:
        pytest.skip(f"NVVM is missing (pip install numba-cuda[cu13]): {proc.stdout.strip()}")
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert "KINDS ['elementwise', 'matmul', 'reduction']" in proc.stdout, proc.stdout


# Slow since session 19: 19 s of Numba's CUDA frontend (0.5 s a kernel), and make test's five
# minutes on two cores had no room for it once the CUDA suites ran there again; make test keeps
# test_cuda_backend's PTX check (every kind of kernel, every elementwise op in six dtypes).
@pytest.mark.slow
def test_kernels_of_the_fast_differential_cases_compile_to_ptx():
    _compile_to_ptx(slow=False, examples=10)


@pytest.mark.slow
def test_kernels_of_every_differential_case_and_gradient_compile_to_ptx():
    _compile_to_ptx(slow=True, examples=300)
