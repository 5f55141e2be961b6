"""The on-disk kernel cache: reuse across processes, corrupt entries rebuilt, and no new
compilation at a new batch size."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import tracejit
from tracejit.codegen import cache

SCRIPT = textwrap.dedent("""
    import numpy as np, tracejit
    from tracejit.codegen import cache
    f = tracejit.jit(lambda x, y: np.tanh(x * y) + x.sum(axis=1, keepdims=True))
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    out = f(x, x)
    ref = np.tanh(x * x) + x.sum(axis=1, keepdims=True)
    assert np.allclose(out, ref, rtol=1e-6), (out, ref)
    s = cache.stats()
    print("compiled", s["compiled"], "loaded", s["loaded"])
""")


def _run(cache_dir):
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, check=True).stdout
    words = out.split()
    return int(words[words.index("compiled") + 1]), int(words[words.index("loaded") + 1])


def test_a_new_process_loads_kernels_from_disk_and_corrupt_entries_are_rebuilt(tmp_path):
    compiled, _ = _run(tmp_path)
    assert compiled > 0
    compiled, loaded = _run(tmp_path)
    assert compiled == 0 and loaded > 0
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    sources = sorted(folder.glob("_tracejit_k_*.py"))
    sources[0].write_text("garbage that is not the generated source")
    binaries = sorted((folder / "__pycache__").glob("_tracejit_e_*.nbc"))
    binaries[0].write_bytes(b"\0" * 64)
    compiled, _ = _run(tmp_path)
    assert compiled > 0
    assert "garbage" not in sources[0].read_text()
    compiled, loaded = _run(tmp_path)
    assert compiled == 0 and loaded > 0


def test_a_new_batch_size_compiles_no_new_kernel():
    f = tracejit.jit(lambda x, b: np.maximum(x * 2 + b, 0).mean(axis=1))
    b = np.ones(5, np.float32)
    f(np.ones((3, 5), np.float32), b)
    before = cache.stats()
    out = f(np.ones((7, 5), np.float32), b)
    after = cache.stats()
    assert f.trace_count == 2
    assert after["compiled"] == before["compiled"] and after["modules"] == before["modules"]
    np.testing.assert_allclose(out, np.full(7, 3.0))


def test_clear_cache_empties_the_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))
    (tmp_path / cache.VERSION).mkdir()
    (tmp_path / cache.VERSION / "x.py").write_text("")
    (tmp_path / "keep.txt").write_text("not ours")
    tracejit.clear_cache(memory=False)
    assert not (tmp_path / cache.VERSION).exists()
    assert (tmp_path / "keep.txt").exists()


SOURCE_SCRIPT = textwrap.dedent("""
    import hashlib, numpy as np, tracejit
    def stats(x):   # two float32 sums and a max in one reduction pass
        return x.sum(axis=1) + (x * x).sum(axis=1) + x.max(axis=1)
    x = np.ones((3, 5), np.float32)
    print(hashlib.sha256(tracejit.jit(stats).lower(x).source.encode()).hexdigest())
""")


def test_generated_source_does_not_depend_on_string_hashing(tmp_path):
    """The disk cache is keyed by the source text: a source that changed with the process's
    hash seed (a set of names iterated while writing it) missed the cache in every new
    process that hashed differently."""
    digests = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path), PYTHONHASHSEED=seed)
        digests.add(subprocess.run([sys.executable, "-c", SOURCE_SCRIPT], env=env, text=True,
                                   capture_output=True, check=True).stdout.strip())
    assert len(digests) == 1
