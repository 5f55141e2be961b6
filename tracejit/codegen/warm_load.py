"""Loading a program's kernels from Numba's disk cache without Numba's per-process set-up.

The first compile or cache load in a process makes Numba refresh its target context: it imports
and registers every implementation it has (NumPy, math, random, typed containers, SciPy's BLAS
and more), about 250 ms here, whatever the loaded code needs. Machine code read from the cache
needs none of that, only the run-time symbols it links against: the NRT allocator's
(``rtsys.initialize``), the string hashing secret's, and the helpers Numba registers when it
creates the context (kernels use no ``prange``, so no thread pool). ``load_cached`` loads a kernel with
those and nothing more: a warm start of the elementwise chain 0.26 -> 0.07 s (benchmarks
backend). A later compile in the process refreshes the context as usual.

It uses Numba internals (the dispatcher's cache and ``add_overload``), so it runs only on the
Numba versions it was checked with (``CHECKED_NUMBA``; tests/test_kernel_cache.py runs programs
of every kind through it in a fresh process). On any other version, with no cache entry, or on
any error it returns False and the caller compiles through Numba's front door
(``Dispatcher.compile``, which loads from the cache after the full refresh).
"""
from __future__ import annotations

import os

import numba
from numba.core.compiler_lock import global_compiler_lock

CHECKED_NUMBA = ("0.68",)

_symbols_ready = False


def _supported() -> bool:
    return ".".join(numba.__version__.split(".")[:2]) in CHECKED_NUMBA


def _runtime_symbols(targetctx):
    """Register the symbols cached machine code may call (what refresh would have done)."""
    global _symbols_ready
    if _symbols_ready:
        return
    from numba.core.runtime import rtsys
    from numba.cpython import hashing  # noqa: F401  (registers _Py_HashSecret_*)
    rtsys.initialize(targetctx)
    _symbols_ready = True


def load_cached(dispatcher, sig: tuple) -> bool:
    """Add the overload for ``sig`` from the dispatcher's disk cache; False if it was not
    loaded (the caller then compiles). An overload the dispatcher already has is not added
    again: two overloads of one signature make every later call fail as ambiguous."""
    cache = getattr(dispatcher, "_cache", None)
    if not _supported() or cache is None or not hasattr(cache, "_load_overload"):
        return False
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    if index is not None and not os.path.exists(index):
        # Nothing on disk (a cold cache, or a kernel compiled by codegen/direct): no need
        # for the runtime's set-up (Numba's NRT module, compiled by LLVM: 40-80 ms of every
        # cold process's first call)
        return tuple(sig) in dispatcher.overloads
    with global_compiler_lock:
        if tuple(sig) in dispatcher.overloads:
            return True
        try:
            _runtime_symbols(dispatcher.targetctx)
            cres = cache._load_overload(sig, dispatcher.targetctx)
            if cres is None or cres.objectmode:
                return False
            dispatcher.targetctx.insert_user_function(cres.entry_point, cres.fndesc,
                                                      [cres.library])
            dispatcher.add_overload(cres)
            dispatcher._cache_hits[sig] += 1
        except Exception:
            return False
    return True
