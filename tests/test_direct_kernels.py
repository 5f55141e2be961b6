"""codegen/direct, the compiler of generated kernels straight to LLVM, against Numba's
compiler on the same sources: the kernel language's operators and conversions, random
programs, what falls back to Numba, argument checks, and exceptions raised inside kernels,
also from the native parallel hand-off."""
import numpy as np
import pytest
from hypothesis import given, settings
from numba import njit, types
from numba.np.numpy_support import from_dtype

import tracejit
from tracejit import config
from tracejit.codegen import direct
from tracejit.codegen.source import HEADER
from tracejit.driver import compile_function
from tracejit.ir import interpret

from strategies import random_programs


@pytest.fixture(autouse=True)
def _direct_compiler_on(monkeypatch):
    """These tests are about the direct compiler: on whatever TRACEJIT_DIRECT says."""
    monkeypatch.setattr(config, "direct", True)

# Expressions the kernel generators write, on every mix of operand types they meet: each
# column of the output is one expression, computed per row of the inputs.
SEMANTICS = HEADER + '''

@njit(nogil=True, error_model="numpy", fastmath={"contract"})
def kernel(a0, a1, a2, a3, a4, a5, o0, o1, c0, s0, lo, hi):
    for i in range(max(lo, 0), hi):
        x = a0[i]
        y = a1[i]
        f = a2[i]
        d = a3[i]
        u = a4[i]
        m = a5[i]
        o0[i, 0] = f + d
        o0[i, 1] = f * c0 + f
        o0[i, 2] = x / (y if y != 0 else 1)
        o0[i, 3] = np.float32(d)
        o0[i, 4] = f - x
        o0[i, 5] = (f if (f >= d or f != f) else d)
        o0[i, 6] = exp32(f)
        o0[i, 7] = tanh32(f)
        o0[i, 8] = log32(f)
        o0[i, 9] = np.float32(math.exp(d)) if d < 80 else 0.0
        o0[i, 10] = np.sqrt(abs(d))
        o0[i, 11] = fmaximum(f, np.float32(d))
        o0[i, 12] = radd(d, np.float64(f))
        o0[i, 13] = np.float32(np.floor(d))
        o0[i, 14] = -f
        o0[i, 15] = math.copysign(1.0, d)
        o0[i, 16] = h2f(f2h(f))
        o0[i, 17] = round16(f)
        o0[i, 18] = logaddexp32(f, np.float32(d))
        o0[i, 19] = f ** np.float32(2.0) if f == f else f
        o0[i, 20] = d // (f if i % 5 != 0 else 0.0)
        o0[i, 21] = d % (f if i % 7 != 0 else -0.0)
        o0[i, 22] = f // np.float32(-1.5) + f % np.float32(2.5)
        o1[i, 0] = x + y
        o1[i, 1] = np.int32(x * y)
        o1[i, 2] = ifloordiv(x, y)
        o1[i, 3] = iremainder(x, y)
        o1[i, 4] = x // 7 + x % 7
        o1[i, 5] = (x >> np.int32(2)) ^ (y << np.int32(3))
        o1[i, 6] = bool((x < y) & (f > d)) + (not m) * 2 + (f != f) * 4 + (d == d) * 8
        o1[i, 7] = ~x
        o1[i, 8] = f2i64(d)
        o1[i, 9] = np.int64(u >> np.uint64(3)) + np.int64(u % np.uint64(10))
        o1[i, 10] = a0[i - s0] if i >= 0 else 0
        o1[i, 11] = max(x, y) - min(x, np.int64(y))
        o1[i, 12] = ipow(x % 5, 3)
        o1[i, 13] = np.int64(np.int8(x))
        o1[i, 14] = np.int64(np.uint8(y))
        o1[i, 15] = int(m) + int(u > 5)
        o1[i, 16] = np.int64(f2u64(abs(d)))
        t = x
        if t < 0:
            t += s0
        k = 0
        while k < 3 and t > 0:
            t = t // 2
            k += 1
        o1[i, 17] = t + k + len(a0)
    return 0
'''


def _semantics_inputs():
    rng = np.random.default_rng(0)
    n = 64
    x = rng.integers(-1000, 1000, n).astype(np.int64)
    y = rng.integers(-20, 20, n).astype(np.int32)
    f = rng.standard_normal(n).astype(np.float32) * 4
    f[:4] = [np.nan, np.inf, -np.inf, -0.0]
    d = rng.standard_normal(n) * 30
    d[4:8] = [np.nan, 0.0, -1e300, 1e-310]
    u = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2)
    m = rng.random(n) > 0.5
    return [x, y, f, d, u, m]


def test_kernel_language_operators_and_conversions_match_numba():
    ns = {}
    exec(SEMANTICS, ns)
    ins = _semantics_inputs()
    n = len(ins[0])
    sig = tuple(types.Array(from_dtype(a.dtype), 1, "C") for a in ins) + (
        types.Array(types.float64, 2, "C"), types.Array(types.int64, 2, "C"), types.float32,
        types.int64, types.int64, types.int64)
    kern = direct.build(SEMANTICS, sig, ns)
    assert kern is not None
    outs = []
    for compiled in (kern, ns["kernel"]):
        o0, o1 = np.zeros((n, 23)), np.zeros((n, 18), np.int64)
        with np.errstate(all="ignore"):
            compiled(*ins, o0, o1, np.float32(0.5), n, 0, n)
        outs.append((o0, o1))
    (d0, d1), (n0, n1) = outs
    np.testing.assert_array_equal(d1, n1)
    # FMA contraction may fuse differently in the two pipelines: a rounding apart at most
    np.testing.assert_allclose(d0, n0, rtol=2e-7, atol=0, equal_nan=True)


def _both_compilers(fn, inputs, monkeypatch):
    results = []
    for use_direct in (True, False):
        monkeypatch.setattr(config, "direct", use_direct)
        results.append(compile_function(fn, "numba", tiered=False)(inputs))
    return results


@settings(max_examples=6, deadline=None)
@given(random_programs(max_ops=6, special_values=True))
def test_random_programs_give_numbas_results_when_compiled_directly(program):
    fn, inputs = program
    try:
        with np.errstate(all="ignore"):
            interpret(fn, inputs)
    except (ValueError, IndexError):
        return
    with pytest.MonkeyPatch.context() as mp:
        with np.errstate(all="ignore"):
            got, want = _both_compilers(fn, inputs, mp)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=4e-6, atol=1e-30, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


def test_what_the_direct_compiler_does_not_handle_is_compiled_by_numba(monkeypatch, tmp_path):
    src = HEADER + '''
@njit(nogil=True, error_model="numpy", fastmath={"contract"})
def kernel(a0, o0, lo, hi):
    for i in range(lo, hi, lo + 1):
        o0[i] = a0[i] + 1
    return 0
'''
    sig = (types.float64[::1],) * 2 + (types.int64,) * 2
    assert direct.build(src, sig, {}) is None
    assert "step" in direct.refused()[(src, sig)]
    # A program whose kernels direct/ refuses runs on kernels Numba compiled. (An empty cache
    # folder: from a warm one, such as an earlier `make test`'s, the kernels would be loaded
    # as machine code without being lowered at all.)
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    from tracejit.codegen.direct.lower import FunctionLowerer
    from tracejit.codegen.direct.values import Unsupported

    def refuse(*args, **kwargs):
        raise Unsupported("refused by the test")
    lower = FunctionLowerer.lower
    monkeypatch.setattr(FunctionLowerer, "lower", refuse)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 6)), rng.standard_normal((6, 3))
    # (ops no other test combines: kernels new to this process)
    f = tracejit.jit(lambda a, b: np.arctan(a @ b) * 3 - 0.25, tiered=False)
    np.testing.assert_allclose(f(a, b), np.arctan(a @ b) * 3 - 0.25, rtol=1e-12)
    assert "refused by the test" in direct.refused().values()
    # lower(...).source says which compiler compiled each kernel, and why Numba did
    assert "compiled by Numba (refused by the test)" in f.lower(a, b).source
    monkeypatch.setattr(FunctionLowerer, "lower", lower)
    g = tracejit.jit(lambda a, b: np.arcsinh(a @ b) * 3, tiered=False)
    assert "compiled by tracejit (codegen/direct)" in g.lower(a, b).source


def test_a_direct_kernel_refuses_arguments_it_was_not_compiled_for():
    ns = {}
    src = HEADER + '''
@njit(nogil=True, error_model="numpy", fastmath={"contract"})
def kernel(a0, o0, s0, lo, hi):
    for i in range(s0):
        o0[i] = a0[i] * 2
    return 0
'''
    exec(src, ns)
    kern = direct.build(src, (types.float32[::1], types.float32[::1], types.int64,
                              types.int64, types.int64), ns)
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    kern(x, out, 4, 0, 4)
    np.testing.assert_array_equal(out, x * 2)
    read_only = np.zeros(4, np.float32)
    read_only.flags.writeable = False
    for bad in ([x.astype(np.float64), out], [np.zeros(8, np.float32)[::2], out],
                [x.astype(">f4"), out],
                [x, read_only], [x.reshape(2, 2), out], [list(x), out]):
        with pytest.raises(TypeError):
            kern(*bad, 4, 0, 4)
    with pytest.raises(TypeError):
        kern(x, out, 4, 0)
    memmap_like = x.view(np.memmap)          # a subclass of ndarray is an array
    kern(memmap_like, out, 4, 0, 4)
    np.testing.assert_array_equal(out, x * 2)


def test_an_index_out_of_bounds_raises_index_error_also_from_threads():
    n = 1 << 18
    f = tracejit.jit(lambda x, i: np.take(x, i) * 2, tiered=False)
    x = np.arange(1000, dtype=np.float32)
    good = np.random.default_rng(0).integers(0, 1000, n)
    np.testing.assert_array_equal(f(x, good), x[good] * 2)
    f.wait_compiled()                          # the parallel hand-off is ready
    np.testing.assert_array_equal(f(x, good), x[good] * 2)
    bad = good.copy()
    bad[n - 5] = 1000
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, bad)
    np.testing.assert_array_equal(f(x, good), x[good] * 2)


@pytest.mark.parametrize("use_direct", [True, False])
def test_column_min_and_max_compile_with_either_compiler(use_direct, monkeypatch):
    # Their accumulators were made with np.full(shape, value, dtype), which Numba does not
    # type: the kernel failed to compile and the program stayed on the NumPy tier.
    import warnings
    monkeypatch.setattr(config, "direct", use_direct)
    x = np.random.default_rng(1).standard_normal((7, 5 + use_direct))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = tracejit.jit(lambda x: (x.min(axis=0), x.max(axis=0)), tiered=False)(x)
    np.testing.assert_array_equal(lo, x.min(axis=0))
    np.testing.assert_array_equal(hi, x.max(axis=0))


def test_numbas_answers_about_scalar_types_are_kept_on_disk_and_read_back_the_same(
        tmp_path):
    """numba_typing keeps Numba's operator signatures and unifications on disk, so a process
    whose questions were answered before never sets up Numba's typing context; what comes
    back from the file is what Numba answers, for every operator on every scalar pair."""
    import itertools
    import operator

    from tracejit.codegen.direct import numba_typing as nt
    from tracejit.codegen.direct.typing_answers import UNKNOWN, Answers
    # (each answer learned is one line appended to the file: 1452 of them)
    scalars = [types.boolean, *sorted(types.integer_domain, key=str),
               *sorted(types.real_domain, key=str)]
    ops = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
           operator.mod, operator.pow, operator.lshift, operator.and_, operator.lt,
           operator.eq]
    writer = Answers()
    writer.use(tmp_path / "numba_typing.json")
    numba_says = {}
    for op, a, b in itertools.product(ops, scalars, scalars):
        try:
            sig = nt.typing_context().resolve_function_type(op, (a, b), {})
        except Exception:               # noqa: BLE001
            sig = None
        numba_says[op, a, b] = sig
        writer.remember_signature(op, (a, b), sig)
    for a, b in itertools.product(scalars, scalars):
        writer.remember_unified(a, b, nt.typing_context().unify_types(a, b))
    reader = Answers()
    reader.shipped = {}                 # what the file holds, alone
    reader.use(tmp_path / "numba_typing.json")
    for (op, a, b), sig in numba_says.items():
        assert reader.signature(op, (a, b)) == sig, (op, a, b)
    for a, b in itertools.product(scalars, scalars):
        assert reader.unified(a, b) == nt.typing_context().unify_types(a, b)
    assert reader.signature(operator.add, (types.float32, types.UniTuple(types.int64, 2))) \
        is UNKNOWN                      # not about scalars: asked of Numba every time


def test_a_corrupt_file_of_numbas_answers_is_ignored(tmp_path):
    import operator

    from tracejit.codegen.direct import numba_typing as nt
    from tracejit.codegen.direct.typing_answers import UNKNOWN, Answers
    path = tmp_path / "numba_typing.json"
    writer = Answers()
    writer.use(path)
    writer.remember_signature(operator.add, (types.int32, types.int32),
                              nt.typing_context().resolve_function_type(
                                  operator.add, (types.int32, types.int32), {}))
    data = bytearray(path.read_bytes())
    data[-3] ^= 1                       # one flipped bit: the checksum no longer matches
    path.write_bytes(bytes(data))
    reader = Answers()
    reader.shipped = {}
    reader.use(path)
    assert reader.table == {}
    assert reader.signature(operator.add, (types.int32, types.int32)) is UNKNOWN


def test_the_shipped_answers_are_what_this_numba_answers():
    """numba_answers.json answers every question the direct compiler can ask about scalars;
    under the Numba it was made with, each answer is Numba's own (under another it is not
    used at all: ``python -m tracejit.codegen.direct.numba_typing`` makes it anew)."""
    import json

    import numba

    from tracejit.codegen.direct import numba_typing as nt
    from tracejit.codegen.direct import typing_answers as ta
    shipped = json.loads(ta.SHIPPED.read_text())
    if shipped["numba"] != numba.__version__:
        assert ta.Answers().shipped == {}
        return
    assert nt.ask_numba() == shipped["answers"]


def test_a_cold_process_compiles_kernels_without_setting_up_numbas_typing(tmp_path):
    """With the shipped answers, a first compile in an empty cache folder never sets up
    Numba's typing context (0.26-0.31 s): operators, mixed int/float arithmetic, math
    functions, comparisons and ``where``."""
    import json
    import os
    import subprocess
    import sys

    import numba

    from tracejit.codegen.direct import typing_answers as ta
    code = """
import numpy as np, tracejit
from tracejit.codegen.direct import numba_typing, stats
f = tracejit.jit(lambda x, n: np.where(x > 0, np.tanh(x) * n, np.exp(x) / 3) + x.sum(),
                 tiered=False)
x = np.linspace(-1, 1, 64).astype(np.float32)
np.testing.assert_allclose(f(x, 2), np.where(x > 0, np.tanh(x) * 2, np.exp(x) / 3) + x.sum(),
                           rtol=1e-5)
print(stats()["compiled"], numba_typing._typing is None)
"""
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path), TRACEJIT_COMPILE_WORKERS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    shipped_here = json.loads(ta.SHIPPED.read_text())["numba"] == numba.__version__
    assert int(out[0]) >= 1                       # compiled here, not loaded
    assert out[1] == str(shipped_here)
