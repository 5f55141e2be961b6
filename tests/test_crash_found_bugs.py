"""Crashes and hangs found by probing tracejit with processes, threads and odd arguments; each
test pins the behaviour that replaced one."""
import os
import subprocess
import sys
import textwrap

import pytest

# A child forked while a tiered program's background compile is in flight, which then exits
# normally: the child had no compile thread, yet its exit waited for that compile forever.
FORK_DURING_COMPILE = textwrap.dedent("""
    import os, sys, time
    import numpy as np, tracejit
    from tracejit.codegen import compile_workers
    f = tracejit.jit(lambda x: np.tanh(x) * 2 + np.exp(x).sum() + np.cos(x) @ np.sin(x))
    f(np.arange(5.0))                      # starts the background compile
    parent_pool = compile_workers._pool
    pid = os.fork()
    if pid == 0:
        assert compile_workers._pool is not parent_pool   # never the parent's workers
        print("child", float(f(np.arange(5.0)).sum()), flush=True)
        sys.exit(0)                        # a normal exit: atexit handlers run
    deadline = time.time() + 120           # a hang, not a slow machine: the compile is done
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print("child exited", os.waitstatus_to_exitcode(status), flush=True)
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        print("child hung", flush=True)
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_during_a_background_compile_exits(tmp_path):
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path), TRACEJIT_TIERED="1")
    out = subprocess.run([sys.executable, "-c", FORK_DURING_COMPILE], env=env,
                         capture_output=True, text=True, timeout=600)
    assert "child exited 0" in out.stdout, out.stdout + out.stderr
    assert "child 438.55" in out.stdout


def test_broadcast_to_a_negative_size_names_the_line_not_the_ir():
    import numpy as np
    import tracejit

    f = tracejit.jit(lambda x: np.broadcast_to(x, (-1, 3)))
    with pytest.raises(ValueError, match="non-negative") as info:
        f(np.ones(3))
    assert "IRTypeError" not in type(info.value).__name__
    assert "np.broadcast_to(x, (-1, 3))" in str(info.value)


def test_shuffling_a_traced_array_is_refused_as_a_random_draw():
    # NumPy's compiled shuffle swapped the tracer's items at trace time: one permutation,
    # fixed into the program and reused by every call.
    import numpy as np
    import tracejit

    def f(x):
        np.random.shuffle(x)
        return x

    with pytest.raises(tracejit.UnsupportedError, match="random draw") as info:
        tracejit.jit(f)(np.arange(4.0))
    assert "np.random.shuffle(x)" in str(info.value)
    assert np.array_equal(tracejit.jit(lambda x: x * len(x))(np.ones(2)), [2.0, 2.0])


def test_round_and_formatting_of_a_traced_value_say_what_to_use():
    import numpy as np

    import tracejit
    from tracejit.tracer.errors import ConcretizationTypeError
    for fn, hint in ((lambda x: round(x[0]), "np.round"),
                     (lambda x: f"{x[0]:.3f}", "debug_print")):
        with pytest.raises(ConcretizationTypeError, match=hint):
            tracejit.jit(fn)(np.ones(2))
