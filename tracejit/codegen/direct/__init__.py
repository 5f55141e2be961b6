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
import threading

from .values import Unsupported

_built: dict = {}              # (source, signature) -> DirectKernel or None (Numba's)
_counts = {"compiled": 0, "loaded": 0}
_lock = threading.Lock()
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
    part of the cache key."""
    if not enabled():
        return None
    key = (source, tuple(signature))
    with _lock:
        if key in _built:
            return _built[key]
        try:
            kernel = _compile(source, tuple(signature), namespace, folder, version)
        except Unsupported:
            kernel = None
        _built[key] = kernel
        return kernel


def stats() -> dict:
    """Kernels this process compiled with LLVM, and loaded as machine code from the disk."""
    return dict(_counts)


def loaded(source: str, signature: tuple) -> DirectKernel | None:
    """The kernel if this process has built it already (nothing compiled or read)."""
    return _built.get((source, tuple(signature)))


def _compile(source: str, signature: tuple, namespace: dict, folder, version: str):
    from . import engine
    from .python_abi import python_function, register_symbols
    key = f"{version}|{source}|{signature}"
    name = "tracejit_direct_" + hashlib.sha256(key.encode()).hexdigest()[:24]
    register_symbols()
    (address, py_address), cached = engine.load(
        key, [name, name + "_py"], folder,
        lambda: _module_ir(name, source, signature, namespace, engine.target().magic_tuple))
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
