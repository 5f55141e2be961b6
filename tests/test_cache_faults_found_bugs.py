"""Faults of the kernel cache found by a second hunt (damaged entries, a relative or missing
cache folder, a full disk under the direct compiler's files, clear_cache); each test pins the
behaviour that replaced a crash, a wrongly trusted file, or a cache that silently stopped.

Tests run as root here, where permissions do not stop writes: full disks are simulated by
making the file functions raise what the system would."""
import errno
import os
import shutil
import time
import warnings
from pathlib import Path

import numpy as np

import tracejit
from cache_helpers import as_new_process
from tracejit import CacheWarning
from tracejit.codegen import cache, cache_folder
from tracejit.codegen.direct import engine

X = np.arange(6, dtype=np.float32)


def _run(fn, expected):
    """Compile and call a new jitted function; return the CacheWarnings it gave."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        np.testing.assert_allclose(tracejit.jit(fn)(X), expected, rtol=1e-6)
    return [w for w in record if issubclass(w.category, CacheWarning)]


# A direct kernel's machine code file was trusted by its checksum alone: another kernel's file
# (or this kernel's compiled for another CPU) copied under its name was loaded into the engine
# (its functions missing: an internal error, the kernel sent to Numba in every process, the
# file never replaced; or another CPU's instructions run).
def test_a_sound_machine_code_file_under_another_kernels_name_is_compiled_again(tmp_path):
    mine, other = tmp_path / ("a" * 32 + ".o"), tmp_path / ("b" * 32 + ".o")
    engine._write(other, [("c" * 32, ["tracejit_shared_x"])], b"\x7fELF other kernel")
    assert engine._read(other) == ([("c" * 32, ["tracejit_shared_x"])], b"\x7fELF other kernel")
    shutil.copy(other, mine)
    assert engine._read(mine) is None
    assert not mine.exists()                  # deleted: compiled and written again


# A folder in place of one cache file (an index of Numba's here; a module's source did the same)
# made the write fail, and any failed write stopped all writing to the cache folder, with a
# warning to make the folder writable or free space: in every process, for good.
def test_a_folder_in_place_of_one_cache_file_does_not_stop_the_cache(cache_root, monkeypatch):
    monkeypatch.setattr(tracejit.config, "direct", False)      # Numba's cache files
    fn = lambda x: np.tanh(x) * 3 - x                          # noqa: E731
    assert _run(fn, np.tanh(X) * 3 - X) == []
    (index,) = (cache_root / cache.VERSION / "__pycache__").glob("*.nbi")
    index.unlink()
    index.mkdir()
    as_new_process(monkeypatch)
    assert _run(fn, np.tanh(X) * 3 - X) == []
    assert index.is_file()                                     # written again
    assert cache_folder.configured(cache.VERSION).writable


# A relative TRACEJIT_CACHE_DIR was looked up again at each use: after a chdir the kernels went
# to another folder, and the direct compiler's machine code was never kept (a module's file,
# made absolute by importlib, did not match the relative name its folder was recorded under).
def test_a_relative_cache_dir_stays_the_folder_it_named_and_keeps_machine_code(
        tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    monkeypatch.setattr(tracejit.config, "cache_dir", "relative cache")
    as_new_process(monkeypatch)
    root = tmp_path / "a" / "relative cache"
    assert cache_folder.root() == root
    assert _run(lambda x: np.sqrt(x) * 5 + x, np.sqrt(X) * 5 + X) == []
    (mod,) = cache._MODULES.values()
    assert cache.direct_folder(mod) == root / cache.VERSION / "direct"
    assert list((root / cache.VERSION / "direct").glob("*.o"))
    monkeypatch.chdir(tmp_path / "b")
    assert cache_folder.root() == root
    assert list((tmp_path / "b").iterdir()) == []


# With no TRACEJIT_CACHE_DIR and no home folder (HOME unset, a user the system does not know),
# every compile raised "RuntimeError: Could not determine home directory".
def test_no_home_folder_compiles_without_the_cache_and_says_to_set_home(monkeypatch):
    def no_home(cls=None):
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.setattr(tracejit.config, "cache_dir", None)
    monkeypatch.delenv("TRACEJIT_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(no_home))
    as_new_process(monkeypatch)
    (warning,) = _run(lambda x: x * 4 - 2, X * 4 - 2)
    assert "no home folder" in str(warning.message) and "TRACEJIT_CACHE_DIR" in str(warning.message)
    tracejit.clear_cache(memory=False)                         # nothing to clear, no error


# A full disk (or a read-only folder) when the direct compiler wrote machine code was ignored
# in silence: no warning, and every process compiled and failed to write it again.
def test_a_full_disk_while_keeping_direct_machine_code_is_told_once(cache_root, monkeypatch):
    write = cache_folder.atomic_write

    def full_for_machine_code(path, data):
        if path.suffix == ".o":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        write(path, data)
    monkeypatch.setattr(cache_folder, "atomic_write", full_for_machine_code)
    (warning,) = _run(lambda x: np.exp(x) * 7 - x, np.exp(X) * 7 - X)
    assert "No space left on device" in str(warning.message)
    assert not cache_folder.configured(cache.VERSION).writable


# clear_cache left the direct compiler's machine code (and its learned typing answers): the
# kernels it was meant to make compile again still loaded, and the version folder stayed.
def test_clear_cache_deletes_the_direct_compilers_machine_code(cache_root):
    assert _run(lambda x: np.cos(x) * 9 + x, np.cos(X) * 9 + X) == []
    version = cache_root / cache.VERSION
    assert list((version / "direct").glob("*.o"))
    tracejit.clear_cache()
    assert not version.exists()


def test_temporary_files_a_killed_writer_left_are_removed_once_stale(cache_root):
    """Each writer killed mid-write (SIGKILL) left a ``.tracejit-tmp-*`` file for good; a
    folder's first use in a process now removes those older than an hour (a write in flight
    lasts milliseconds), and leaves young ones, which may be another process's."""
    version = cache_root / cache.VERSION
    (version / "direct").mkdir(parents=True)
    old = [version / f"{cache_folder.TMP_PREFIX}old", version / "direct" /
           f"{cache_folder.TMP_PREFIX}old2"]
    young = version / f"{cache_folder.TMP_PREFIX}young"
    for path in old + [young]:
        path.write_bytes(b"partial")
    hours_ago = time.time() - 2 * cache_folder.STALE_TMP_SECONDS
    for path in old:
        os.utime(path, (hours_ago, hours_ago))
    _run(lambda x: np.sin(x) * 3.0, np.sin(X) * 3.0)
    assert not any(p.exists() for p in old) and young.exists()
