"""Crashes, hangs and memory errors found by probing tracejit's compiled code with odd
arguments, indices and calling patterns (each probe in a subprocess); each test pins the
behaviour that replaced one."""
import numpy as np
import pytest

import tracejit
from tracejit import lax


def test_an_out_of_bounds_index_in_a_native_loop_body_raises_index_error():
    # The body's gather kernel raised IndexError as a status code that the loop's native
    # driver ignored: the loop went on with the gather's output never written, and returned
    # an uninitialized buffer's bytes (2.3e-309) or the last in-bounds element.
    x = np.arange(10.0)

    @tracejit.jit
    def f(x, k):
        return lax.while_loop(lambda c: c[0] < 100,
                              lambda c: (c[0] + 1, c[1] + x[c[0]]), (k, 0.0))

    for k in (95, 0):
        with pytest.raises(IndexError, match="out of bounds"):
            f(x, k)
    assert f(x, 100)[1] == 0.0

    g = tracejit.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: c + x[i], 0.0))
    assert g(x, 10) == 45.0
    with pytest.raises(IndexError, match="out of bounds"):
        g(x, 11)


def test_a_long_unrolled_chain_is_fused_in_bounded_groups_not_in_quadratic_time():
    # Each join re-checked the whole group: a Python loop unrolled into one chain of n
    # elementwise ops took O(n^2) to fuse (1,000 steps: 54 s to compile; 10,000: over an
    # hour, a hang to the user). Groups now stop at GROUP_OPS_MAX ops (layout ops of
    # constants aside), so fusing is linear; 10,000 steps compile in under two minutes.
    import time

    from tracejit.ir.passes import fuse, optimize
    from tracejit.ir.passes.fusion import GROUP_OPS_MAX

    def step(x):
        for _ in range(400):
            x = x * 1.0001 + 0.5
        return x

    fn = tracejit.make_ir(step)(np.arange(3.0))
    start = time.perf_counter()
    groups = fuse(optimize(fn)).groups
    assert time.perf_counter() - start < 20          # about 1 s; 13 s before, on 2 cores
    assert len(groups) >= 800 // GROUP_OPS_MAX
    assert all(sum(op.opdef.category != "layout" for op in g.ops) <= GROUP_OPS_MAX + 1
               for g in groups)


def test_a_broadcast_argument_too_large_to_copy_is_memory_error_not_a_killed_process(
        monkeypatch):
    # Compiled kernels read a C-contiguous copy of a strided argument: a broadcast view of a
    # scalar, np.broadcast_to(np.float32(1), (2**16, 2**16)), which NumPy sums without
    # memory, was copied into 16 GiB, and Linux's OOM killer ended the process (SIGKILL)
    # while the copy was written. A copy larger than the memory available is now refused
    # before it is made (here the memory available is made small rather than the array huge).
    from tracejit.codegen import program

    f = tracejit.jit(lambda x: x.sum())
    assert f(np.broadcast_to(np.float32(1), (4, 3))) == 12
    monkeypatch.setattr(program, "_available_memory", lambda: 100 << 20)
    huge = np.broadcast_to(np.float32(1), (2**14, 2**14))          # 1 GiB, no memory
    with pytest.raises(MemoryError, match="(?s)broadcast view.*broadcast it inside"):
        f(huge)
    assert f(np.ones((2**10, 2**10), np.float32)) == 2**20       # contiguous: no copy


def test_an_out_of_bounds_index_in_a_numba_compiled_loop_body_raises_index_error(monkeypatch):
    # A body kernel compiled by Numba (where codegen/direct refuses one, or TRACEJIT_DIRECT=0)
    # is called through Numba's C wrapper, which prints an exception as "ignored" and returns
    # 0: the loop went on, once per iteration, and returned a stale element. Body kernels
    # return their exception's code instead of raising it, which the driver raises.
    from tracejit.config import config

    monkeypatch.setattr(config, "direct", False)
    x = np.arange(7.0)
    f = tracejit.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: c + x[i], 0.0))
    assert f(x, 7) == 21.0
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, 9)
