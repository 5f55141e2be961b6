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

from numba.core.compiler_lock import global_compiler_lock

from .values import Unsupported

_built: dict = {}              # (source, signature) -> DirectKernel or None (Numba's)
_counts = {"compiled": 0, "loaded": 0}
_refused: dict = {}            # (source, signature) -> why Numba compiles it
INTERNAL_ERROR = "internal error"
_lock = threading.Lock()
_building: dict = {}           # key -> Event, while one thread builds it
# Lowering to IR (Python, and Numba's typing context, which a Numba compile in another thread
# uses under its global compiler lock): one at a time. LLVM's part runs outside it. Parsing
# the kernel's source is inside: CPython 3.11's ast.parse in two threads at once can fail
# ("AST constructor recursion depth mismatch").
_lowering = threading.RLock()
_enabled = None


class DirectKernel:
    """A compiled kernel: ``py`` calls it from Python, ``address`` from native code (the C
    signature of a Numba kernel's C wrapper: array structs and scalars by value, int64 back)."""

    def __init__(self, name: str, address: int, py, keep):
        self.name, self.address, self.py, self._keep = name, address, py, keep

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


def build(source: str, signature: tuple, namespace: dict, folder=None, version: str = "",
          compile: bool = True) -> DirectKernel | None:
    """The kernel ``kernel`` of ``source`` (executed as ``namespace``) compiled for
    ``signature``, or None where the direct compiler does not handle it. ``folder`` keeps
    machine code between processes; ``version`` is the code generator's (cache.VERSION),
    part of the cache key. ``compile=False``: only from this process or the disk, else None.
    Threads may build at once: each kernel is built once, lowered one at a time, and
    optimized and emitted by LLVM in parallel (compile_workers.compile_in_threads)."""
    if not enabled():
        return None
    key = (source, tuple(signature))
    with _lock:
        if key in _built:
            return _built[key]
    if not compile:
        try:
            kernel = _compile(source, tuple(signature), namespace, folder, version, False)
        except Exception:                # noqa: BLE001 (not there: compiled later)
            kernel = None
        if kernel is not None:
            with _lock:
                kernel = _built.setdefault(key, kernel)
        return kernel
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
        with _lock:
            if key in _built:
                return _built[key]
        # the thread building it was interrupted (KeyboardInterrupt): build it here
        return build(source, signature, namespace, folder, version, compile)
    try:
        kernel = _compile(source, tuple(signature), namespace, folder, version)
    except Unsupported as e:
        kernel = None
        _refused[key] = str(e)
    except Exception as e:               # noqa: BLE001 (a bug here must not stop the user)
        # Numba compiles it instead; tests/conftest.py fails the run on any of these.
        kernel = None
        _refused[key] = f"{INTERNAL_ERROR}: {type(e).__name__}: {e}"
    except BaseException:
        # KeyboardInterrupt: not built, and not left pending (a later build would wait for
        # it forever); a thread waiting for it builds it itself
        with _lock:
            del _building[key]
        pending.set()
        raise
    with _lock:
        _built[key] = kernel
        del _building[key]
    pending.set()
    return kernel


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


def _compile(source: str, signature: tuple, namespace: dict, folder, version: str,
             compile: bool = True) -> DirectKernel | None:
    from . import engine
    from .python_abi import python_function, register_symbols, wrapper_address
    from .numba_typing import remember_in
    key = f"{version}|{source}|{signature}"
    name = "tracejit_direct_" + hashlib.sha256(key.encode()).hexdigest()[:24]
    register_symbols()
    remember_in(folder)

    def make():
        shared = _SharedFunctions(folder, version)
        with _lowering, global_compiler_lock:
            fndef = _kernel_def(source)
            made = _module_ir(name, fndef, signature, namespace, _fastmath(fndef), True,
                              shared)
        shared.compile_lowered()         # LLVM outside the lock: another thread lowers
        # the kernel's own LLVM runs before it waits for another thread's shared function
        return made + (shared.await_others,)
    loaded = engine.load(key, [name, name + "_py"], folder, make if compile else None)
    if loaded is None:
        return None
    (address, adapter), _, cached = loaded
    py, keep = python_function(adapter, signature, wrapper_address(folder, version))
    _counts["loaded" if cached else "compiled"] += 1
    return DirectKernel(name, address, py, keep)


def inspect_llvm(source: str, signature: tuple, namespace: dict) -> str:
    """The optimized LLVM IR of the kernel of ``source`` for ``signature``, as it would be
    compiled (tests check what LLVM made of it: vector loads, no leftover index checks)."""
    from . import engine
    with _lowering, global_compiler_lock:
        fndef = _kernel_def(source)
        shared = _SharedFunctions(None, "")
        text, _, speed = _module_ir("tracejit_inspect", fndef, tuple(signature), namespace,
                                    _fastmath(fndef), True, shared)
    shared.compile_lowered()
    shared.await_others()
    mod, _ = engine.optimized(text, speed)
    return str(mod)


class _SharedFunctions:
    """Helpers a kernel calls instead of inlining them (``@njit(cache=True)`` ones, like
    blas.gemm: large, and the same in many kernels): each compiled once per argument types
    into a module of its own, kept on disk like a kernel, and called by its symbol.

    A kernel's lowering (under the lowering lock) lowers the shared functions it calls that
    no thread has yet; ``compile_lowered`` runs their LLVM after the lock is released, so
    another thread lowers meanwhile (gemm's LLVM held every other thread back for 75 ms at
    the start of a cold compile)."""

    def __init__(self, folder, version: str):
        self.folder, self.version = folder, version
        self.needs: dict = {}            # digest -> names: what the kernel's code calls
        self.lowered: list = []          # (key, names, make) lowered here, in the order needed
        self.awaited: list = []          # (key, names, make) another thread is compiling

    def __call__(self, py_func, signature: tuple, fastmath: bool) -> str:
        from . import engine
        from .lower import parsed
        fndef, globals_ = parsed(py_func)
        # At O1: a shared function is glue around a library call (blas.gemm around
        # BLAS), whose speed is the library's; O1 halves its LLVM time (gemm: 111-121 ->
        # 61-65 ms of a process's first compile with a matmul).
        dump = getattr(fndef, "_tracejit_dump", None)
        if dump is None:                  # ast.dump of gemm: 40 ms, at every kernel calling it
            dump = fndef._tracejit_dump = ast.dump(fndef)
        key = (f"{self.version}|shared|O1|{py_func.__module__}.{py_func.__qualname__}|"
               f"{dump}|{signature}")
        name = "tracejit_shared_" + hashlib.sha256(key.encode()).hexdigest()[:24]

        def make():
            with _lowering, global_compiler_lock:
                return _module_ir(name, fndef, signature, globals_, fastmath, False, self)
        digest = engine.digest_of(key)
        if digest in self.needs:          # called twice by this kernel: lowered once
            return name
        if engine.present(digest, [name], self.folder):   # or another thread compiles it
            self.awaited.append((key, [name], make))
        else:
            text = make()                 # under the kernel's lowering lock already
            self.lowered.append((key, [name], lambda: text))
        self.needs[digest] = [name]
        return name

    def compile_lowered(self):
        """Compile the shared functions lowered for this kernel (other kernels may wait for
        them: before the kernel's own LLVM)."""
        self._load(self.lowered)

    def await_others(self):
        """Wait for the shared functions another thread compiles (after the kernel's own
        LLVM, before its code is added)."""
        self._load(self.awaited)

    def _load(self, modules: list):
        from . import engine
        for key, names, make in modules:
            engine.load(key, names, self.folder, make, export=True, speed=1)


def _module_ir(name: str, fndef: ast.FunctionDef, signature: tuple, namespace: dict,
               fastmath: bool, wrapper: bool, shared) -> tuple:
    """The LLVM IR of a kernel (and its Python wrapper), the shared functions it calls, and
    (a kernel's) the optimization level it needs; Unsupported if lower.py cannot."""
    from llvmlite import ir

    from . import engine
    from .lower import FunctionLowerer, _Retype
    from .python_abi import build_adapter
    target = engine.target().magic_tuple
    vartypes: dict = {}
    for _ in range(8):
        module = ir.Module(name=name)
        module.triple = target[0]                # intrinsics choose instructions by it
        low = FunctionLowerer(module, vartypes, target, shared)
        try:
            kernel = low.lower(name, fndef, namespace, signature, fastmath)
            break
        except _Retype:
            continue
    else:
        raise Unsupported("variable types did not settle")
    if wrapper:
        build_adapter(module, kernel, name + "_py", signature, low.errors)
    elif low.errors:
        raise Unsupported("a shared function that raises")
    needs = [(d, n) for d, n in shared.needs.items()]
    if not wrapper:
        return str(module), needs
    # A kernel without loops (a BLAS call on views, a few scalars) has nothing for O3's
    # vectorizer: O1 (a plain matmul kernel of the RNN scan step: 17.5 -> 14.4 ms of LLVM).
    return str(module), needs, 3 if low.loops else 1


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
