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
  instead of 3.16-4.28 s (docs/performance.md). And the NumPy tier's small matmuls run it on
  one thread (``enter_one_thread``, ``SMALL_MATMUL``): split across threads they gain little
  and collapse on a busy machine (a scan's per-step matmuls, 3 ms instead of 70 us each).
"""
from __future__ import annotations

import contextlib
import ctypes
import importlib.machinery
import importlib.util
import os
import sys
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


_CYTHON_BLAS = "scipy.linalg.cython_blas"
_cython_blas = None


@contextlib.contextmanager
def cython_blas_loaded():
    """``scipy.linalg.cython_blas`` (which loads SciPy's OpenBLAS), loaded from its file
    without running ``scipy.linalg``'s ``__init__``: its solvers and array-API layers are
    0.17-0.20 s of imports that a program with a matmul paid on its first call, and nothing
    here uses them. While the block runs the module is in ``sys.modules`` (Numba's BLAS
    helper imports it by name); after it, it is taken out again unless it was there before:
    left there, a later ``import scipy.linalg`` would not have it as an attribute
    (AttributeError on ``scipy.linalg.cython_blas``), while a later import of it by name
    loads ``scipy.linalg`` and gets this same module back."""
    global _cython_blas
    listed = _CYTHON_BLAS in sys.modules
    if _cython_blas is None:
        _cython_blas = sys.modules.get(_CYTHON_BLAS) or _load_from_file()
    sys.modules.setdefault(_CYTHON_BLAS, _cython_blas)
    try:
        yield _cython_blas
    finally:
        if not listed and sys.modules.get(_CYTHON_BLAS) is _cython_blas:
            del sys.modules[_CYTHON_BLAS]


def _load_from_file():
    import scipy
    folder = os.path.join(os.path.dirname(scipy.__file__), "linalg")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, "cython_blas" + suffix)
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location(_CYTHON_BLAS, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    return importlib.import_module(_CYTHON_BLAS)     # a layout we do not know: the usual way


def _scipy_openblas():
    """ctypes handle of the OpenBLAS that scipy.linalg.cython_blas (so Numba) uses, or None."""
    with cython_blas_loaded() as module:
        pass
    scipy_dir = os.path.dirname(os.path.dirname(module.__file__))
    return _openblas_under((scipy_dir,))          # scipy/ and scipy.libs/


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
_compiling = 0           # compiles running in the background (one_core_for_compiling)
_lowered = None          # (set function, the count before) while lowered
_current = None          # the count set while lowered
_blas = (None, None)     # (_numpy_openblas as resolved, its (get, set) functions or None)


@contextlib.contextmanager
def one_core_for_compiling():
    """NumPy's BLAS runs one thread fewer while the block runs (nested blocks in several
    threads: from the first entry to the last exit), then as many as before."""
    global _compiling
    with _lock:
        _compiling += 1
        _update()
    try:
        yield
    finally:
        with _lock:
            _compiling -= 1
            _update()


# A matmul of at most this many multiply-adds (m * n * k, batch included) runs on one thread
# of NumPy's BLAS on the NumPy tier (numpy_tier.py). OpenBLAS splits an sgemm of 32x256x256
# across its threads, which gains little on an idle machine (54-68 us against 65-80 on two
# cores) and collapses when another process or thread holds the other core: 15 ms, and the
# RNN step's first call on the NumPy tier (600 such matmuls in a scan of 100 steps) took
# 2.4-2.6 s, 0.12-0.19 s with one thread (benchmarks/control_flow.py; loaded 2-core machine).
# Larger ones (the MLP step's 128x784x512) keep the threads that they gain from.
SMALL_MATMUL = 1 << 22


# One entry per small-matmul section open now, in any thread. A list, not a counted int,
# so that a section can be counted in and out by one C call each (append, pop) that a
# KeyboardInterrupt cannot split: numpy_tier's matmul appends inside its ``try`` and pops
# first thing in its ``finally``. Counted by Python functions around the ``try``, a Ctrl-C
# landing between the count and the ``try`` (or at the start of the function counting out)
# left the count one too high for good: NumPy's BLAS stayed on one thread after the next
# compile (measured: 3-10 counts left over in 300 interrupted NumPy-tier scans).
SMALL_SECTIONS: list = []


def enter_one_thread():
    """NumPy's BLAS on one thread until the matching ``leave_one_thread`` (nested and in
    several threads: from the first entry to the last exit; then as many as before, or one
    fewer while a compile runs)."""
    SMALL_SECTIONS.append(None)
    settle()


def leave_one_thread():
    SMALL_SECTIONS.pop()
    settle()


def settle():
    """Set NumPy's BLAS threads for the sections open now. If interrupted (a KeyboardInterrupt
    in its Python code), it sets them once more before the exception goes on."""
    try:
        with _lock:
            _update()
    except BaseException:
        with _lock:
            _update()
        raise


def _in_child():
    """After a fork: the child has only the forking thread. Another thread's small-matmul
    section would stay open there for good, and ``_lock`` may have been held (``_update``
    holds it across the BLAS calls, which release the GIL: a fork beside a NumPy tier running
    small matmuls left the child's first small matmul waiting for good). Closed, unlocked,
    and NumPy's BLAS set back for the sections left. (A compile section is open at a fork
    only in the compiling thread itself: driver/tiered.py's fork waits for the compile.)"""
    global _lock
    _lock = threading.Lock()
    SMALL_SECTIONS.clear()
    try:
        _update()
    except Exception:       # noqa: BLE001 (a count not set back is no reason to fail a fork)
        pass


if hasattr(os, "register_at_fork"):            # POSIX only
    os.register_at_fork(after_in_child=_in_child)


def _update():
    """Set NumPy's BLAS threads for the sections open now (under ``_lock``): one in a
    small-matmul section, one fewer than the user's while compiling, else the user's."""
    global _lowered, _current
    single = bool(SMALL_SECTIONS)
    if not _compiling and not single:
        if _lowered is not None:
            (set_threads, n), _lowered, _current = _lowered, None, None
            if n is not None:
                set_threads(n)
        return
    if _lowered is None:
        if _left_to_the_user():
            return
        functions = _numpy_functions()
        if functions is None:
            return
        get, set_threads = functions
        n = get()
        if n <= 1:
            return
        _lowered, _current = (set_threads, n), n
    set_threads, n = _lowered
    want = 1 if single else n - 1
    if want != _current:
        set_threads(want)
        _current = want


def _numpy_functions():
    """(get, set) of NumPy's OpenBLAS thread count, or None; looked up once (the maps file
    is read for it), again only if ``_numpy_openblas`` was replaced (tests)."""
    global _blas
    finder, functions = _blas
    if finder is not _numpy_openblas:
        functions = None
        try:
            lib = _numpy_openblas()
        except Exception:       # noqa: BLE001 (no NumPy BLAS we recognize: leave it alone)
            lib = None
        if lib is not None:
            get, set_threads = _function(lib, _GET), _function(lib, _SET)
            if get is not None and set_threads is not None:
                functions = (get, set_threads)
        _blas = (_numpy_openblas, functions)
    return functions
