"""Scalar helpers that generated kernels call where Numba's own operator differs from NumPy's.

Each one pins down one NumPy behaviour: integer floor division and remainder by zero give 0 and
``INT_MIN // -1`` wraps (Numba gives 0); float -> int conversion of NaN or out-of-range values
gives INT_MIN like NumPy on x86 (LLVM leaves it undefined); integer powers wrap.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@njit(inline="always")
def ifloordiv(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


@njit(inline="always")
def iremainder(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b


@njit
def ipow(a, b):
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result = a - a + 1
    while b > 0:
        if b & 1:
            result = result * a
        a = a * a
        b >>= 1
    return result


@njit(inline="always")
def f2i64(x):
    if x >= -9.223372036854775808e18 and x < 9.223372036854775808e18:
        return np.int64(x)
    return np.int64(-9223372036854775807 - 1)


@njit(inline="always")
def f2i32(x):
    if x >= -2147483648.0 and x < 2147483648.0:
        return np.int32(x)
    return np.int32(-2147483648)


# -- allocation --------------------------------------------------------------------------------
# Numba's np.empty takes memory without asking for huge pages, so first touching a large buffer
# costs a page fault every 4 KiB (measured: 17 ms of faults for a 40 MB buffer, 4x the compute
# of an elementwise kernel). NumPy's allocator asks the kernel for transparent huge pages with
# madvise(MADV_HUGEPAGE); generated code does the same for large buffers.

HUGE_PAGE = 1 << 21           # 2 MiB, the x86-64 huge page
MADV_HUGEPAGE = 14
ADVISE_MIN_BYTES = 1 << 22    # below 4 MiB the faults are cheap and the syscall is not


@intrinsic
def _madvise(typingctx, addr, length, advice):
    """madvise(2) called by symbol name, so kernels that use it stay cacheable on disk."""
    sig = types.int32(types.intp, types.intp, types.int32)

    def codegen(context, builder, signature, args):
        i8p = llvm_ir.IntType(8).as_pointer()
        fnty = llvm_ir.FunctionType(llvm_ir.IntType(32), [i8p, llvm_ir.IntType(64),
                                                          llvm_ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        return builder.call(fn, [builder.inttoptr(args[0], i8p), args[1], args[2]])

    return sig, codegen


@njit(inline="always")
def advise_huge_pages(buf):
    nbytes = buf.size * buf.itemsize
    if nbytes >= ADVISE_MIN_BYTES:
        addr = np.intp(buf.ctypes.data)
        start = (addr + (HUGE_PAGE - 1)) & ~np.intp(HUGE_PAGE - 1)
        end = (addr + nbytes) & ~np.intp(HUGE_PAGE - 1)
        if end > start:
            _madvise(start, end - start, np.int32(MADV_HUGEPAGE))
    return buf


# -- threads -----------------------------------------------------------------------------------
# Generated code has two thread pools under it: Numba's (parallel kernel variants) and the
# OpenBLAS that Numba's np.dot calls (SciPy's copy; NumPy bundles another). Threads of one pool
# that spin after their work slow the other's, and OpenBLAS's multi-threaded sgemm collapses
# when any core is busy elsewhere (measured: 840 ms instead of 7 ms for 32x50176 @ 50176x128
# while another process used one core). So by default BLAS runs single-threaded and a big
# matmul's parallel variant splits its rows across Numba's threads itself (kernel.py): one pool,
# one join per matmul. Numba's OpenMP workers (libgomp) spin for GOMP_SPINCOUNT = 100000
# iterations (under a millisecond here) after each parallel kernel before they sleep, instead
# of libgomp's default 300000 (several ms of a core after every call). Fewer spins went wrong
# on an otherwise idle machine: a sleeping worker is woken onto the CPU of the main thread,
# which then spins at the barrier while the worker waits for that CPU, so a parallel kernel ran
# slower than its serial twin as long as calls kept putting the worker to sleep (1000 spins,
# chain at 16K-1M elements: parallel 0.26-0.80x of serial; MLP step 5.2 ms against 2.6-2.8 ms
# with 100000 spins). With 100000 the pair stays apart once the scheduler has separated them
# (parallel 1.6-2.0x at every size, 4 of 4 runs; 30000 still fell into it in 2 of 4). The price
# is paid when another process keeps a core busy: MLP step 6.8-14.6 ms there (NumPy by hand
# 7.0-7.4 ms; 1000 spins: 5.2 ms). A user who sets a BLAS thread count or OMP_WAIT_POLICY /
# GOMP_SPINCOUNT in the environment keeps it; ``TRACEJIT_THREADS=keep`` leaves both alone.
OMP_SPINCOUNT = "100000"

BLAS_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
_blas_configured = False
_omp_configured = False


def _scipy_openblas():
    """ctypes handle of the OpenBLAS that scipy.linalg.cython_blas (so Numba) uses, or None."""
    import ctypes
    import os

    import scipy.linalg.cython_blas  # noqa: F401  (loads the library)
    scipy_dir = os.path.dirname(os.path.dirname(scipy.linalg.__file__))
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return None
    for path in sorted(paths):
        if path.startswith(scipy_dir) and os.path.exists(path):
            return ctypes.CDLL(path)
    return None


def _libgomp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as f:
            return any("libgomp" in line for line in f)
    except OSError:
        return True      # cannot tell: do not touch the environment


def _brief_omp_spinning():
    """Start Numba's thread pool with GOMP_SPINCOUNT=OMP_SPINCOUNT, which libgomp reads once
    when it loads; the variable is removed again, so libraries loaded later see the user's
    environment."""
    import os
    if any(k in os.environ for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")) or _libgomp_loaded():
        return
    os.environ["GOMP_SPINCOUNT"] = OMP_SPINCOUNT
    try:
        from numba.np.ufunc import parallel
        parallel._launch_threads()
    except Exception:
        pass
    finally:
        del os.environ["GOMP_SPINCOUNT"]


def configure_threads():
    """Once per process, before the first program runs: Numba's OpenMP workers spinning only
    briefly (see above) unless the user's environment says otherwise."""
    global _omp_configured
    if _omp_configured:
        return
    _omp_configured = True
    import os
    if os.environ.get("TRACEJIT_THREADS", "") != "keep":
        _brief_omp_spinning()


def single_threaded_blas():
    """Once per process, before the first program with a matmul runs: SciPy's OpenBLAS
    single-threaded (see above) unless the user's environment says otherwise. Only programs
    with a matmul need it: importing SciPy's BLAS costs ~80 ms of a warm start."""
    global _blas_configured
    if _blas_configured:
        return
    _blas_configured = True
    import os
    if os.environ.get("TRACEJIT_THREADS", "") == "keep":
        return
    if any(os.environ.get(k) for k in BLAS_THREAD_ENV):
        return
    try:
        lib = _scipy_openblas()
    except Exception:       # no SciPy BLAS we recognize: leave it alone
        return
    if lib is None:
        return
    for name in ("scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                 "openblas_set_num_threads", "openblas_set_num_threads64_"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn(1)
            return
