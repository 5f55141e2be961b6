"""The CUDA backend (codegen/cuda/) against the reference interpreter, under Numba's CUDA
simulator, and every kind of kernel it generates compiled to PTX by NVVM (no GPU needed).

Importing tests/cuda_simulator.py chooses the simulator (or skips this module with the
reason). The PTX checks need the real target, so they run in a child process. The simulator
does not type-check kernels: that is what the PTX test is for.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuda_simulator  # chooses the simulator before numba.cuda is imported (or skips)
import tracejit as tj  # noqa: E402
from tracejit.codegen.cuda import LaunchConfig, has_device  # noqa: E402
from tracejit.ir import Builder, TensorType, as_dtype, ops  # noqa: E402
from tracejit.ir.registry import OPS  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 7)).astype(np.float32)
W1 = (RNG.standard_normal((7, 6)) * 0.5).astype(np.float32)
B1 = RNG.standard_normal(6).astype(np.float32)
W2 = (RNG.standard_normal((6, 3)) * 0.5).astype(np.float32)
Y = np.array([0, 2, 1, 1, 0])


def chain(x):
    return np.tanh(x * 2.0 + 1.0) * np.exp(-x) - np.sqrt(np.abs(x))


def broadcasts(x, b):
    return (x[:, :6] + b) * b[None, :] + 1.5


def transposes(x):
    return x.T * 2.0 + x.T[::-1]


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def reductions(x):
    return (x.sum(axis=0), x.max(axis=1), x.argmax(axis=0), x.argmin(axis=1), x.prod(axis=1),
            (x > 0).any(axis=0), x.sum())


def mlp_forward(x, w1, b1, w2):
    return np.tanh(np.maximum(x @ w1 + b1, 0.0) @ w2)


def loss(params, x, y):
    w1, b1, w2 = params
    logits = np.maximum(x @ w1 + b1, 0.0) @ w2
    return tj.nn.functional.cross_entropy(logits, y)


def with_cpu_op(x):
    y = np.exp(x) * 2.0
    z = np.pad(y, ((1, 1), (0, 0)))          # pad: no CUDA kernel yet, runs on the CPU
    return np.tanh(z).sum(axis=1) + 1.0


CASES = {"chain": (chain, (X,)), "broadcasts": (broadcasts, (X, B1)),
         "transposes": (transposes, (X,)), "softmax": (softmax, (X,)),
         "reductions": (reductions, (X,)), "mlp_forward": (mlp_forward, (X, W1, B1, W2)),
         "with_cpu_op": (with_cpu_op, (X,))}


def _as_tuple(r):
    return r if isinstance(r, (tuple, list)) else (r,)


def _check(got, want):
    for g, w in zip(_as_tuple(got), _as_tuple(want)):
        assert isinstance(g, (np.ndarray, np.generic)) and g.dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_backend_matches_interpreter(name):
    fn, args = CASES[name]
    _check(tj.jit(fn, device="cuda")(*args), tj.jit(fn, backend="interpreter")(*args))


def test_grad_of_mlp_loss_on_cuda_matches_interpreter():
    params = (W1, B1, W2)
    got = tj.jit(tj.grad(loss), device="cuda")(params, X, Y)
    want = tj.jit(tj.grad(loss), backend="interpreter")(params, X, Y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_float16_groups_run_on_the_cpu_with_a_note_naming_float16():
    """The CUDA kernels have no float16 (no half arithmetic in their scalar rules yet): those
    groups run on NumPy's float16 on the CPU, and the placement says why."""
    x = X.astype(np.float16)
    jitted = tj.jit(chain, device="cuda")
    assert "dtype float16 has no CUDA kernels" in jitted.lower(x).placement
    got = jitted(x)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), chain(x).astype(np.float64), rtol=2e-3,
                               atol=2e-3)


def test_cpu_only_op_is_noted_and_values_cross_once_per_direction():
    jitted = tj.jit(with_cpu_op, device="cuda")
    lowered = jitted.lower(X)
    assert "on the CPU: pad" in lowered.placement
    assert "on the CPU: pad" in lowered.source
    program = lowered._entry.program
    program.transfers.update(to_device=0, to_host=0)
    jitted(X)
    # x in; exp(x)*2 back for pad; the padded value in; the result back
    assert program.transfers == {"to_device": 2, "to_host": 2}


def test_device_results_stay_on_the_device():
    out = tj.jit(chain, device="cuda", device_results=True)(X)
    assert not isinstance(out, np.ndarray)
    np.testing.assert_allclose(out.copy_to_host(), chain(X), rtol=2e-5, atol=1e-6)


def test_device_arrays_are_taken_as_arguments_where_they_are():
    on_device = tj.jit(chain, device="cuda", device_results=True)
    d = on_device(X)
    jitted = tj.jit(mlp_forward, device="cuda")
    program = jitted.lower(d, W1, B1, W2)._entry.program
    program.transfers.update(to_device=0, to_host=0)
    got = jitted(d, W1, B1, W2)
    np.testing.assert_allclose(got, mlp_forward(chain(X), W1, B1, W2), rtol=1e-4, atol=1e-6)
    assert program.transfers == {"to_device": 3, "to_host": 1}    # W1, B1, W2 in; result out
    # a result that is the argument is a copy, as NumPy's would be
    same = tj.jit(lambda x: x, device="cuda", device_results=True)(d)
    assert same is not d
    np.testing.assert_array_equal(same.copy_to_host(), d.copy_to_host())


def test_a_write_into_a_device_array_argument_reaches_it():
    def scale_first_row(x):
        x[0] = x[0] * 2.0
        return x.sum()

    d = tj.jit(chain, device="cuda", device_results=True)(X)
    want_x = chain(X)
    want = scale_first_row(want_x)
    got = tj.jit(scale_first_row, device="cuda")(d)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(d.copy_to_host(), want_x, rtol=2e-5, atol=1e-6)


def all_elementwise_ops(dtype: str):
    """A Function applying every elementwise op with a device rule that takes ``dtype``
    (and no attributes) to its parameters: one kernel with every scalar rule in it."""
    dt = as_dtype(dtype)
    b = Builder(f"all_{dtype}")
    x, y = b.param(TensorType(dt, (4,))), b.param(TensorType(dt, (4,)))
    results = []
    for od in OPS.values():
        if (od.category != "elementwise" or od.attrs or od in (ops.gammaln, ops.digamma, ops.power)
                or dt.kind not in od.kinds or od.arity not in (1, 2, 3)):
            continue
        if od is ops.where:
            results.append(b.emit(od, [b.emit(ops.gt, [x, y]).result, x, y]).result)
            continue
        if od.arity == 3:
            continue
        try:
            results.append(b.emit(od, [x, y][:od.arity]).result)
        except Exception:            # noqa: BLE001 (the op refuses this dtype)
            continue
    return b.build(results)


def one_kernel_program(fn):
    """The CUDA program of ``fn`` with all its ops in one loop group (one kernel, one
    launch: fusion would give each independent result its own)."""
    from tracejit.codegen.cuda import CudaProgram
    from tracejit.ir.passes.fusion import Fusion, FusionGroup
    g = FusionGroup(0, "loop", list(fn.ops), fn.results[0].shape, inputs=list(fn.params),
                    outputs=list(fn.results))
    return CudaProgram(fn, Fusion(fn, [g], {op: g for op in fn.ops}))


def _elementwise_inputs(dtype):
    if dtype == "int32":
        return [np.array([3, -7, 5, 2], np.int32), np.array([2, 3, 4, 1], np.int32)]
    return [np.array([0.3, -0.7, 0.5, 0.2], dtype), np.array([0.6, 0.2, -0.4, 0.9], dtype)]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_every_scalar_rule_matches_interpreter(dtype):
    fn = all_elementwise_ops(dtype)
    args = _elementwise_inputs(dtype)
    with np.errstate(all="ignore"):
        want = fn(*args)
        got = one_kernel_program(fn)(args)
    for g, w, r in zip(got, want, fn.results):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=0, equal_nan=True,
                                   err_msg=r.op.opdef.name)


# A device with 8 blocks at once, 4 threads each, and two-pass reductions from 2 elements a
# thread: small enough for the simulator, big enough that few outputs share blocks.
TWO_PASS = LaunchConfig(8, 4, 4, 4, 1, "simulator, 8 blocks", min_per_thread=2)


def few_outputs_many_inputs(x, b):
    return (x.sum(), x.max(axis=1) * 2.0 + b, x.argmax(axis=1), np.abs(x).argmin(),
            (x > 0).any(), x.prod(axis=1), x.mean(axis=0), (x * x).sum(axis=1).astype(np.int32))


def two_pass_program(config=TWO_PASS):
    from tracejit.codegen.cuda import CudaProgram
    from tracejit.driver import fusion_of
    x = RNG.standard_normal((3, 40)).astype(np.float32)
    x[1, 5] = x[1, 30] = 9.0                 # a tie: argmax gives the first
    b = RNG.standard_normal(3).astype(np.float32)
    fn = tj.make_ir(few_outputs_many_inputs)(x, b)
    return CudaProgram(fn, fusion_of(fn), config=config), [x, b]


def test_few_outputs_of_many_inputs_reduce_in_two_passes_like_the_interpreter():
    program, args = two_pass_program()
    kinds = [spec.kind for _, spec in program.launched]
    assert kinds.count("partial_reduction") == kinds.count("final_reduction") >= 5
    assert "# cuda kernel k0_final (final_reduction)" in program.source
    got = program(args)
    want = tj.jit(few_outputs_many_inputs, backend="interpreter")(*args)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)
    # deterministic: the same bits on every run, and the one-pass kernels' answer
    for g, again in zip(got, program(args)):
        np.testing.assert_array_equal(g, again)
    one_pass, _ = two_pass_program(LaunchConfig(8, 4, 4, 4, 1, "one pass", min_per_thread=99))
    assert "partial_reduction" not in one_pass.source
    for g, w in zip(got, one_pass(args)):
        np.testing.assert_allclose(g, w, rtol=1e-6)


PTX_SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, {tests!r})
    from numba import cuda
    from numba.cuda.cudadrv import nvvm
    try:
        nvvm.NVVM()
    except Exception as e:
        print("NO-NVVM", e)
        sys.exit(0)
    import test_cuda_backend as t
    import tracejit as tj
    from tracejit.codegen.cuda.program import kernel_ptx
    kinds = set()
    programs = [tj.jit(fn, device="cuda").lower(*args) for fn, args in t.CASES.values()]
    programs.append(tj.jit(tj.grad(t.loss), device="cuda").lower((t.W1, t.B1, t.W2), t.X, t.Y))
    for dtype in ("float32", "float64", "int32", "int64", "bool", "uint8"):
        programs.append(t.one_kernel_program(t.all_elementwise_ops(dtype)))
    programs.append(t.two_pass_program(t.LaunchConfig(132, 256, 4, 16, 8, "a GPU",
                                                      min_per_thread=1))[0])
    all_ops = {{id(p) for p in programs[-7:-1]}}
    seen = set()
    for p in programs:
        prog = getattr(p, "_entry", None)
        for name, spec in (prog.program.launched if prog is not None else p.launched):
            key = (spec.source, spec.signature)
            if key in seen:              # a kernel two programs both make: compiled once
                continue
            if not {every!r} and spec.kind in kinds and id(p) not in all_ops:
                continue                 # make test: one kernel of each kind, every op
            ptx = kernel_ptx(spec, (9, 0), name)
            assert ".entry" in ptx and ".target sm_90" in ptx, spec.source
            kinds.add(spec.kind)
            seen.add(key)
    print("KINDS", sorted(kinds), len(seen))
""")


def _compile_to_ptx(every: bool):
    env = cuda_simulator.ptx_child_env()
    tests = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", PTX_SCRIPT.format(tests=tests, every=every)],
                          env=env,
                          capture_output=True, text=True,
                          cwd=os.path.dirname(tests))
    if "NO-NVVM" in proc.stdout:
        pytest.skip(f"NVVM is missing (pip install numba-cuda[cu13]): {proc.stdout.strip()}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert ("KINDS ['elementwise', 'final_reduction', 'matmul', 'partial_reduction', "
            "'reduction']") in proc.stdout, proc.stdout


def test_every_kind_of_kernel_compiles_to_ptx():
    """One kernel of each kind and the kernels of every elementwise op in six dtypes (about
    10 s of Numba's CUDA frontend, 0.5 s a kernel); every kernel of the cases: slow."""
    _compile_to_ptx(every=False)


@pytest.mark.slow
def test_every_kernel_of_the_backend_cases_compiles_to_ptx():
    _compile_to_ptx(every=True)


@pytest.mark.skipif(not has_device(), reason="needs a real CUDA GPU (this run uses the "
                    "simulator or has none); benchmarks/gpu.py runs these on one")
def test_on_a_real_gpu():
    _check(tj.jit(softmax, device="cuda")(X), softmax(X))


@pytest.mark.skipif(cuda_simulator.ON_DEVICE, reason="a fix of the simulator, not the device")
def test_the_threads_of_a_simulated_block_share_one_shared_array(monkeypatch):
    """The simulator's find-or-make of a block's shared array raced: two threads could each
    make one (a tiled matmul then gave wrong values in about one suite run in two).
    codegen/cuda/simulator.py makes it under a lock; a slow allocation shows the race."""
    import threading
    import time

    from numba.cuda.simulator import kernelapi

    from tracejit.codegen.cuda.simulator import make_safe
    make_safe()
    empty = np.empty

    def slow_empty(*args, **kwargs):
        time.sleep(0.01)                   # another thread runs meanwhile
        return empty(*args, **kwargs)
    monkeypatch.setattr(np, "empty", slow_empty)
    shared, got = kernelapi.FakeCUDAShared(0), []

    def thread():
        got.append(shared.array((4, 4), np.float64))
    threads = [threading.Thread(target=thread) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(a is got[0] for a in got)
