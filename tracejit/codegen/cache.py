"""The on-disk kernel cache: generated source as real files, executed as modules.

Each module's name is a hash of its source text and of the code generator's own version (the
sources of tracejit/codegen and the Numba version), so a stale module is never found under a
current name. Its functions use ``@njit(cache=True)``: Numba keeps their machine code in
``__pycache__`` beside the file (always there, whatever NUMBA_CACHE_DIR says: ``_Locator``),
and a new process loads it instead of compiling.

Trust: what the cache holds runs, so its authenticity comes from the folder alone. The folder
is used only when it is owned by this user and writable by nobody else (cache_folder.py). The
module itself runs from the text we generated, never from the file on disk nor from a ``.pyc``
beside it (importlib's loader would run a planted ``.pyc`` without reading the ``.py``); the file
is written for tracebacks and as the place Numba's cache belongs to. Numba's cache files are
checked against checksums recorded after they were written (``.sums``) and deleted if they
differ: that detects corruption (a torn write, a full disk), not tampering, since whoever can
write the files can write the checksums.

Faults: a folder that cannot be trusted, made or written is replaced by a private temporary
one with one ``CacheWarning``, and no disk error reaches the user (cache_folder.Folder.attempt,
which also wraps Numba's own saving, ``_Cache``).

Threads: ``lock`` (re-entrant, process-wide) is held while a module is loaded and while a
Program compiles its entry (plan.py), so two threads never run or compile the same module
twice. ``tracejit.clear_cache()`` deletes only what tracejit wrote (cache_folder.clear).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import threading
from pathlib import Path

import numba
from numba.core import caching
from numba.core.dispatcher import Dispatcher

from . import cache_folder
from .cache_folder import PREFIX, CacheWarning, Folder, atomic_write, read_regular

__all__ = ["CacheWarning", "VERSION", "cache_dir", "clear_cache", "load", "lock", "seal",
           "stats"]

_HERE = Path(__file__).parent

lock = threading.RLock()
_MODULES: dict = {}        # module name -> module: the process-wide registry
_FOLDER_OF: dict = {}      # a generated module's file path -> the Folder it lives in


def _version() -> str:
    h = hashlib.sha256(numba.__version__.encode())
    for p in sorted(_HERE.glob("*.py")) + sorted(_HERE.glob("direct/*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


VERSION = _version()


def cache_dir() -> Path:
    """The configured folder of this version's kernels (whether or not it is usable)."""
    return cache_folder.root() / VERSION


def module_name(source: str, prefix: str) -> str:
    digest = hashlib.sha256((VERSION + source).encode()).hexdigest()[:24]
    return f"{PREFIX}{prefix}_{digest}"


def _numba_files(folder: Path, name: str) -> list[Path]:
    # Numba's index and data files, ``{name}.*.nb[ic]``; matched by hand: Path.glob compiles
    # a regular expression per pattern, 2-3 ms a kernel of a cold process's first call
    pyc = folder / "__pycache__"
    prefix = name + "."
    try:
        names = os.listdir(pyc)
    except OSError:                 # no such folder (yet), or unreadable
        return []
    return sorted(pyc / f for f in names
                  if f.startswith(prefix) and f[len(prefix):].endswith((".nbi", ".nbc")))


def _sums_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.sums"


def _checksums(files: list[Path]) -> dict | None:
    sums = {}
    for p in files:
        data = read_regular(p)          # never a FIFO or a link to a device (hangs)
        if data is None:
            return None
        sums[p.name] = hashlib.sha256(data).hexdigest()
    return sums


def _recorded(folder: Path, name: str) -> dict | None:
    """The checksums recorded for a module's files, or None if the record is missing or not
    one (valid JSON that is not a name -> digest map is as corrupt as invalid JSON)."""
    data = read_regular(_sums_path(folder, name))
    try:
        sums = json.loads(data) if data is not None else None
    except ValueError:
        return None
    if not (isinstance(sums, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in sums.items())):
        return None
    return sums


def _unlink(paths):
    for p in paths:
        try:
            p.unlink(missing_ok=True)
        except IsADirectoryError:
            p.rmdir()     # an empty folder under a cache file's name (one holding anything stays)


def _holds(folder: Folder, name: str, path: Path, source: str) -> bool:
    """Whether ``folder`` has this module's source and no corrupt Numba files for it (corrupt
    ones are deleted where that is possible, else the folder does not hold the module)."""
    if read_regular(path) != source.encode():   # missing, another text, or not a file
        return False
    return _sound(folder, name) is not None or folder.attempt(lambda: _drop(folder, name))


def _drop(folder: Folder, name: str):
    """Delete the module's Numba files and their checksums."""
    _unlink(_numba_files(folder.path, name) + [_sums_path(folder.path, name)])


def _sound(folder: Folder, name: str) -> list | None:
    """The module's Numba files if they match the checksums recorded for them (none at all is
    sound too), else None."""
    files = _numba_files(folder.path, name)
    if not files:
        return files
    recorded, actual = _recorded(folder.path, name), _checksums(files)
    if recorded is not None and actual is not None and all(
            recorded.get(k) == v for k, v in actual.items()):
        return files
    return None


def _write(folder: Folder, name: str, path: Path, source: str) -> bool:
    """Write the module's source, dropping Numba files left under its name beside another
    text."""
    def write():
        _drop(folder, name)
        atomic_write(path, source.encode())
    return folder.attempt(write)


def _place(name: str, source: str) -> tuple[Folder, Path]:
    """The folder and file of the module: the cache's own copy if it holds a sound one or can
    be written, else the private folder's; if neither can be written, a path where nothing is
    (the module then runs from memory and Numba's cache finds nothing and saves nothing)."""
    for choose in (lambda: cache_folder.configured(VERSION), cache_folder.private):
        folder = choose()         # the private folder is made only when it is needed
        path = folder.path / f"{name}.py"
        if folder.usable and (_holds(folder, name, path, source)
                              or _write(folder, name, path, source)):
            break
    return folder, path


def _own_dispatchers(mod) -> list:
    """The jitted functions defined in a generated module (not the ones it imports)."""
    return [obj for obj in vars(mod).values()
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == mod.__name__]


def _execute(name: str, source: str, folder: Folder, path: Path):
    """Run the module from ``source``: never from the file or bytecode beside it."""
    spec = importlib.util.spec_from_file_location(name, path)   # __file__: Numba's locator
    mod = importlib.util.module_from_spec(spec)
    _FOLDER_OF[str(path)] = folder
    sys.modules[name] = mod          # before executing: Numba's cache needs to find it
    try:
        exec(compile(source, str(path), "exec"), mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    for disp in _own_dispatchers(mod):
        if isinstance(disp._cache, caching.Cache):
            disp._cache = _Cache(disp.py_func)
    return mod


def load(source: str, prefix: str = "k"):
    """The module for ``source``: from the registry, else from the cache folder (verified),
    else written there (or to the private folder) and run."""
    name = module_name(source, prefix)
    with lock:
        mod = _MODULES.get(name)
        if mod is None:
            folder, path = _place(name, source)
            mod = _MODULES[name] = _execute(name, source, folder, path)
        return mod


def loaded(source: str, prefix: str = "k"):
    """The module for ``source`` if this process has it already, else None (nothing run)."""
    return _MODULES.get(module_name(source, prefix))


def direct_folder(mod) -> Path | None:
    """Where the machine code of the module's kernel, compiled by codegen/direct, is kept:
    beside the module, in its folder's ``direct``; None if that folder is not to be read."""
    folder = _FOLDER_OF.get(getattr(mod, "__file__", None))
    if folder is None or not folder.usable:
        return None
    return folder.path / "direct"


def shared_on_disk(mod) -> bool:
    """Whether another process can compile this module into the cache and this one load it:
    it lives in the configured folder, which is writable (compile_workers.py)."""
    folder = _FOLDER_OF.get(getattr(mod, "__file__", None))
    return folder is not None and folder.configured and folder.writable


def verified(mod) -> bool:
    """Whether the module has Numba files and they match their recorded checksums (written by
    another process since this one loaded the module); mismatching ones are deleted."""
    folder = _FOLDER_OF.get(getattr(mod, "__file__", None))
    if folder is None:
        return False
    if _sound(folder, mod.__name__):
        return True
    folder.attempt(lambda: _drop(folder, mod.__name__))
    return False


def seal(modules):
    """Record checksums of these modules' Numba cache files (after they compiled), unless the
    recorded ones are already right or their folder is not written to."""
    with lock:
        for mod in modules:
            folder = _FOLDER_OF.get(getattr(mod, "__file__", None))
            if folder is None or not folder.writable:
                continue
            name = mod.__name__
            files = _numba_files(folder.path, name)
            sums = _checksums(files) if files else None
            if sums and sums != _recorded(folder.path, name):
                data = json.dumps(sums).encode()
                folder.attempt(lambda: atomic_write(_sums_path(folder.path, name), data))


def stats() -> dict:
    """How many generated modules this process holds, and how many kernel compilations and
    cache loads (Numba's, and codegen/direct's) it has done (``compiled`` stays put at a new
    batch size)."""
    from . import direct
    counts = direct.stats()
    compiled, loaded = counts["compiled"], counts["loaded"]
    with lock:
        modules = list(_MODULES.values())
    for mod in modules:
        for disp in _own_dispatchers(mod):
            compiled += sum(disp.stats.cache_misses.values())
            loaded += sum(disp.stats.cache_hits.values())
    return {"modules": len(modules), "compiled": compiled, "loaded": loaded}


def clear_cache(memory: bool = True):
    """Delete the kernels tracejit wrote to the cache folder (and, by default, forget the
    loaded ones); anything else in the folder stays."""
    with lock:
        try:
            root = cache_folder.root()
        except RuntimeError:          # no home folder: nothing was written to it
            root = None
        if root is not None:
            cache_folder.clear(root)
        if memory:
            _MODULES.clear()


# -- Numba's cache of a generated module ---------------------------------------------------------
class _Locator(caching._CacheLocator):
    """Where Numba caches a generated module's functions: its folder's ``__pycache__``, stamped
    with the module's name (a hash of the text that runs, whatever the file says). Numba's own
    locators would go elsewhere when that folder is read-only or NUMBA_CACHE_DIR is set, and
    need the file to exist."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(Path(py_file).parent / "__pycache__")
        self._stamp = Path(py_file).stem

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file) if py_file in _FOLDER_OF else None

    def ensure_cache_path(self):
        # Made 0700 (Numba's makedirs would follow the umask); never its parents: a deleted
        # cache folder is made again only by Folder.decide, with its marker and checks.
        try:
            Path(self._cache_path).mkdir(mode=0o700)
        except FileExistsError:
            pass

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return self._stamp

    def get_disambiguator(self):
        return str(self._lineno)


# Asked first, for every function Numba caches; it answers only for generated modules.
if _Locator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, _Locator)


class _Cache(caching.FunctionCache):
    """Numba's cache of one generated function, whose disk errors do not reach the user: a
    failed load compiles, a failed save follows the folder's policy (Folder.attempt)."""

    def __init__(self, py_func):
        super().__init__(py_func)
        self._folder = _FOLDER_OF[py_func.__code__.co_filename]

    def load_overload(self, sig, target_context):
        try:
            return super().load_overload(sig, target_context)
        except OSError:
            return None

    def save_overload(self, sig, data):
        save = super().save_overload
        self._folder.attempt(lambda: save(sig, data))
