"""LLVM for the direct compiler: one JIT engine per process, the O3 pipeline (without loop
unrolling), and machine code kept on disk.

A compiled module's object file is what the disk cache keeps; a warm start adds it to the
engine without lowering or running LLVM at all. The cache file's name hashes everything the
machine code depends on (the code generator's version, the kernel's source and signature,
the target's CPU and features, llvmlite's version); its first 32 bytes are the SHA-256 of the
rest, so a torn or corrupt file is detected, deleted and compiled again. It names the modules
its code calls (shared functions), which are loaded before it.

Each compile parses into an LLVM context of its own and each thread has its own target
machine, so a compile never shares LLVM state with another thread's or with Numba's (which
uses the global context): its long LLVM calls run outside llvmlite's process-wide lock
(llvm_unlocked.py), and threads compile at once. Adding machine code to the engine takes
``_lock``.
"""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from . import llvm_unlocked

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
        # the engine owns the machine it is made with
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.new_machine())
        self.key = hashlib.sha256(f"{self.triple}|{self.cpu}|{self.features}|"
                                  f"{llvmlite.__version__}".encode()).hexdigest()

    def new_machine(self):
        """A target machine for this CPU, as Numba's JIT makes it (static relocation on x86)."""
        target = llvm.Target.from_triple(self.triple)
        reloc = "static" if target.name.startswith("x86") else "default"
        return target.create_target_machine(cpu=self.cpu, features=self.features, opt=3,
                                            reloc=reloc, codemodel="jitdefault", jit=True)

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
    """This thread's target machine (two programs may compile in two threads; a target
    machine is not shared between them)."""
    tm = getattr(_per_thread, "tm", None)
    if tm is None:
        tm = _per_thread.tm = t.new_machine()
    return tm


_LARGE32_VECTORS = "32_large_v"      # trig_large_arguments.large32_name(...) + "_v{lanes}"


def optimized(ir_text: str, speed: int = 3):
    """The module of ``ir_text`` after LLVM's O3 pipeline (``speed``: O2, O1) for this
    machine, and the target machine that emits it."""
    t = target()
    tm = _machine(t)
    ctx = llvm.create_context()
    mod = llvm_unlocked.parse(ir_text, ctx)
    llvm_unlocked.verify(mod)
    mod.triple = t.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options()
    pto.speed_level = speed
    pto.loop_vectorization = speed > 1
    pto.slp_vectorization = False       # as Numba (NUMBA_SLP_VECTORIZE=0): a quarter of LLVM's time
    # Not unrolled (Numba unrolls): the vector loops stay interleaved, and unrolling them
    # again doubled the machine code to emit. The RNN scan step's 18 modules: 0.52-0.58 s of
    # LLVM against 0.66-0.92 s; softmax and layer norm of 4096x1024 run as fast (2.56-2.68
    # and 1.58-1.70 ms against 2.63-2.69 and 1.50-1.77 ms, three processes each).
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    llvm_unlocked.run_pipeline(pb, mod)
    if _LARGE32_VECTORS in ir_text:
        # float32 sin/cos: the vector versions of their large-argument call, which the loop
        # vectorizer has just put in, inlined (a test of the lanes and a branch per vector
        # step instead of a call; mathlib.py)
        mpm = llvm.create_new_module_pass_manager()
        mpm.add_always_inliner_pass()
        llvm_unlocked.run_pass_manager(mpm, mod, pb)
    return mod, tm


def _optimized_object(ir_text: str, speed: int = 3) -> bytes:
    mod, tm = optimized(ir_text, speed)
    return llvm_unlocked.emit_object(tm, mod)


_loaded: dict = {}       # digest -> addresses of its functions: what the engine holds
_making: dict = {}       # digest -> Event, while one thread compiles that module


def load(key: str, names: list, folder: Path | None, make, export: bool = False,
         speed: int = 3):
    """The addresses of functions ``names`` of a module, its digest, and whether its machine
    code came from the disk: from this process if it has it, else from ``folder`` if a sound
    copy is there under ``key`` (with the modules it calls, ``needs``), else compiled now from
    ``make()`` -> (IR text, needs[, speed[, load_needs]]) and written there (None if ``make``
    is None). ``needs``: (digest, names) of modules the code calls by name (shared functions,
    lower.py), loaded first (by ``load_needs()`` if given). ``export``: make the
    names known to LLVM's linker, for modules compiled later that call them. ``speed``: the
    optimization level of a compile (part of ``key`` where it is not 3)."""
    digest = digest_of(key)
    with _lock:
        if digest in _loaded:
            return _loaded[digest], digest, True
    if make is not None:
        # Two threads needing one module (the Python wrapper every kernel shares, a shared
        # function) compile it once: the second waits for the first (a cold process compiled
        # the wrapper twice, 70 ms of LLVM).
        with _lock:
            pending = _making.get(digest)
            mine = pending is None
            if mine:
                pending = _making[digest] = threading.Event()
        if not mine:
            pending.wait()
            return load(key, names, folder, make, export, speed)
        try:
            return _load_or_make(digest, names, folder, make, export, speed)
        finally:
            with _lock:
                del _making[digest]
            pending.set()
    return _load_or_make(digest, names, folder, make, export, speed)


def digest_of(key: str) -> str:
    """A module's name in this process and in the cache folder: its key on this target."""
    return hashlib.sha256((target().key + key).encode()).hexdigest()[:32]


def present(digest: str, names: list, folder: Path | None) -> bool:
    """Whether nothing need be lowered for module ``digest``: this process has it or another
    thread is compiling it (``load`` with a ``make`` then waits for it), or it is sound on the
    disk (loaded now)."""
    with _lock:
        if digest in _loaded or digest in _making:
            return True
    return _load_or_make(digest, names, folder, None, True, 3) is not None


def _load_or_make(digest: str, names: list, folder: Path | None, make, export: bool,
                  speed: int):
    with _lock:
        if digest in _loaded:
            return _loaded[digest], digest, True
    path = None if folder is None else folder / f"{digest}.o"
    entry = _read(path)
    if entry is not None and not all(_load_saved(d, n, folder) for d, n in entry[0]):
        entry = None                    # a module it calls is gone: compile it all again
    cached = entry is not None
    if entry is None and make is None:
        return None                     # only wanted from the disk
    if entry is None:
        made = make()
        ir_text, needs = made[:2]
        entry = (needs, _optimized_object(ir_text, made[2] if len(made) > 2 else speed))
        if len(made) > 3:
            made[3]()                   # loads the modules it needs
        _write(path, *entry)
    return _add(digest, entry[1], names, export), digest, cached


def _add(digest: str, obj: bytes, names: list, export: bool) -> list:
    t = target()
    with _lock:
        if digest in _loaded:
            return _loaded[digest]
        t.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        t.engine.finalize_object()
        addresses = [t.engine.get_function_address(n) for n in names]
        if not all(addresses):
            raise RuntimeError(f"direct kernel functions {names} did not load")
        if export:
            for n, a in zip(names, addresses):
                llvm.add_symbol(n, a)
        _loaded[digest] = addresses
        return addresses


def _load_saved(digest: str, names: list, folder: Path | None) -> bool:
    """Load a needed module from the disk (True), unless it is not there soundly (False)."""
    with _lock:
        if digest in _loaded:
            return True
    entry = _read(None if folder is None else folder / f"{digest}.o")
    if entry is None or not all(_load_saved(d, n, folder) for d, n in entry[0]):
        return False
    _add(digest, entry[1], names, export=True)
    return True


def _read(path: Path | None):
    """(needs, object code) from a cache file, or None if it is missing, torn or corrupt
    (then it is deleted). The file (cache_folder.write_sealed): SHA-256 of the rest, the
    length of a JSON header, the header ({"digest": its own name, "needs": [[digest, names],
    ...]}), the object code. A sound file under another name (another kernel's, or this
    kernel's for another CPU, copied) is not this module: its header names the other one
    (a checksum alone let another kernel's code load here: its functions missing, or another
    CPU's instructions run)."""
    from ..cache_folder import read_sealed
    if path is None:
        return None
    data = read_sealed(path)
    if data is not None and len(data) > 4:
        n = int.from_bytes(data[:4], "little")
        try:
            header = json.loads(data[4:4 + n])
            needs = header["needs"] if header["digest"] == path.stem else None
            needs = [(d, list(names)) for d, names in needs] if needs is not None else None
            if needs is not None and not all(
                    isinstance(d, str) and all(isinstance(x, str) for x in names)
                    for d, names in needs):
                needs = None
        except (ValueError, KeyError, TypeError):
            needs = None
        if needs is not None:
            return needs, data[4 + n:]
    try:
        path.unlink()                 # torn or corrupt: compiled again
    except OSError:
        pass
    return None


def _write(path: Path | None, needs: list, obj: bytes):
    from ..cache_folder import write_sealed
    if path is None:
        return
    header = json.dumps({"digest": path.stem, "needs": [list(x) for x in needs]}).encode()
    write_sealed(path, len(header).to_bytes(4, "little") + header + obj)
