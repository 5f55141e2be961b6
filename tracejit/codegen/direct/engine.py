"""LLVM for the direct compiler: one target machine and one JIT engine per process, the O3
pipeline, and machine code kept on disk.

A compiled module's object file is what the disk cache keeps; a warm start adds it to the
engine without running LLVM at all. The cache file's name hashes everything the machine code
depends on (the IR, which holds the kernel source's meaning, and the target's CPU and
features); its first 32 bytes are the SHA-256 of the rest, so a torn or corrupt file is
detected, deleted and compiled again.

Each compile parses into an LLVM context of its own and each thread has its own target
machine: several threads compile at once (llvmlite releases the GIL inside LLVM), and Numba
may compile in its global context meanwhile. Adding machine code to the engine takes
``_lock``.
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

_lock = threading.Lock()
_state = None


class _Target:
    def __init__(self):
        from numba.core.codegen import get_host_cpu_features
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.triple = llvm.get_process_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = get_host_cpu_features()
        target = llvm.Target.from_triple(self.triple)
        self.reloc = "static" if target.name.startswith("x86") else "default"
        self.tm = target.create_target_machine(cpu=self.cpu, features=self.features, opt=3,
                                               reloc=self.reloc, codemodel="jitdefault",
                                               jit=True)
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.tm)
        self.key = hashlib.sha256(f"{self.triple}|{self.cpu}|{self.features}|"
                                  f"{llvmlite.__version__}".encode()).hexdigest()

    @property
    def magic_tuple(self):
        """Numba's (triple, cpu, features): what the codegen/ intrinsics choose by."""
        return (self.triple, self.cpu, self.features)


def target() -> _Target:
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                _state = _Target()
    return _state


_per_thread = threading.local()


def _machine(t: _Target):
    """This thread's target machine (threads compile at once; LLVM's are not shared)."""
    tm = getattr(_per_thread, "tm", None)
    if tm is None:
        tm = _per_thread.tm = llvm.Target.from_triple(t.triple).create_target_machine(
            cpu=t.cpu, features=t.features, opt=3, reloc=t.reloc, codemodel="jitdefault",
            jit=True)
    return tm


def _optimized_object(ir_text: str) -> bytes:
    t = target()
    tm = _machine(t)
    ctx = llvm.create_context()
    mod = llvm.parse_assembly(ir_text, context=ctx)
    mod.verify()
    mod.triple = t.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options()
    pto.speed_level = 3
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_object(mod)


def load(key: str, names: list, folder: Path | None, make_ir) -> tuple[list, bool]:
    """The addresses of functions ``names`` of a module: its machine code from ``folder`` if
    a sound copy is there under ``key``, else ``make_ir()`` compiled now (and written there).
    Also whether it came from the disk."""
    t = target()
    digest = hashlib.sha256((t.key + key).encode()).hexdigest()[:32]
    path = None if folder is None else folder / f"{digest}.o"
    obj = _read(path)
    cached = obj is not None
    if obj is None:
        obj = _optimized_object(make_ir())
        _write(path, obj)
    with _lock:
        t.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        t.engine.finalize_object()
        addresses = [t.engine.get_function_address(n) for n in names]
    if not all(addresses):
        raise RuntimeError(f"direct kernel functions {names} did not load")
    return addresses, cached


def _read(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) > 32 and hashlib.sha256(data[32:]).digest() == data[:32]:
        return data[32:]
    try:
        path.unlink()                 # torn or corrupt: compiled again below
    except OSError:
        pass
    return None


def _write(path: Path | None, obj: bytes):
    if path is None:
        return
    from ..cache_folder import atomic_write
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, hashlib.sha256(obj).digest() + obj)
    except OSError:
        pass                           # an unwritable cache only costs a compile next time
