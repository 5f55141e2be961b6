"""Kernels compiled straight to LLVM, without Numba's compiler (issue #11's "far cheaper
kernels").

Numba spends most of a kernel's compile in its own Python passes (typing, lowering, wrappers):
about 1 s for a kernel of three fused reductions, of which LLVM took 0.3 s. The generated
kernels use a small part of Python, so lower.py compiles that part itself: the same source,
typed by Numba's typing context, lowered to LLVM IR, optimized at O3 and kept on disk as
machine code (engine.py). A kernel is called from Python through a C function of its own
(python_abi.py) and from native code (the parallel hand-off, native loops) through the same
C signature as a Numba kernel's C wrapper. A kernel that uses anything lower.py does not
implement is compiled by Numba as before; ``TRACEJIT_DIRECT=0`` (``config.direct``) sends
every kernel there.
"""
from __future__ import annotations

import ast
import hashlib
import os
import threading

from .values import Unsupported

_built: dict = {}              # (source, signature) -> DirectKernel or None (Numba's)
_counts = {"compiled": 0, "loaded": 0}
_refused: dict = {}            # (source, signature) -> why Numba compiles it
INTERNAL_ERROR = "internal error"
_lock = threading.Lock()
_building: dict = {}           # key -> Event, while one thread builds it
_lowering = threading.Lock()   # lowering to IR (Python, and Numba's typing context): one at a time
_enabled = None


class DirectKernel:
    """A compiled kernel: ``py`` calls it from Python, ``address`` from native code (the C
    signature of a Numba kernel's C wrapper: array structs and scalars by value, int64 back)."""

    def __init__(self, name: str, address: int, py, keep, cached: bool):
        self.name, self.address, self.py, self._keep = name, address, py, keep
        self.cached = cached

    def __call__(self, *args):
        return self.py(*args)


def enabled() -> bool:
    global _enabled
    from ...config import config
    if not config.direct:
        return False
    if _enabled is None:
        from .python_abi import layout_ok
        _enabled = layout_ok()
    return _enabled


def build(source: str, signature: tuple, namespace: dict, folder=None,
          version: str = "") -> DirectKernel | None:
    """The kernel ``kernel`` of ``source`` (executed as ``namespace``) compiled for
    ``signature``, or None where the direct compiler does not handle it. ``folder`` keeps
    machine code between processes; ``version`` is the code generator's (cache.VERSION),
    part of the cache key. Threads may build at once: each kernel is built once."""
    if not enabled():
        return None
    key = (source, tuple(signature))
    with _lock:
        if key in _built:
            return _built[key]
        pending = _building.get(key)
        if pending is None:
            pending = _building[key] = threading.Event()
            mine = True
        else:
            mine = False
    if not mine:
        pending.wait()
        return _built[key]
    try:
        kernel = _compile(source, tuple(signature), namespace, folder, version)
    except Unsupported as e:
        kernel = None
        _refused[key] = str(e)
    except Exception as e:               # noqa: BLE001 (a bug here must not stop the user)
        # Numba compiles it instead; tests/conftest.py fails the run on any of these.
        kernel = None
        _refused[key] = f"{INTERNAL_ERROR}: {type(e).__name__}: {e}"
    with _lock:
        _built[key] = kernel
        del _building[key]
    pending.set()
    return kernel


def build_all(items: list) -> list:
    """``build(*item)`` for each item, on as many threads as there are CPUs: LLVM's
    optimization and code generation (about two thirds of a kernel's compile) run without
    the GIL, so a thread lowers the next kernel to IR while another is in LLVM."""
    if len(items) < 2 or not enabled():
        return [build(*item) for item in items]
    return list(_executor().map(lambda item: build(*item), items))


_pool = None


def _executor():
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor
        _pool = ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1)),
                                   thread_name_prefix="tracejit-direct")
    return _pool


def stats() -> dict:
    """Kernels this process compiled with LLVM, and loaded as machine code from the disk."""
    return dict(_counts)


def refused() -> dict:
    """Why each kernel this process sent to Numba was not compiled directly:
    {(source, signature): reason}."""
    return dict(_refused)


def loaded(source: str, signature: tuple) -> DirectKernel | None:
    """The kernel if this process has built it already (nothing compiled or read)."""
    return _built.get((source, tuple(signature)))


def _compile(source: str, signature: tuple, namespace: dict, folder, version: str):
    from . import engine
    from .python_abi import python_function, register_symbols
    key = f"{version}|{source}|{signature}"
    name = "tracejit_direct_" + hashlib.sha256(key.encode()).hexdigest()[:24]
    register_symbols()
    def make_ir():
        with _lowering:
            return _module_ir(name, source, signature, namespace, engine.target().magic_tuple)
    (address, py_address), cached = engine.load(key, [name, name + "_py"], folder, make_ir)
    py, keep = python_function(py_address, "kernel")
    _counts["loaded" if cached else "compiled"] += 1
    return DirectKernel(name, address, py, keep, cached)


def _module_ir(name: str, source: str, signature: tuple, namespace: dict, target) -> str:
    """The LLVM IR of the kernel and its Python wrapper (Unsupported if lower.py cannot)."""
    from llvmlite import ir

    from .lower import FunctionLowerer, _Retype
    from .python_abi import build_wrapper
    fndef = _kernel_def(source)
    fastmath = _fastmath(fndef)
    vartypes: dict = {}
    for _ in range(8):
        module = ir.Module(name=name)
        module.triple = target[0]                # intrinsics choose instructions by it
        low = FunctionLowerer(module, vartypes, target)
        try:
            kernel = low.lower(name, fndef, namespace, signature, fastmath)
            break
        except _Retype:
            continue
    else:
        raise Unsupported("variable types did not settle")
    build_wrapper(module, kernel, name + "_py", signature, low.errors)
    return str(module)


def _kernel_def(source: str) -> ast.FunctionDef:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "kernel":
            return node
    raise Unsupported("no kernel function")


def _fastmath(fndef: ast.FunctionDef) -> bool:
    """Whether the kernel's ``@njit`` asks for ``fastmath={"contract"}`` (the only flag
    generated kernels use)."""
    for deco in fndef.decorator_list:
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "fastmath":
                    value = ast.literal_eval(kw.value)
                    if value and value != {"contract"}:
                        raise Unsupported(f"fastmath={value!r}")
                    return bool(value)
    return False
