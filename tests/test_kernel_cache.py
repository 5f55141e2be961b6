"""The on-disk kernel cache: reuse across processes, corrupt entries rebuilt, and no new
compilation at a new batch size."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracejit
from tracejit.codegen import cache, cache_folder

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


def _run(cache_dir, direct="0"):
    """(compiled, loaded) in a new process; Numba's kernels unless ``direct`` is "1"."""
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(cache_dir), TRACEJIT_DIRECT=direct)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, check=True).stdout
    words = out.split()
    return int(words[words.index("compiled") + 1]), int(words[words.index("loaded") + 1])


def _cold(tmp_path_factory, direct):
    """A cache folder that one process running SCRIPT filled from empty, and what it
    compiled."""
    folder = tmp_path_factory.mktemp(f"cold-direct{direct}")
    compiled, _ = _run(folder, direct=direct)
    assert compiled > 0
    return folder, compiled


# The tests below each start from a copy of the folder a first, cold process left (compiling
# into an empty folder once per module, not once per test). shutil.copytree keeps the files'
# times, and with them Numba's index stamps.
@pytest.fixture(scope="module")
def _numba_cold(tmp_path_factory):
    return _cold(tmp_path_factory, "0")


@pytest.fixture(scope="module")
def _direct_cold(tmp_path_factory):
    return _cold(tmp_path_factory, "1")


@pytest.fixture
def numba_cold(_numba_cold, tmp_path):
    """tmp_path holding what a first process compiled with Numba from an empty folder."""
    shutil.copytree(_numba_cold[0], tmp_path, dirs_exist_ok=True)
    return tmp_path


@pytest.fixture
def direct_cold(_direct_cold, tmp_path):
    """(tmp_path holding the machine code a first process compiled directly from an empty
    folder, how many kernels it compiled)."""
    shutil.copytree(_direct_cold[0], tmp_path, dirs_exist_ok=True)
    return tmp_path, _direct_cold[1]


def test_a_new_process_loads_kernels_from_disk_and_corrupt_entries_are_rebuilt(numba_cold):
    tmp_path = numba_cold                        # after a first process compiled into it
    compiled, loaded = _run(tmp_path)
    assert compiled == 0 and loaded > 0
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    sources = sorted(folder.glob("_tracejit_k_*.py"))
    sources[0].write_text("garbage that is not the generated source")
    binaries = sorted((folder / "__pycache__").glob("_tracejit_k_*.nbc"))
    binaries[-1].write_bytes(b"\0" * 64)
    compiled, _ = _run(tmp_path)
    assert compiled > 0
    assert "garbage" not in sources[0].read_text()
    compiled, loaded = _run(tmp_path)
    assert compiled == 0 and loaded > 0


@pytest.mark.slow     # a fresh process (4 s); the corrupt-entry test above covers the path
def test_a_checksum_record_that_is_json_but_not_checksums_is_rebuilt(numba_cold):
    """Valid JSON that is not a name -> digest map is as corrupt as invalid JSON (a number
    crashed every later process)."""
    tmp_path = numba_cold                        # after a first process compiled into it
    assert list(tmp_path.rglob("_tracejit_k_*.sums"))
    for k, sums in enumerate(sorted(tmp_path.rglob("_tracejit_k_*.sums"))):
        sums.write_text(["0", '{"a": 1}', "[1, 2]"][k % 3])
    compiled, _ = _run(tmp_path)
    assert compiled > 0
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
    """What tracejit wrote goes (tests/test_cache_safety.py: and nothing else)."""
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))
    version = tmp_path / cache.VERSION
    (version / "__pycache__").mkdir(parents=True)
    (version / cache_folder.MARKER).write_text("")
    for name in ("_tracejit_k_0.py", "_tracejit_k_0.sums", ".tracejit-tmp-1",
                 "__pycache__/_tracejit_k_0.kernel-1.py311.nbi",
                 "__pycache__/_tracejit_k_0.kernel-1.py311.1.nbc"):
        (version / name).write_text("")
    (tmp_path / "keep.txt").write_text("not ours")
    tracejit.clear_cache(memory=False)
    assert not version.exists()
    assert (tmp_path / "keep.txt").exists()


SOURCE_SCRIPT = textwrap.dedent("""
    import hashlib, numpy as np, tracejit
    def stats(x):   # two float32 sums and a max in one reduction pass
        return x.sum(axis=1) + (x * x).sum(axis=1) + x.max(axis=1)
    x = np.ones((3, 5), np.float32)
    print(hashlib.sha256(tracejit.jit(stats).lower(x).source.encode()).hexdigest())
""")


@pytest.mark.slow     # three fresh processes (3 s); the sources it checks change rarely
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


WARM_SCRIPT = textwrap.dedent("""
    import sys, numpy as np, tracejit
    from tracejit.codegen import cache, warm_load
    rng = np.random.default_rng(0)
    def check(got, want, tol=2e-5):
        assert np.allclose(got, want, rtol=tol, atol=tol), (got, want)

    chain = tracejit.jit(lambda x, y: np.tanh(x * y + 0.5 * x) - x / (1 + y * y))
    for n in (8, 1 << 18):                     # the serial and the parallel kernel
        x, y = rng.standard_normal((2, n), dtype=np.float32)
        check(chain(x, y), np.tanh(x * y + 0.5 * x) - x / (1 + y * y))

    def loss(w, b, x):                         # matmul (BLAS helper), reductions, transposes
        h = np.maximum(x @ w + b, 0)
        e = np.exp(h - h.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).max(axis=1).sum()
    w = rng.standard_normal((256, 256), dtype=np.float32) / 16
    b, x = np.zeros(256, np.float32), rng.standard_normal((256, 256), dtype=np.float32)
    value, (gw, gb) = tracejit.jit(tracejit.value_and_grad(loss, argnums=(0, 1)))(w, b, x)
    check(value, loss(w, b, x), 1e-4)
    assert gw.shape == w.shape and np.isfinite(gw).all() and np.abs(gb).sum() > 0

    ints = tracejit.jit(lambda a, d: (a // d, a % d, np.argmax(a)))
    a, d = np.array([7, -7, 7, -7], np.int64), np.array([2, 2, -2, -2], np.int64)
    for g, r in zip(ints(a, d), (a // d, a % d, np.argmax(a))):
        assert (g == r).all()

    # another shape: the last program's entry raises ArgumentMismatch, the call retraces
    check(chain(np.ones(5, np.float32), np.ones(5, np.float32)), np.tanh(1.5) - 0.5)
    s = cache.stats()
    print("compiled", s["compiled"], "refreshed", "numba.np.arraymath" in sys.modules)

    # debug_print's object-mode block is compiled by Numba when it first runs (it refreshes)
    def shout(x):
        tracejit.debug_print("total {}", x.sum())
        return x * 2
    check(tracejit.jit(shout)(np.ones(3, np.float32)), 2.0)
""")


def _run_script(script: str, cache_dir) -> list:
    """The script's output in a new process that compiles kernels with Numba (warm_load.py
    is Numba's warm path)."""
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(cache_dir), TRACEJIT_DIRECT="0")
    return subprocess.run([sys.executable, "-c", script], env=env, text=True,
                          capture_output=True, check=True).stdout.split()


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A cache folder in which WARM_SCRIPT's programs were compiled by a first process."""
    folder = tmp_path_factory.mktemp("warm")
    cold = _run_script(WARM_SCRIPT, folder)
    assert cold[cold.index("compiled") + 1] != "0" and "total" in cold
    return folder


# Numba's warm path (the fallback compiler's; the direct compiler's is pinned below): its
# first process compiles 18 kernels with Numba, 10-17 s of a two-core machine, so in test-slow.
@pytest.mark.slow
def test_a_warm_process_runs_programs_loaded_without_numbas_compiler_setup(warm_cache):
    """codegen/warm_load.py: in a fresh process with a warm cache, programs of every kind
    (parallel kernels, BLAS, reductions, integer ops, debug_print, a raised ArgumentMismatch)
    load and give NumPy's results without Numba refreshing its compiler context."""
    warm = _run_script(WARM_SCRIPT, warm_cache)
    assert warm[warm.index("compiled") + 1:warm.index("refreshed") + 2] == [
        "0", "refreshed", "False"]
    assert warm[warm.index("total") + 1] == "3.0"


@pytest.mark.slow
def test_an_unchecked_numba_version_loads_through_numbas_own_path(warm_cache):
    """warm_load uses Numba internals only on the versions it was checked with; on any other
    the entry is loaded by Dispatcher.compile (after Numba's refresh), with the same results."""
    script = WARM_SCRIPT.replace(
        "import sys, numpy as np, tracejit\n",
        "import sys, numpy as np, tracejit\n"
        "from tracejit.codegen import warm_load\n"
        "warm_load.CHECKED_NUMBA = ('0.0',)\n")
    assert "CHECKED_NUMBA = ('0.0',)" in script
    warm = _run_script(script, warm_cache)
    assert warm[warm.index("compiled") + 1:warm.index("refreshed") + 2] == [
        "0", "refreshed", "True"]


def test_a_new_process_loads_direct_kernels_as_machine_code_and_rebuilds_corrupt_ones(
        direct_cold):
    tmp_path, _ = direct_cold                    # after a first process compiled into it
    compiled, kernels = _run(tmp_path, direct="1")
    assert compiled == 0 and kernels > 0
    objects = sorted(tmp_path.rglob("direct/*.o"))
    assert len(objects) == kernels + 1            # and the Python wrapper they share
    for path in objects:
        path.write_bytes(path.read_bytes()[:-7] + b"garbage")
    compiled, loaded = _run(tmp_path, direct="1")
    assert compiled == kernels and loaded == 0
    compiled, loaded = _run(tmp_path, direct="1")
    assert compiled == 0 and loaded == kernels


def test_machine_code_replaced_by_a_link_to_an_endless_file_is_compiled_again(direct_cold):
    """A cache file is read only if it is a regular file, to its size: a planted link to
    /dev/zero read forever, until the memory ran out."""
    tmp_path, kernels = direct_cold              # after a first process compiled into it
    assert list(tmp_path.rglob("direct/*.o"))
    for path in tmp_path.rglob("direct/*.o"):
        path.unlink()
        path.symlink_to("/dev/zero")
    compiled, loaded = _run(tmp_path, direct="1")
    assert compiled == kernels and loaded == 0


MATMUL_SCRIPT = textwrap.dedent("""
    import numpy as np, tracejit
    from tracejit.codegen import cache
    f = tracejit.jit(lambda x, y: np.tanh(x @ y.T), tiered=False)
    x = np.arange(64 * 48, dtype=np.float32).reshape(64, 48) / 3000
    assert np.allclose(f(x, x), np.tanh(x @ x.T), rtol=1e-5)
    s = cache.stats()
    print("compiled", s["compiled"], "loaded", s["loaded"])
""")


def test_a_warm_process_loads_the_shared_functions_a_direct_kernel_calls(tmp_path):
    """A matmul kernel calls gemm, compiled once as a shared function with its own cache
    file; the kernel's file names it. Without it the kernel is compiled again."""
    from tracejit.codegen.direct import engine

    def run():
        env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path), TRACEJIT_DIRECT="1")
        out = subprocess.run([sys.executable, "-c", MATMUL_SCRIPT], env=env, text=True,
                             capture_output=True, check=True).stdout.split()
        return int(out[out.index("compiled") + 1]), int(out[out.index("loaded") + 1])
    assert run()[0] > 0
    assert run() == (0, 1)
    needs = [d for p in tmp_path.rglob("direct/*.o") for d, _ in engine._read(p)[0]]
    assert needs                               # the matmul kernel's file names gemm's
    for digest in needs:
        next(tmp_path.rglob(f"direct/{digest}.o")).unlink()
    assert run() == (1, 0)
    assert run() == (0, 1)
