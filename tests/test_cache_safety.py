"""The kernel cache folder (codegen/cache_folder.py, cache.py): used only when nobody else can
put code in it; a folder that cannot be used or written costs one CacheWarning, never an
error; clear_cache deletes only what tracejit wrote; and generated modules run from the text
tracejit generated, never from bytecode found beside them.

Tests run as root here, where permissions do not stop writes: read-only folders and full disks
are simulated by making the file functions raise what the system would."""
import errno
import importlib.util
import os
import shutil
import warnings
from importlib._bootstrap_external import _code_to_timestamp_pyc
from pathlib import Path

import numpy as np
import pytest
from numba.core import caching

import tracejit
from cache_helpers import as_new_process
from tracejit import CacheWarning
from tracejit.codegen import cache, cache_folder, direct

X = np.arange(6, dtype=np.float32)


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """A cache folder of the test's own, seen as a new process sees it: no folder decided and
    no module loaded yet (so kernels are looked up on disk)."""
    root = tmp_path / "cache"
    monkeypatch.setattr(tracejit.config, "cache_dir", str(root))
    # Numba's cache files (test_direct_kernels.py checks the direct compiler's)
    monkeypatch.setattr(tracejit.config, "direct", False)
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setattr(cache_folder, "_decided", {})
    return root


def _run(fn=lambda x: x * 2 + 1, expected=X * 2 + 1):
    """Compile and call a new jitted function; return the CacheWarnings it gave."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(tracejit.jit(fn)(X), expected)
    return [w for w in record if issubclass(w.category, CacheWarning)]


def _generated(folder: Path) -> list:
    return sorted(p.name for p in folder.rglob("_tracejit_*"))


def _raise(err, name):
    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err), name)
    return fail


# -- who may have written the folder ----------------------------------------------------------
def test_a_new_cache_folder_is_made_private_with_its_marker(cache_root):
    assert _run() == []
    version = cache_root / cache.VERSION
    for folder in (cache_root, version, version / "__pycache__"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert (version / cache_folder.MARKER).is_file()
    assert _generated(version / "__pycache__")       # Numba's machine code is kept there


@pytest.mark.parametrize("loose", ["root", "version folder", "__pycache__"])
def test_a_cache_folder_others_can_write_is_not_used(cache_root, loose):
    version = cache_root / cache.VERSION
    folder = {"root": cache_root, "version folder": version,
              "__pycache__": version / "__pycache__"}[loose]
    for f in (cache_root, version, version / "__pycache__"):
        f.mkdir(mode=0o700)
        if f == folder:
            f.chmod(0o777)
            break
    (warning,) = _run()
    message = str(warning.message)
    assert str(folder) in message and "TRACEJIT_CACHE_DIR" in message and "chmod" in message
    assert _generated(cache_root) == []               # nothing was written into it
    assert warning.filename == __file__               # it points at the user's call


def test_a_cache_folder_owned_by_another_user_is_not_used(cache_root, monkeypatch):
    cache_root.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(cache_root).st_uid + 1)
    (warning,) = _run()
    assert "owned by uid" in str(warning.message) and str(cache_root) in str(warning.message)
    assert _generated(cache_root) == []


def test_a_version_folder_that_is_a_symbolic_link_is_not_used(cache_root, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache_root.mkdir(mode=0o700)
    (cache_root / cache.VERSION).symlink_to(elsewhere)
    (warning,) = _run()
    assert "symbolic link" in str(warning.message)
    assert list(elsewhere.iterdir()) == []


def test_a_root_that_is_our_own_link_to_our_own_folder_is_used(cache_root, tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    cache_root.symlink_to(real)
    folder = cache_folder.configured(cache.VERSION)
    assert folder.usable and folder.writable


def test_a_pyc_planted_beside_a_generated_module_is_not_run(cache_root, monkeypatch, tmp_path):
    """importlib's loader runs a ``.pyc`` whose header matches the ``.py``'s size and time
    without reading the ``.py``; generated modules run from the text tracejit generated."""
    assert _run() == []
    evidence = tmp_path / "planted code ran"
    for py in (cache_root / cache.VERSION).glob("_tracejit_*.py"):
        code = compile(f"open({str(evidence)!r}, 'w').close()\n", str(py), "exec")
        pyc = Path(importlib.util.cache_from_source(str(py)))
        st = py.stat()
        pyc.write_bytes(_code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size))
    as_new_process(monkeypatch)
    assert _run() == []
    assert not evidence.exists()


# -- folders that cannot be used or written ---------------------------------------------------
def test_a_cache_dir_naming_a_file_compiles_without_the_cache(cache_root):
    cache_root.parent.mkdir(exist_ok=True)
    cache_root.write_text("not a folder")
    (warning,) = _run()
    assert "not a folder" in str(warning.message) and "TRACEJIT_CACHE_DIR" in str(warning.message)
    assert cache_root.read_text() == "not a folder"


def test_a_read_only_cache_folder_still_serves_the_kernels_it_holds(cache_root, monkeypatch):
    assert _run() == []
    before = {p: p.read_bytes() for p in cache_root.rglob("*") if p.is_file()}
    as_new_process(monkeypatch)
    monkeypatch.setattr("tempfile.mkstemp", _raise(errno.EACCES, "mkstemp"))
    monkeypatch.setattr(os, "replace", _raise(errno.EACCES, "replace"))
    (warning,) = _run()
    assert "cannot write" in str(warning.message) and "still used" in str(warning.message)
    numba_compiled = cache.stats()["compiled"] - direct.stats()["compiled"]
    numba_loaded = cache.stats()["loaded"] - direct.stats()["loaded"]
    assert numba_compiled == 0 and numba_loaded > 0
    assert {p: p.read_bytes() for p in cache_root.rglob("*") if p.is_file()} == before


def test_a_full_disk_compiles_without_the_cache(cache_root, monkeypatch):
    monkeypatch.setattr(os, "replace", _raise(errno.ENOSPC, "replace"))
    (warning,) = _run()
    assert "No space left on device" in str(warning.message)
    assert _run(lambda x: x - 1, X - 1) == []         # told once
    assert _generated(cache_root) == []


def test_a_full_disk_while_numba_saves_machine_code_compiles_without_the_cache(cache_root,
                                                                               monkeypatch):
    monkeypatch.setattr(caching.IndexDataCacheFile, "_save_index",
                        _raise(errno.ENOSPC, "index"))
    (warning,) = _run()
    assert "No space left on device" in str(warning.message)
    assert _run(lambda x: x - 1, X - 1) == []


def test_a_cache_folder_deleted_during_a_compile_is_made_again(cache_root, monkeypatch):
    save = caching.IndexDataCacheFile.save

    def delete_once_then_save(self, key, data):   # after the sources, before machine code
        if cache_root.exists() and not deleted:
            deleted.append(shutil.rmtree(cache_root))
        save(self, key, data)

    deleted = []
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", delete_once_then_save)
    assert _run() == []
    assert deleted
    version = cache_root / cache.VERSION
    assert (version / cache_folder.MARKER).is_file() and _generated(version / "__pycache__")
    assert _run(lambda x: x - 1, X - 1) == []


def test_a_cache_folder_deleted_and_replaced_by_a_file_compiles_without_it(cache_root):
    assert _run() == []
    shutil.rmtree(cache_root)
    cache_root.write_text("in the way")
    (warning,) = _run(lambda x: x - 1, X - 1)
    assert "not a folder" in str(warning.message)


# -- clear_cache ------------------------------------------------------------------------------
def test_clear_cache_deletes_what_tracejit_wrote_and_nothing_else(cache_root, tmp_path):
    assert _run() == []
    version = cache_root / cache.VERSION
    foreign = cache_root / "abcdef012345"              # named like a version folder
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    (foreign / "_tracejit_k_notes.py").write_text("not ours either")
    outside = tmp_path / "outside"                     # a link in the cache, to files elsewhere
    outside.mkdir()
    (outside / cache_folder.MARKER).write_text("")
    (outside / "_tracejit_k_x.py").write_text("")
    (cache_root / "0123456789ab").symlink_to(outside)
    (version / "_tracejit_k_link.py").symlink_to(outside / "_tracejit_k_x.py")

    tracejit.clear_cache(memory=False)

    assert (foreign / "thesis.tex").read_text() == "years of work"
    assert (foreign / "_tracejit_k_notes.py").exists()
    assert sorted(p.name for p in outside.iterdir()) == sorted([cache_folder.MARKER,
                                                                "_tracejit_k_x.py"])
    # the version folder keeps only what tracejit did not write (the link), and its marker
    assert sorted(p.name for p in version.iterdir()) == [cache_folder.MARKER,
                                                         "_tracejit_k_link.py"]


def test_clear_cache_removes_a_version_folder_holding_only_tracejits_files(cache_root):
    assert _run() == []
    (cache_root / "keep.txt").write_text("not ours")
    tracejit.clear_cache(memory=False)
    assert sorted(p.name for p in cache_root.iterdir()) == ["keep.txt"]
