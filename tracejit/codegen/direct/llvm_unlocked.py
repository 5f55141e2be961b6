"""The three long LLVM calls of a compile (parse, the optimization pipeline, code generation),
made outside llvmlite's process-wide lock, so that threads compile kernels at once.

llvmlite wraps every call into LLVM in one re-entrant lock (``ffi.lib``), because the objects
it hands out may share LLVM's global context. A direct compile shares nothing: it parses into
an LLVM context of its own, runs a pass builder and pipeline made for it, and emits with its
thread's own target machine (engine.py) -- the arrangement LLVM's own concurrent JIT (ORC)
relies on: one context per thread, no target machine shared. ctypes releases the GIL around a
foreign call, so while one thread is inside LLVM, another lowers the next kernel (Python) or
runs LLVM too. The short calls around these (making the pass builder, reading the object's
buffer) still take the lock.
"""
from __future__ import annotations

from ctypes import string_at

from llvmlite.binding import ffi
from llvmlite.binding.module import ModuleRef


def _raw(name: str):
    """The ctypes function under llvmlite's locking wrapper (its argtypes already set)."""
    return getattr(ffi.lib, name)._cfn


def parse(text: str, context) -> ModuleRef:
    with ffi.OutputString() as err:
        ref = _raw("LLVMPY_ParseAssembly")(context, text.encode(), err)
        if not ref:
            raise RuntimeError(f"LLVM IR parsing error\n{err}")
    return ModuleRef(ref, context)


def verify(module: ModuleRef) -> None:
    with ffi.OutputString() as err:
        if _raw("LLVMPY_VerifyModule")(module, err):
            raise RuntimeError(str(err))


def run_pipeline(pass_builder, module: ModuleRef) -> None:
    """The pass builder's per-module default pipeline (its tuning options' speed level)."""
    mpm = pass_builder.getModulePassManager()
    _raw("LLVMPY_RunNewModulePassManager")(mpm, module, pass_builder)


def run_pass_manager(mpm, module: ModuleRef, pass_builder) -> None:
    """A module pass manager of one's own making, after the default pipeline."""
    _raw("LLVMPY_RunNewModulePassManager")(mpm, module, pass_builder)


def emit_object(machine, module: ModuleRef) -> bytes:
    with ffi.OutputString() as err:
        buf = _raw("LLVMPY_TargetMachineEmitToMemory")(machine, module, 1, err)
        if not buf:
            raise RuntimeError(str(err))
    try:
        return string_at(ffi.lib.LLVMPY_GetBufferStart(buf), ffi.lib.LLVMPY_GetBufferSize(buf))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buf)

