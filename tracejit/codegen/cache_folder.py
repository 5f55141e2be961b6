"""Which folder the kernel cache uses, and whether this process may trust and write it.

What is in the cache folder runs: generated modules are executed, and Numba's cache files hold
machine code and pickles. So a folder is used only when it is ours: owned by this user and
writable by nobody else (the configured root, its version folder and that folder's
``__pycache__``, each checked with ``lstat``; only the root may be a symbolic link, and then the
link must be ours too). The folders tracejit makes are made that way (0700).

A folder that fails those checks, cannot be made, or names a file is not used: the user is
told once (``CacheWarning``) and kernels go to a private folder of this process
(``tempfile.mkdtemp``: 0700, removed at exit), so the code path stays the same (real files,
Numba's ``cache=True``). A folder that can be read but not written still serves the kernels it
holds; new ones go to the private folder. A write that fails later (a full disk, a folder made
read-only or deleted while in use) makes the decision again: a deleted folder is made anew,
anything else stops the writing there (with the one warning). No such fault reaches the user
as an exception (``Folder.attempt``).

``clear`` deletes only what tracejit wrote: version folders that hold the marker file
(``MARKER``), and in them only files of tracejit's own layout, never following a link.
"""
from __future__ import annotations

import atexit
import errno
import hashlib
import os
import shutil
import stat
import sys
import tempfile
import time
import warnings
from pathlib import Path

from ..config import config

MARKER = ".tracejit-cache"      # written into each version folder tracejit makes
_MARKER_TEXT = ("A kernel cache of tracejit: generated Python modules (_tracejit_*.py) and "
                "Numba's machine code for them (__pycache__).\ntracejit.clear_cache() deletes "
                "what tracejit wrote here and nothing else.\n")
PREFIX = "_tracejit_"           # every generated module's name (cache.module_name) and files
TMP_PREFIX = ".tracejit-tmp-"   # files being written (replaced atomically by their real name)
MAX_SEALED_BYTES = 1 << 30      # no kernel's machine code comes near: a larger file is not ours


class CacheWarning(UserWarning):
    """The kernel cache folder cannot be used or written: kernels are compiled without it."""


_absolute: dict = {}              # a configured path -> the absolute path it named at first use


def root() -> Path:
    """The configured cache folder: ``$TRACEJIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracejit``,
    else ``~/.cache/tracejit``. Version folders go inside it. A relative path is taken from the
    working directory of its first use, and stays that folder after a ``chdir`` (the modules'
    files, Numba's and the direct compiler's are all found by one absolute path). RuntimeError
    if there is no home folder to hold the default (``configured`` says what to do)."""
    r = config.cache_dir or os.environ.get("TRACEJIT_CACHE_DIR")
    if not r:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
        r = os.path.join(base, "tracejit")
    path = _absolute.get(r)
    if path is None:
        path = _absolute[r] = Path(os.path.abspath(r))
    return path


def write_sealed(path: Path, payload: bytes):
    """``payload`` after its SHA-256, written whole or not at all (``read_sealed`` checks it);
    an unwritable place only costs the work of making it again. In a cache folder (its
    ``direct``), the folder's policy decides (``Folder.attempt``): nothing is written to a
    read-only one, and a full disk is told once, as for the other files there."""
    data = hashlib.sha256(payload).digest() + payload

    def write():
        _mkdir_or_raise(path.parent)
        atomic_write(path, data)
    folder = _owner(path)
    if folder is not None:
        folder.attempt(write)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    except OSError:
        pass


def _mkdir_or_raise(path: Path):
    # 0700 and never its parents: a deleted cache folder is made again only by Folder.decide
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass


def _owner(path: Path) -> "Folder | None":
    """The cache folder (configured or private) that ``path`` is inside, if any."""
    parents = path.parents
    for folder in [*_decided.values(), _private]:
        if folder is not None and folder.path in parents:
            return folder
    return None


def read_regular(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (of at most ``MAX_SEALED_BYTES``), else
    None (missing, unreadable, or something else: opening a FIFO waits for a writer, and a
    link to /dev/zero would never end). Every file of the cache folder is read this way."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        # non-blocking: a FIFO put there after the stat does not wait either
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SEALED_BYTES:
                return None
            return f.read(st.st_size)
    except OSError:
        return None


def read_sealed(path: Path) -> bytes | None:
    """The payload of a file ``write_sealed`` wrote, or None if it is missing, torn or
    corrupt."""
    data = read_regular(path)
    if data is None:
        return None
    if len(data) >= 32 and hashlib.sha256(data[32:]).digest() == data[:32]:
        return data[32:]
    return None


def atomic_write(path: Path, data: bytes):
    """Write ``path`` whole or not at all (a reader never sees half a file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            os.replace(tmp, path)
        except IsADirectoryError:
            # an empty folder in the file's place is removed; one holding anything stays
            # (ENOTEMPTY: Folder.attempt gives up on this file only)
            os.rmdir(path)
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class Folder:
    """A folder that generated modules are read from (``usable``) and written to
    (``writable``): the configured one (decided by ``decide``) or this process's private one."""

    def __init__(self, path: Path, configured: bool):
        self.path = path
        self.configured = configured
        self.usable = self.writable = False
        self._warned = False

    def __repr__(self):
        return f"Folder({str(self.path)!r}, usable={self.usable}, writable={self.writable})"

    # -- the decision -----------------------------------------------------------------------
    def decide(self):
        """Make the folders (0700) and check them; say once why they cannot be used or
        written."""
        self.usable = self.writable = False
        root_ = self.path.parent
        error = None              # the first failure to make or write something here
        for folder in (root_, self.path, self.path / "__pycache__"):
            made = _mkdir(folder, parents=folder is root_)
            error = error or made
            where = "it" if folder is root_ else str(folder)
            if not os.path.lexists(folder):
                if folder.name == "__pycache__":
                    break         # read-only, without Numba's files: its sources still serve
                return self._refuse(f"{where} cannot be made ({_describe(made)})",
                                    f"make sure {folder.parent} is a folder you can write")
            problem = _untrusted(folder, link_ok=folder is root_)
            if problem:
                what, fix = problem
                return self._refuse(f"{where} {what}", fix)
        self.usable = True
        if error is None:
            error = self._probe()
        if error is not None:
            self._read_only(error)
            return
        self.writable = True
        _remove_stale_temporaries(self.path)


    def _probe(self) -> OSError | None:
        """Write something (the marker, if it is missing) to learn whether writes succeed."""
        marker = self.path / MARKER
        try:
            if not _is_file(marker):
                atomic_write(marker, _MARKER_TEXT.encode())
            else:
                fd, tmp = tempfile.mkstemp(dir=self.path, prefix=TMP_PREFIX)
                os.close(fd)
                os.unlink(tmp)
        except OSError as e:
            return e
        return None

    # -- writing ----------------------------------------------------------------------------
    def attempt(self, write) -> bool:
        """Call ``write()`` (something that writes here) unless the folder is read-only; an
        OSError is not raised but handled by ``failed``. True if it wrote."""
        for _ in range(2):        # a second time only if the folder was deleted and made anew
            if not self.writable:
                return False
            try:
                write()
                return True
            except OSError as e:
                if _entry_fault(e):
                    return False  # one file's name is taken by a folder: only that file
                if not self.failed(e):
                    return False
        return False

    def failed(self, error: OSError) -> bool:
        """A write here failed. True if the folder had been deleted and is made anew (write
        once more); else nothing more is written here, and the user is told once."""
        if not self.writable:
            return False
        self.writable = False
        if self.configured and not os.path.lexists(self.path):
            self.decide()         # it warns if the folder cannot be made again
            return self.writable
        self._read_only(error)
        return False

    # -- telling the user -------------------------------------------------------------------
    def _refuse(self, reason: str, fix: str):
        self.usable = self.writable = False
        self._warn(f"tracejit: not using the kernel cache folder {self.path.parent}: {reason}. "
                   "Kernels are compiled without it, in a private temporary folder removed at "
                   f"exit. What to do: {fix}, or set TRACEJIT_CACHE_DIR to a folder of your own "
                   "that only you can write.")

    def _read_only(self, error: OSError):
        self.writable = False
        self._warn(f"tracejit: cannot write to the kernel cache folder {self.path} "
                   f"({_describe(error)}). The kernels it holds are still used; new ones are "
                   "compiled without it, in a private temporary folder removed at exit. What "
                   "to do: make the folder writable or free space on its disk, or set "
                   "TRACEJIT_CACHE_DIR to a folder you can write.")

    def _warn(self, message: str):
        if self._warned or not self.configured:
            return                # the private folder fails silently: the user was told
        self._warned = True
        setting = ("TRACEJIT_CACHE_DIR names it" if config.cache_dir
                   or os.environ.get("TRACEJIT_CACHE_DIR")
                   else "it is the default: TRACEJIT_CACHE_DIR is not set")
        warnings.warn(f"{message} ({setting}.)", CacheWarning, stacklevel=_user_stacklevel())


# A write in flight lasts milliseconds; a temporary file this old was left by a process
# killed while writing (SIGKILL, a power cut), and nothing else would ever remove it.
STALE_TMP_SECONDS = 3600


def _remove_stale_temporaries(folder: Path):
    """Delete the temporary files killed writers left here (readers ignore them, but each
    kill left one more, for good)."""
    now = time.time()
    for where in (folder, folder / "__pycache__", folder / "direct"):
        try:
            entries = list(os.scandir(where))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.startswith(TMP_PREFIX):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_TMP_SECONDS:
                    os.unlink(entry.path)
            except OSError:
                pass


def _entry_fault(error: OSError) -> bool:
    """Whether a failed write concerns one name in the folder, not the folder: a folder (not
    empty) where a file is to be. (It stopped every write to the folder, in every process.)"""
    return error.errno in (errno.EISDIR, errno.ENOTEMPTY)


def _mkdir(path: Path, parents: bool = False) -> OSError | None:
    try:
        path.mkdir(mode=0o700, parents=parents, exist_ok=True)
    except OSError as e:
        return e
    return None


def _untrusted(path: Path, link_ok: bool) -> tuple[str, str] | None:
    """Why code in ``path`` could have been put there by someone else, and what to do; None if
    it cannot: a folder (not a link, unless ``link_ok`` and the link is ours) owned by this
    user and not writable by group or others."""
    if not hasattr(os, "getuid"):
        return None               # no POSIX owners (Windows): nothing to check
    uid = os.getuid()
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        if not link_ok:
            return "is a symbolic link", f"remove the link {path}"
        if st.st_uid != uid:
            return (f"is a symbolic link owned by uid {st.st_uid}, not by you (uid {uid})",
                    "use a folder of your own")
        st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder", f"remove the file {path} or choose another folder"
    if st.st_uid != uid:
        return (f"is owned by uid {st.st_uid}, not by you (uid {uid})",
                "use a folder of your own")
    if st.st_mode & 0o022:
        who = " and ".join(w for w, bit in (("group", 0o020), ("others", 0o002))
                           if st.st_mode & bit)
        return (f"is writable by {who} (mode {stat.S_IMODE(st.st_mode):o}), so anyone there "
                "could put code in it that tracejit would run", f"run chmod go-w {path}")
    return None


def _describe(error) -> str:
    return f"{type(error).__name__}: {error}" if error is not None else "unknown error"


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel for the innermost frame outside tracejit, Numba and the
    modules they generate: the user's call that compiled."""
    frame, level = sys._getframe(2), 2      # the caller of _warn, as warn's stacklevel 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
            ("tracejit", "numba", "llvmlite", "importlib", PREFIX)):
        frame, level = frame.f_back, level + 1
    return level


# -- the folders of this process ---------------------------------------------------------------
_decided: dict = {}               # configured version folder -> its Folder
_private: Folder | None = None


def configured(version: str) -> Folder:
    """The configured cache's folder for ``version``, decided once per process (and again
    after a failed write)."""
    try:
        path = root() / version
    except RuntimeError as e:     # Path.home(): no HOME, and a user the system does not know
        folder = _decided.get(None)
        if folder is None:
            folder = _decided[None] = Folder(Path("~/.cache/tracejit") / version, True)
            folder._refuse(f"there is no home folder to hold it ({e})",
                           "set HOME to your home folder")
        return folder
    folder = _decided.get(path)
    if folder is None:
        folder = _decided[path] = Folder(path, configured=True)
        folder.decide()
    return folder


def private() -> Folder:
    """This process's own folder (0700, removed at exit); if even that cannot be made, a
    folder that is neither read nor written (modules then run from memory only)."""
    global _private
    if _private is None:
        try:
            path = Path(tempfile.mkdtemp(prefix="tracejit-"))
        except OSError:
            _private = Folder(Path(tempfile.gettempdir()) / "tracejit-unavailable", False)
        else:
            atexit.register(shutil.rmtree, path, ignore_errors=True)
            _private = Folder(path, configured=False)
            _private.usable = _private.writable = True
    return _private


# -- clearing ----------------------------------------------------------------------------------
def clear(root_: Path):
    """Delete what tracejit wrote under ``root_``: in each version folder (12 hex digits,
    holding the marker, not a link) the generated modules, their checksums and Numba files, the
    direct compiler's machine code and typing answers (``direct``), and unfinished writes. A folder left holding anything else stays, with its marker."""
    try:
        entries = list(os.scandir(root_))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if (len(name) == 12 and all(c in "0123456789abcdef" for c in name)
                and entry.is_dir(follow_symlinks=False) and _is_file(Path(entry.path) / MARKER)):
            _clear_version_folder(Path(entry.path))


def _clear_version_folder(folder: Path):
    pycache = folder / "__pycache__"
    if stat.S_ISDIR(_lmode(pycache)):
        _remove_files(pycache, lambda n: n.startswith(PREFIX))
        _rmdir(pycache)           # only if nothing else is in it
    direct = folder / "direct"    # codegen/direct's machine code and learned typing answers
    if stat.S_ISDIR(_lmode(direct)):
        _remove_files(direct, lambda n: n.endswith(".o") or n == "numba_typing.json"
                      or n.startswith(TMP_PREFIX))
        _rmdir(direct)
    _remove_files(folder, lambda n: (n.startswith(PREFIX) and n.endswith((".py", ".sums")))
                  or n.startswith(TMP_PREFIX))
    try:
        rest = set(os.listdir(folder))
    except OSError:
        return
    if rest <= {MARKER}:
        try:
            os.unlink(folder / MARKER)
        except OSError:
            pass
        _rmdir(folder)


def _remove_files(folder: Path, ours):
    """Unlink the regular files of ``folder`` whose names ``ours`` accepts (links stay)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if ours(entry.name) and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def _lmode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _rmdir(path: Path):
    try:
        os.rmdir(path)
    except OSError:
        pass
