"""Hangs and crashes found by probing the kernel cache and compiles with threads, processes,
signals and damaged cache folders; each test pins the behaviour that replaced one."""
import os
import threading

import numpy as np
import pytest

import tracejit
from tracejit.codegen import cache, cache_folder, direct


def _in_thread(call, timeout=600):
    """``call()`` in a thread; its result, or the error it raised; fails on a hang (the bugs
    these tests pin down hung for ever; the limit is a hang guard, far above any compile)."""
    out = {}

    def run():
        try:
            out["value"] = call()
        except BaseException as e:      # noqa: BLE001 (re-raised in the test's thread)
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "hung"
    if "error" in out:
        raise out["error"]
    return out["value"]


# A KeyboardInterrupt (Ctrl-C) during a first call's compile left the kernel marked as being
# built by codegen/direct: every later call of the function (or of any function with that
# kernel) waited forever for a build that had been abandoned.
def test_a_compile_interrupted_by_ctrl_c_compiles_on_the_next_call(cache_root, monkeypatch):
    monkeypatch.setattr(tracejit.config, "direct", True)
    real, interrupted = direct._compile, []

    def ctrl_c_once(source, sig, namespace, folder, version, compile=True):
        if compile and not interrupted:     # while compiling, not looking on the disk
            interrupted.append(True)
            raise KeyboardInterrupt
        return real(source, sig, namespace, folder, version, compile)

    monkeypatch.setattr(direct, "_compile", ctrl_c_once)
    f = tracejit.jit(lambda x: np.tanh(x * 3.0625) + 0.8125, tiered=False)
    x = np.linspace(-1, 1, 7)
    with pytest.raises(KeyboardInterrupt):
        f(x)
    assert interrupted
    np.testing.assert_allclose(_in_thread(lambda: f(x)), np.tanh(x * 3.0625) + 0.8125)


# A FIFO where the cache keeps a file (a generated module, its checksums, Numba's index or
# machine code) made every later process hang for ever when it opened it to check it, and a
# link to /dev/zero read until the memory ran out (not tested here: it takes the test process
# down); the direct compiler's files were already read only when regular, to their size.
@pytest.mark.parametrize("kind", ["_tracejit_*.py", "_tracejit_*.sums",
                                  "__pycache__/_tracejit_*.nbi", "__pycache__/_tracejit_*.nbc"])
def test_a_fifo_in_place_of_a_cache_file_is_compiled_again_not_waited_on(cache_root,
                                                                         monkeypatch, kind):
    monkeypatch.setattr(tracejit.config, "direct", False)      # Numba's cache files
    x = np.linspace(-1, 1, 5, dtype=np.float32)

    def run():
        return tracejit.jit(lambda x: x * 1.5 - 0.25, tiered=False)(x)

    np.testing.assert_array_equal(run(), x * 1.5 - 0.25)
    fifos = sorted((cache_root / cache.VERSION).glob(kind))
    assert fifos
    for p in fifos:
        p.unlink()
        os.mkfifo(p)
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setattr(cache_folder, "_decided", {})
    try:
        np.testing.assert_array_equal(_in_thread(run), x * 1.5 - 0.25)
    finally:
        for p in fifos:               # release a reader that hangs (before the fix)
            try:
                os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass


# Environment settings tracejit did not understand: TRACEJIT_RETRACE_WARN=abc (or
# TRACEJIT_NUMPY_GROUP_MAX=x) made `import tracejit` fail with int()'s message, which named no
# variable; TRACEJIT_TIERED=maybe, TRACEJIT_DISABLE_JIT=maybe (which turned the jit off),
# TRACEJIT_DUMP=nonsense and TRACEJIT_COMPILE_WORKERS=abc were taken silently.
@pytest.mark.parametrize("name, value, field, default", [
    ("TRACEJIT_RETRACE_WARN", "abc", "retrace_warn", 8),
    ("TRACEJIT_NUMPY_GROUP_MAX", "x", "numpy_group_max", 0),
    ("TRACEJIT_TIERED", "maybe", "tiered", True),
    ("TRACEJIT_DISABLE_JIT", "maybe", "disable_jit", False),
    ("TRACEJIT_COMPILE_WORKERS", "abc", "compile_workers", None),
    ("TRACEJIT_DUMP", "ir,nonsense", "dump", frozenset({"ir", "nonsense"})),
])
def test_an_environment_setting_not_understood_is_named_in_a_warning_and_the_default_used(
        monkeypatch, name, value, field, default):
    from tracejit.config import Config, ConfigWarning
    monkeypatch.setenv(name, value)
    with pytest.warns(ConfigWarning, match=name) as record:
        got = getattr(Config(), field)
    assert got == default
    assert len(record) == 1 and value.split(",")[-1] in str(record[0].message)


def test_environment_settings_tracejit_understands_give_no_warning(monkeypatch):
    import warnings
    from tracejit.config import Config
    for name, value in (("TRACEJIT_TIERED", "0"), ("TRACEJIT_DISABLE_JIT", "Yes"),
                        ("TRACEJIT_DUMP", "passes+ir, tiers"), ("TRACEJIT_RETRACE_WARN", ""),
                        ("TRACEJIT_COMPILE_WORKERS", "2")):
        monkeypatch.setenv(name, value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = Config()
    assert (c.tiered, c.disable_jit, c.dump, c.retrace_warn, c.compile_workers) == (
        False, True, frozenset({"passes+ir", "tiers"}), 8, 2)
