"""The on-disk kernel cache: generated source as real files, imported as modules.

Each module's name is a hash of its source text and of the code generator's own version (the
sources of tracejit/codegen and the Numba version), so a stale module is never found under a
current name. Its functions use ``@njit(cache=True)``: Numba keeps their machine code in
``__pycache__`` beside the file, and a new process loads it instead of compiling.

Nothing on disk is trusted: a source file whose text differs from the text we generated is
rewritten (Numba then sees a new timestamp and recompiles), and Numba's cache files are checked
against the checksums recorded when they were written, and deleted if they differ.

The folder: ``$TRACEJIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracejit``, else
``~/.cache/tracejit``. ``tracejit.clear_cache()`` empties it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numba

from ..config import config

_HERE = Path(__file__).parent
_MODULES: dict = {}        # module name -> module: the process-wide registry


def _version() -> str:
    h = hashlib.sha256(numba.__version__.encode())
    for p in sorted(_HERE.glob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


VERSION = _version()


def cache_dir() -> Path:
    root = config.cache_dir or os.environ.get("TRACEJIT_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
        root = os.path.join(base, "tracejit")
    return Path(root) / VERSION


def module_name(source: str, prefix: str) -> str:
    digest = hashlib.sha256((VERSION + source).encode()).hexdigest()[:24]
    return f"_tracejit_{prefix}_{digest}"


def _atomic_write(path: Path, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _numba_files(folder: Path, name: str) -> list[Path]:
    pyc = folder / "__pycache__"
    return sorted(pyc.glob(f"{name}.*.nb[ic]")) if pyc.is_dir() else []


def _sums_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.sums"


def _check_numba_files(folder: Path, name: str):
    """Delete Numba's cache files for ``name`` unless each matches its recorded checksum."""
    files = _numba_files(folder, name)
    if not files:
        return
    try:
        sums = json.loads(_sums_path(folder, name).read_text())
    except (OSError, ValueError):
        sums = None
    ok = sums is not None and all(
        sums.get(p.name) == hashlib.sha256(p.read_bytes()).hexdigest() for p in files)
    if not ok:
        for p in files:
            p.unlink(missing_ok=True)
        _sums_path(folder, name).unlink(missing_ok=True)


def seal(names):
    """Record checksums of the Numba cache files of these modules (after they compiled)."""
    folder = cache_dir()
    for name in names:
        files = _numba_files(folder, name)
        if files:
            sums = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
            _atomic_write(_sums_path(folder, name), json.dumps(sums).encode())


def load(source: str, prefix: str = "k"):
    """The module for ``source``: from the registry, else from disk (verified), else written."""
    name = module_name(source, prefix)
    mod = _MODULES.get(name)
    if mod is not None:
        return mod
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    try:
        current = path.read_text()
    except (OSError, UnicodeDecodeError):
        current = None
    if current != source:
        _atomic_write(path, source.encode())
        for p in _numba_files(folder, name):
            p.unlink(missing_ok=True)
    else:
        _check_numba_files(folder, name)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod          # before executing: Numba's cache needs to find it
    spec.loader.exec_module(mod)
    _MODULES[name] = mod
    return mod


def stats() -> dict:
    """How many generated modules this process holds, and how many Numba compilations and
    cache loads their functions have done (``compiled`` stays put at a new batch size)."""
    compiled = loaded = 0
    for mod in _MODULES.values():
        for obj in vars(mod).values():
            if isinstance(obj, numba.core.registry.CPUDispatcher):
                compiled += sum(obj.stats.cache_misses.values())
                loaded += sum(obj.stats.cache_hits.values())
    return {"modules": len(_MODULES), "compiled": compiled, "loaded": loaded}


def clear_cache(memory: bool = True):
    """Delete every cached kernel on disk (and, by default, forget the loaded ones)."""
    root = cache_dir().parent
    if root.is_dir():
        for sub in root.iterdir():   # only our version folders, never a user's other files
            if sub.is_dir() and len(sub.name) == 12 and all(c in "0123456789abcdef"
                                                             for c in sub.name):
                shutil.rmtree(sub, ignore_errors=True)
    if memory:
        _MODULES.clear()
