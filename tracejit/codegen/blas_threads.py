"""How many threads the two OpenBLAS libraries of a process run.

A process running tracejit holds two OpenBLAS copies: SciPy's, which compiled matmul kernels
call (through Numba's BLAS helper), and NumPy's, which the NumPy tier and the user's own code
call. A user who sets a BLAS thread count (``OPENBLAS_NUM_THREADS``, ...) keeps it;
``TRACEJIT_THREADS=keep`` leaves both alone.

- SciPy's runs one thread (``single_threaded_blas``). Programs run large kernels on blocks in
  their own threads (threads.py), and a multi-threaded sgemm collapses when any core is busy
  elsewhere (measured: 840 ms instead of 7 ms for 32x50176 @ 50176x128 while another process
  used one core), and two pools under one program slow each other.
- NumPy's runs one thread fewer than it did while a tiered program compiles in the background
  (``one_core_for_compiling``): its threads would otherwise take the core the compile runs on.
  On two cores the MLP step on the NumPy tier takes 13.4 ms with one BLAS thread against
  10.5 ms with two (NumPy eager, idle machine), and its compiled tier came in 2.72-3.38 s
  instead of 3.16-4.28 s (docs/performance.md).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import threading

ENV = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
_SET = ("scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
        "openblas_set_num_threads", "openblas_set_num_threads64_")
_GET = ("scipy_openblas_get_num_threads", "scipy_openblas_get_num_threads64_",
        "openblas_get_num_threads", "openblas_get_num_threads64_")


def _left_to_the_user() -> bool:
    return (os.environ.get("TRACEJIT_THREADS", "") == "keep"
            or any(os.environ.get(k) for k in ENV))


def _openblas_under(folders: tuple) -> ctypes.CDLL | None:
    """The OpenBLAS loaded into this process from one of ``folders``, or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return None
    for path in sorted(paths):
        if path.startswith(folders) and os.path.exists(path):
            return ctypes.CDLL(path)
    return None


def _function(lib, names):
    for name in names:
        fn = getattr(lib, name, None)
        if fn is not None:
            return fn
    return None


def _scipy_openblas():
    """ctypes handle of the OpenBLAS that scipy.linalg.cython_blas (so Numba) uses, or None."""
    import scipy.linalg.cython_blas  # noqa: F401  (loads the library)
    scipy_dir = os.path.dirname(os.path.dirname(scipy.linalg.__file__))
    return _openblas_under((scipy_dir,))


def _numpy_openblas():
    """ctypes handle of the OpenBLAS bundled with NumPy (``numpy.libs``), or None."""
    import numpy
    here = os.path.dirname(numpy.__file__)
    return _openblas_under((here + os.sep, here + ".libs" + os.sep))


_scipy_configured = False


def single_threaded_blas():
    """Once per process, before the first program with a matmul runs: SciPy's OpenBLAS
    single-threaded (see above). Only programs with a matmul need it: importing SciPy's BLAS
    costs ~80 ms of a warm start."""
    global _scipy_configured
    if _scipy_configured:
        return
    _scipy_configured = True
    if _left_to_the_user():
        return
    try:
        lib = _scipy_openblas()
    except Exception:       # no SciPy BLAS we recognize: leave it alone
        return
    fn = None if lib is None else _function(lib, _SET)
    if fn is not None:
        fn(1)


_lock = threading.Lock()
_compiling = 0
_restore = None          # (set function, thread count) while lowered


@contextlib.contextmanager
def one_core_for_compiling():
    """NumPy's BLAS runs one thread fewer while the block runs (nested blocks in several
    threads: from the first entry to the last exit), then as many as before."""
    global _compiling, _restore
    with _lock:
        _compiling += 1
        if _compiling == 1 and not _left_to_the_user():
            _restore = _lower_numpy_threads()
    try:
        yield
    finally:
        with _lock:
            _compiling -= 1
            if _compiling == 0 and _restore is not None:
                set_threads, n = _restore
                _restore = None
                set_threads(n)


def _lower_numpy_threads():
    try:
        lib = _numpy_openblas()
    except Exception:       # noqa: BLE001 (no NumPy BLAS we recognize: leave it alone)
        return None
    if lib is None:
        return None
    get, set_threads = _function(lib, _GET), _function(lib, _SET)
    if get is None or set_threads is None:
        return None
    n = get()
    if n <= 1:
        return None
    set_threads(n - 1)
    return set_threads, n
