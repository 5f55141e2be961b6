"""Bugs found by differential fuzzing at sizes that cross the code generator's thresholds
(parallel kernels from plan.PARALLEL_MIN elements, the native hand-off, the result pool, the
"mixed" tier's small groups on NumPy), each pinned by a small fixed program."""
import numpy as np

import tracejit
from tracejit.driver import fusion_of


def _transposed_exp_times_large(x, big):
    # exp(x.T) is broadcast along the outer loop of a large (parallel) kernel: fusion makes it
    # a group of its own, small enough for the mixed tier to run it on NumPy
    return big * np.exp(x.T)[None]


def test_a_small_group_run_on_numpy_hands_a_c_contiguous_array_to_a_parallel_kernel():
    """The mixed tier (and TRACEJIT_NUMPY_GROUP_MAX) runs a small group's ops on NumPy inside
    the compiled entry; np.exp of a transposed view is F-ordered, and that array went to a
    kernel compiled for C layouts: a TypeError while the native hand-off was not ready, then,
    once it was (it passes a pointer and the shape, no strides), silently wrong results."""
    from tracejit.codegen import Plan, Program
    rng = np.random.default_rng(0)
    x, big = rng.standard_normal((40, 50)), rng.standard_normal((100, 50, 40))
    fn = tracejit.jit(_transposed_exp_times_large).lower(x, big).function
    plan = Plan(fusion_of(fn), numpy_max=2048)
    assert plan.parallel and any("G0" in line for line in plan.lines)
    program = Program(plan)
    want = _transposed_exp_times_large(x, big)
    np.testing.assert_allclose(program([x, big])[0], want, rtol=1e-14)
    program.wait_handoff()                 # the native hand-off, prepared in the background
    for _ in range(2):
        np.testing.assert_allclose(program([x, big])[0], want, rtol=1e-14)


def test_the_numpy_tier_returns_c_contiguous_results():
    x = np.random.default_rng(1).standard_normal((30, 20))
    f = tracejit.jit(lambda x: np.exp(x.T), backend="numpy")
    got = f(x)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, np.exp(x.T))
