"""Regressions of bugs found in the CUDA backend (codegen/cuda/), under Numba's CUDA simulator
(tests/cuda_simulator.py chooses it, as for tests/test_cuda_backend.py)."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import cuda_simulator  # chooses the simulator before numba.cuda is imported (or skips)
import tracejit as tj  # noqa: E402
from tracejit.ir import Builder, TensorType, as_dtype, ops  # noqa: E402


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16", "uint32"])
def test_float_to_narrow_int_out_of_range_wraps_like_the_interpreter(dtype):
    """f2i32's result is a Python int under the simulator, and np.int8(-2**31) raised
    OverflowError: NaN, inf and 300.0 -> int8 crashed the kernel."""
    x = np.array([np.nan, np.inf, -np.inf, 1e20, 300.7, -200.5, 3e9, 70000.5, 1.5],
                 np.float64)

    def f(x):
        return x.astype(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = tj.jit(f, backend="interpreter")(x)
        got = tj.jit(f, device="cuda")(x)
    assert got.dtype == np.dtype(dtype)
    if dtype == "uint32":     # out of range: undefined in NumPy; compare the in-range ones
        got, want = got[5:], want[5:]
    np.testing.assert_array_equal(got, want)


def test_narrow_int_iota_past_the_dtype_range_wraps():
    b = Builder("iota_int8")
    x = b.param(TensorType(as_dtype("int8"), (300,)))
    i = b.emit(ops.iota, [], shape=(300,), dim=0, dtype=as_dtype("int8")).result
    fn = b.build([b.emit(ops.add, [x, i]).result])
    from test_cuda_backend import one_kernel_program
    args = [np.zeros(300, np.int8)]
    np.testing.assert_array_equal(one_kernel_program(fn)(args)[0], fn(*args)[0])


def test_uint64_sum_and_prod_past_int64_max():
    """The accumulators of unsigned sums were int64 shared arrays: the simulator refused a
    uint64 partial sum >= 2**63 (OverflowError)."""
    x = np.array([2**63 + 5, 3, 2**62, 7, 2**63 - 1], np.uint64)

    def f(x):
        return x.sum(), x.prod(), x[:2].sum()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = tj.jit(f, device="cuda")(x)
        want = f(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.uint64
        assert g == w


def test_zero_d_device_results_keep_their_shape_and_feed_back():
    """device_results=True gave a 0-d result as a (1,) device array, and a function fed
    that array traced it as 1-d: its results had the wrong shapes."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    s, m = tj.jit(lambda x: (x.sum(), x * 2), device="cuda", device_results=True)(x)
    assert tuple(s.shape) == () and not isinstance(s, np.generic)
    np.testing.assert_array_equal(s.copy_to_host(), np.float32(15))
    got = tj.jit(lambda s, m: (s + 1, m * s), device="cuda")(s, m)
    assert np.shape(got[0]) == () and got[0] == 16
    np.testing.assert_array_equal(got[1], x * 2 * 15)


def test_a_write_into_a_strided_device_array_argument_reaches_it():
    """The write-back used copy_to_device, which refuses a non-contiguous destination
    (d[:, ::2]): the call raised after computing."""
    from numba import cuda
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    d = cuda.to_device(x.copy())

    def f(a):
        a[0] = 5.0
        return a.sum()
    got = tj.jit(f, device="cuda")(d[:, ::2])
    want_x = x.copy()
    want = f(want_x[:, ::2])
    np.testing.assert_allclose(got, want)
    np.testing.assert_array_equal(d.copy_to_host(), want_x)


PTX_SCRIPT = """
import sys
from numba.cuda.cudadrv import nvvm
try:
    nvvm.NVVM()
except Exception as e:
    print("NO-NVVM", e)
    sys.exit(0)
import numpy as np
import tracejit as tj

def f(a, b):
    z = a * b
    return np.exp(z - z.max(axis=1, keepdims=True))

for dt, suffix in ((np.float32, "f32"), (np.float64, "f64")):
    a = np.ones((4, 4), dt)
    (ptx,) = tj.jit(f, device="cuda").lower(a, a).ptx(cc=(9, 0))
    lines = [l.split() for l in ptx.splitlines() if l.strip().startswith(("mul.", "sub."))]
    # the product z feeds the sub: ptxas fuses a plain mul.f32 with it into an fma
    subs = [l for l in lines if l[0] == "sub." + suffix]
    assert subs, ptx
    z = subs[0][2].rstrip(",")
    (producer,) = [l for l in lines if l[1].rstrip(",") == z]
    assert producer[0] == "mul.rn." + suffix, producer
print("FMA-OK")

x = np.array([2**63 - 1, -2**63], np.int64)
for g in (lambda x: (x + 1) > x, lambda x: (x - 1) < x):
    (ptx,) = tj.jit(g, device="cuda").lower(x).ptx(cc=(9, 0))
    # folded as never overflowing, the comparison was `1 > 0`: x was never even loaded
    assert "ld.global" in ptx, ptx
print("INT64-WRAP-OK")
"""


@functools.lru_cache(maxsize=None)
def _ptx_child() -> str:
    """The PTX checks' output: one child process (the real target) for all of them."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", PTX_SCRIPT], env=cuda_simulator.ptx_child_env(),
                          capture_output=True, text=True, cwd=root)
    return proc.stdout + proc.stderr[-3000:]


def _ptx_check(ok: str):
    out = _ptx_child()
    if "NO-NVVM" in out:
        pytest.skip(f"NVVM is missing: {out.strip()}")
    assert ok in out, out


def test_a_float_product_on_the_device_is_not_fused_into_the_sub_reading_it():
    """z = a * b; exp(z - z.max()) on a GPU: the PTX held a plain ``mul.f32`` feeding a
    ``sub.f32``, which ptxas contracts into fma(a, b, -max) (its default), so the value at the
    maximum was exp(rounding error of a*b), not 1: NumPy rounds every op."""
    _ptx_check("FMA-OK")


def test_int64_add_and_sub_wrap_on_the_device_instead_of_being_folded():
    """Numba's CUDA target marks int64 + - * nsw (never overflowing), and NVVM folded
    (x + 1) > x to True (x was not even loaded): at 2**63 - 1 NumPy wraps, gives False."""
    _ptx_check("INT64-WRAP-OK")
    x = np.array([2**63 - 1, -2**63, 5], np.int64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tj.jit(lambda x: ((x + 1) > x, (x - 1) < x), device="cuda")(x)
    np.testing.assert_array_equal(got[0], [False, True, True])
    np.testing.assert_array_equal(got[1], [True, False, True])


def test_threads_calling_one_jitted_function_at_once_under_the_simulator():
    """The simulator runs one kernel at a time (it swaps the kernel's global ``cuda`` for a
    launch's fake module): two threads launching at once failed ("'Thread' object has no
    attribute 'threadIdx'", or its assertion), and the GIL switch interval each run lowers
    and restores could stay lowered. Simulated programs run one at a time."""
    import sys
    import threading
    f = tj.jit(lambda x: np.exp(x).sum(axis=1) * 2.0, device="cuda")
    saved = sys.getswitchinterval()
    results, errors = {}, []

    def call(i):
        try:
            x = np.full((2, 3), i / 10, np.float32)
            results[i] = (f(x), np.exp(x).sum(axis=1) * 2.0)
        except Exception as e:              # noqa: BLE001
            errors.append(repr(e))
    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4
    for got, want in results.values():
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert sys.getswitchinterval() == saved


def test_a_write_into_a_device_array_passed_twice_is_refused_as_for_numpy_arrays():
    """f(d, d) writing into its first argument and reading the second: traced as two arrays,
    the read missed the write (NumPy: [7, 1, 2, 3]; the call gave [0, 1, 2, 3]) with no
    error, where the same call with a NumPy array raises. Device arrays are checked too."""
    from numba import cuda

    def f(p, q):
        p[0] = 7.0
        return q * 1.0
    d = cuda.to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(ValueError, match="shares memory with another argument"):
        tj.jit(f, device="cuda")(d, d)
    with pytest.raises(ValueError, match="shares memory with another argument"):
        tj.jit(f, device="cuda")(d[1:], d[:2])
    e = cuda.to_device(np.arange(8, dtype=np.float32))
    got = tj.jit(f, device="cuda")(e[:4], e[4:])        # no element in common: runs
    np.testing.assert_array_equal(got, [4, 5, 6, 7])
    np.testing.assert_array_equal(e.copy_to_host()[:4], [7, 1, 2, 3])


def test_a_new_batch_size_compiles_no_kernel_again():
    """The kernels are generic over sizes, but each shape's program compiled all of its
    kernels again (cuda.jit: seconds each on a GPU), where the CPU kernels are cached."""
    f = tj.jit(lambda x: np.tanh(x * 2.0), device="cuda")
    programs = []
    for n in (1, 2):
        x = np.ones(n, np.float32)
        np.testing.assert_allclose(f(x), np.tanh(x * 2.0), rtol=1e-6)
        programs.append(f.lower(x)._entry.program)
    first, second = (p._compiled for p in programs)
    assert programs[0] is not programs[1] and len(first) == len(second) >= 1
    assert all(a[0][0] is b[0][0] for a, b in zip(first, second))


@pytest.fixture
def foreign_array(monkeypatch):
    """A CuPy-like array of arange(6) as (2, 3) float32 (the CUDA array interface, no Numba
    methods), and the Numba device array numba.cuda.as_cuda_array views it as (the simulator
    has no as_cuda_array: faked)."""
    from numba import cuda
    d = cuda.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))

    class Foreign:
        shape, dtype, ndim, size = (2, 3), np.dtype(np.float32), 2, 6
        __cuda_array_interface__ = {"shape": (2, 3), "typestr": "<f4", "data": (0, False),
                                    "strides": None, "version": 3}
    monkeypatch.setattr(cuda, "as_cuda_array",
                        lambda obj, sync=True: d if isinstance(obj, Foreign) else None,
                        raising=False)
    return Foreign(), d


def test_an_array_of_another_cuda_library_is_read_where_it_is(foreign_array):
    """A CuPy or PyTorch array is a device array to the tracer, but the program passed it to
    np.asarray, which raised: it is now taken through numba.cuda.as_cuda_array (a view)."""
    got = tj.jit(lambda x: x * 2.0 + 1.0, device="cuda")(foreign_array[0])
    np.testing.assert_array_equal(got, np.arange(6, dtype=np.float32).reshape(2, 3) * 2 + 1)


def test_writes_reach_a_foreign_and_a_fortran_order_device_array(foreign_array):
    """The write-back into a device array argument called is_c_contiguous on a CuPy-like
    array (AttributeError), and copy_to_device of a C-ordered device result into a
    Fortran-ordered argument (device_results=True) refused the strides (ValueError)."""
    from numba import cuda

    def f(x):
        x[0] = 9.0
        return x * 1.0
    want = np.arange(6, dtype=np.float32).reshape(2, 3)
    want[0] = 9.0
    foreign, d = foreign_array
    np.testing.assert_array_equal(tj.jit(f, device="cuda")(foreign), want)
    np.testing.assert_array_equal(d.copy_to_host(), want)
    df = cuda.to_device(np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    got = tj.jit(f, device="cuda", device_results=True)(df)
    np.testing.assert_array_equal(got.copy_to_host(), want)
    np.testing.assert_array_equal(df.copy_to_host(), want)


Y_GLOBAL = np.arange(3, dtype=np.float32)


def test_an_argument_returned_beside_a_kernel_reading_it_is_a_copy():
    """(x * 2, x): x was moved to the device for the kernel, and the program took any value
    on the device for a fresh copy, so the result was the caller's x itself (and a global
    array returned, the global): writing into the result changed them. jit's results never
    share memory with an argument."""
    x = np.arange(3, dtype=np.float32)
    doubled, same = tj.jit(lambda x: (x * 2.0, x), device="cuda")(x)
    assert not np.shares_memory(same, x)
    np.testing.assert_array_equal(same, x)
    glob, total = tj.jit(lambda x: (Y_GLOBAL, Y_GLOBAL + x), device="cuda")(x)
    assert not np.shares_memory(glob, Y_GLOBAL)
    np.testing.assert_array_equal(total, Y_GLOBAL + x)
