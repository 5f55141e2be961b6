"""Kernels compiled in worker processes (codegen/compile_workers.py): the parent loads them
from the disk cache after checking them, and a worker that fails or lies costs only time."""
import contextlib

import numpy as np
import pytest

import tracejit
from tracejit import config
from tracejit.codegen import cache, compile_workers


def _four_kernels(depth):
    # Four reductions of different shapes and bodies: four kernels no other test compiles
    # (``depth`` sines in each make each test's kernel sources its own).
    def sines(v):
        for _ in range(depth):
            v = np.sin(v)
        return v

    def f(x, y):
        a = sines(np.arctan2(x, y * 1.25)).sum(axis=0)
        b = sines(np.log1p(np.abs(x) * 1.25)).max(axis=1)
        c = sines(np.expm1(y / 1.25)).min(axis=0)
        d = sines(np.arcsinh(x * y + 1.25)).sum(axis=1)
        return a, b, c, d
    return f


def _arguments():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((6, 7)), rng.standard_normal((6, 7)))


def _one_worker(cache_dir: str, monkeypatch):
    """One worker process, compiling into ``cache_dir``; kernels compiled by Numba."""
    monkeypatch.setattr(config, "cache_dir", cache_dir)
    monkeypatch.setattr(config, "compile_workers", 1)
    monkeypatch.setattr(config, "direct", False)     # workers compile Numba's kernels
    monkeypatch.setattr(compile_workers, "MIN_KERNELS", 2)
    for worker in compile_workers._pool.take(1):
        worker.hello()            # started and ready: it takes a kernel as soon as asked


@pytest.fixture(scope="module")
def _shared_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("workers"))


@pytest.fixture
def workers(_shared_cache, monkeypatch):
    """One worker process and a disk cache that this module's tests share, so that the
    worker one test started serves the next (a worker compiles into one folder: a folder of
    each test's own started a process for each test); kernels compiled by Numba
    (direct_workers: by codegen/direct). Each test compiles kernels no other test compiles
    (``_four_kernels``): none of them is in the cache before the test asks for it."""
    _one_worker(_shared_cache, monkeypatch)


def _check(f, args):
    got = tracejit.jit(f, tiered=False)(*args)
    for g, want in zip(got, f(*args)):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


def _numba_files(source: str) -> list:
    return list((cache.cache_dir() / "__pycache__").glob(
        f"{cache.module_name(source, 'k')}.*.nbc"))


def _direct_files(source: str) -> list:
    return list((cache.cache_dir() / "direct").glob("*.o"))


@pytest.mark.parametrize("files", [_direct_files, _numba_files], ids=["direct", "numba"])
def test_machine_code_a_worker_wrote_is_checked_before_it_is_loaded(files, _shared_cache,
                                                                    tmp_path, monkeypatch):
    # The worker compiles, then its cache files are damaged before the parent loads them: the
    # parent finds the checksums wrong and compiles the kernel itself. (_direct_files is every
    # machine code file of the folder, the Python wrapper the kernels share too: an empty
    # folder of the test's own, not the module's.)
    _one_worker(str(tmp_path) if files is _direct_files else _shared_cache, monkeypatch)
    monkeypatch.setattr(config, "direct", files is _direct_files)
    damaged = set()

    def damaging(self, source, sig):
        error = original(self, source, sig)
        for p in set(files(source)) - damaged:
            p.write_bytes(p.read_bytes()[:-3] + b"bad")
            damaged.add(p)
        return error
    original = compile_workers.Worker.compile
    monkeypatch.setattr(compile_workers.Worker, "compile", damaging)
    before = compile_workers.compiled_by_workers()
    _check(_four_kernels(3 if files is _numba_files else 7), _arguments())
    assert damaged and compile_workers.compiled_by_workers() == before


def test_kernels_compiled_by_a_worker_process_give_the_results_of_numpy(workers):
    before = compile_workers.compiled_by_workers()
    _check(_four_kernels(1), _arguments())
    assert compile_workers.compiled_by_workers() > before


def test_a_worker_that_cannot_start_costs_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(config, "compile_workers", 1)
    monkeypatch.setattr(compile_workers, "MIN_KERNELS", 2)

    def no_interpreter(*args, **kwargs):
        raise FileNotFoundError("no such interpreter")
    monkeypatch.setattr(compile_workers.subprocess, "Popen", no_interpreter)
    monkeypatch.setattr(compile_workers._pool, "workers", [])
    before = compile_workers.compiled_by_workers()
    _check(_four_kernels(4), _arguments())
    assert compile_workers.compiled_by_workers() == before


@pytest.fixture
def direct_workers(workers, monkeypatch):
    monkeypatch.setattr(config, "direct", True)


def test_kernels_compiled_directly_by_a_worker_process_give_the_results_of_numpy(
        direct_workers):
    before = compile_workers.compiled_by_workers()
    objects = set((cache.cache_dir() / "direct").glob("*.o"))
    _check(_four_kernels(6), _arguments())
    assert compile_workers.compiled_by_workers() > before
    assert set((cache.cache_dir() / "direct").glob("*.o")) - objects


def test_a_background_compile_leaves_every_kernel_to_the_worker(direct_workers, monkeypatch):
    here = []
    original = compile_workers.compile_all

    def counting(items, compile_here, load_compiled, meanwhile=None):
        def noted(payload, sig):
            here.append(payload)
            return compile_here(payload, sig)
        return original(items, noted, load_compiled, meanwhile)
    monkeypatch.setattr("tracejit.codegen.program.compile_all", counting)
    before = compile_workers.compiled_by_workers()
    with compile_workers.in_background():
        _check(_four_kernels(8), _arguments())
    # this thread compiles nothing: a compile here would share the GIL with the user's steps
    assert here == [] and compile_workers.compiled_by_workers() - before == 4


# A worker dies the same way whichever compiler it runs (compile_workers.Worker.compile): in the
# foreground this thread then compiles the kernels with Numba, in the background directly (four
# more Numba compiles here cost 3 s of a loaded machine's time).
@pytest.mark.parametrize("background,use_direct", [(False, False), (True, True)],
                         ids=["foreground-numba", "background-direct"])
def test_a_worker_that_dies_costs_only_time(background, use_direct, workers, monkeypatch):
    # (in the background this thread leaves the kernels to the worker, then compiles them)
    monkeypatch.setattr(config, "direct", use_direct)

    def dying(self, source, sig):
        asked.append(source)
        self.proc.kill()
        self.proc.wait()
        return original(self, source, sig)
    original, asked = compile_workers.Worker.compile, []
    monkeypatch.setattr(compile_workers.Worker, "compile", dying)
    before = compile_workers.compiled_by_workers()
    with compile_workers.in_background() if background else contextlib.nullcontext():
        _check(_four_kernels(9 if background else 2), _arguments())
    assert asked and compile_workers.compiled_by_workers() == before


@pytest.fixture
def threads_only(tmp_path, monkeypatch):
    """No worker process, an empty cache of this test's own, four compile threads."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(config, "compile_workers", 0)
    monkeypatch.setattr(config, "compile_threads", 4)


def test_kernels_compiled_by_several_threads_at_once_give_the_results_of_numpy(
        threads_only, monkeypatch):
    from tracejit.codegen import direct
    from tracejit.codegen.direct import engine
    inside, most, lock = [0], [0], compile_workers.threading.Condition()
    original = engine._optimized_object

    def counted(ir_text, speed=3):
        # How many threads are in LLVM at once; the first waits for a second, which can come
        # only if lowering the next kernel does not wait for this LLVM. (The bound only keeps
        # a broken build from hanging: a kernel lowers in milliseconds.)
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            lock.notify_all()
            lock.wait_for(lambda: most[0] >= 2, 300)
        try:
            return original(ir_text, speed)
        finally:
            with lock:
                inside[0] -= 1
    monkeypatch.setattr(engine, "_optimized_object", counted)
    before, refused = direct.stats()["compiled"], set(direct.refused())
    for depth in (11, 12):                       # kernels no other test compiles
        _check(_four_kernels(depth), _arguments())
    assert direct.stats()["compiled"] - before >= 8
    assert most[0] >= 2                          # LLVM ran in two threads at once
    assert set(direct.refused()) == refused      # none fell back to Numba (nor failed)


def test_an_error_in_one_compile_thread_is_raised_and_stops_the_others(threads_only):
    done = []

    def compile_here(payload, sig):
        if payload == 3:
            raise ValueError("kernel 3 failed")
        done.append(payload)
    items = compile_workers.deque((None, k, None) for k in range(20))
    with pytest.raises(ValueError, match="kernel 3 failed"):
        compile_workers.compile_in_threads(items, compile_workers.threading.Lock(),
                                           compile_here)
    assert len(done) < 19 and not items


def test_a_module_two_threads_need_at_once_is_compiled_once(tmp_path):
    """The Python wrapper every direct kernel shares was compiled twice in a cold process whose
    first two kernels finished in two threads at once (70 ms of LLVM spent again)."""
    import threading
    import time

    from tracejit.codegen.direct import engine
    made, started = [], threading.Event()
    ir_text = ('define i64 @tracejit_test_once(i64 %a) {\n'
               '  %b = add i64 %a, 41\n  ret i64 %b\n}\n')

    def make():
        made.append(1)
        started.set()
        time.sleep(0.3)                          # the second thread asks meanwhile
        return ir_text, []
    key = f"test-once-{tmp_path}"
    results = []

    def load():
        results.append(engine.load(key, ["tracejit_test_once"], tmp_path, make)[0])
    first = threading.Thread(target=load)
    first.start()
    assert started.wait(60)
    load()
    first.join(60)
    assert len(made) == 1 and len(results) == 2 and results[0] == results[1]
