"""Regressions for bugs found by differential testing of cond / switch / while_loop /
fori_loop / scan: eager vs jit (interpreter backend: the semantics) vs JAX's rules."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.tracer.control_flow import ControlFlowTypeError


def ijit(f, **kw):
    return tj.jit(f, backend="interpreter", **kw)


# -- scan ----------------------------------------------------------------------------------

def test_scan_of_length_zero_run_eagerly_stacks_empty_ys_as_jit_does():
    def f(xs):
        return tj.scan(lambda c, x: (c + x, {"y": c * x, "n": (x > 0)}), 0.0, xs)
    xs = np.zeros((0,))
    carry, ys = f(xs)                  # eager: ys was None
    jc, jys = ijit(f)(xs)
    assert carry == jc == 0.0
    assert set(ys) == {"y", "n"}
    for k in ys:
        assert ys[k].shape == jys[k].shape == (0,)
        assert ys[k].dtype == jys[k].dtype


def test_scan_of_length_zero_without_xs_run_eagerly_stacks_empty_ys():
    carry, ys = tj.scan(lambda c, _: (c * 2, c[:2]), np.ones(3, np.float32), None, length=0)
    assert ys.shape == (0, 2) and ys.dtype == np.float32
    np.testing.assert_array_equal(carry, np.ones(3))


# -- switch --------------------------------------------------------------------------------

@pytest.mark.parametrize("index, branch", [(2**40, 2), (-2**32 + 1, 0), (2**32 + 1, 2)])
def test_switch_clamps_an_int64_index_beyond_int32_instead_of_wrapping(index, branch):
    branches = [lambda x: x + 1, lambda x: x * 3, lambda x: -x]
    x = np.arange(3.0)
    f = ijit(lambda i, x: tj.switch(i, branches, x))
    want = branches[branch](x)
    np.testing.assert_array_equal(f(np.int64(index), x), want)
    np.testing.assert_array_equal(tj.switch(np.int64(index), branches, x), want)   # eager


# -- weak-typed carries ----------------------------------------------------------------------

@pytest.mark.parametrize("loop", ["fori_loop", "scan", "while_loop"])
def test_a_weak_initial_carry_is_strong_once_the_body_returns_a_strong_value(loop):
    # 0.0 + a float64 array is a float64 array (strong): times float32 stays float64
    def f(x, y):
        if loop == "fori_loop":
            c = tj.fori_loop(0, 3, lambda i, c: c + x, 0.0)
        elif loop == "scan":
            c = tj.scan(lambda c, xi: (c + xi, None), 0.0, np.stack([x, x, x]))[0]
        else:
            c = tj.while_loop(lambda c: c < 3, lambda c: c + x, 0.0)
        return c * y
    x, y = np.float64(1.0), np.ones(2, np.float32)
    want = f(x, y)
    got = ijit(f)(x, y)
    assert want.dtype == got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def test_a_weak_int_carry_the_body_makes_a_weak_float_stays_weak():
    # 0 + 0.5 is a Python float: times float32 is float32 (it came back float64)
    def f(y):
        return tj.fori_loop(0, 3, lambda i, c: c + 0.5, 0) * y
    y = np.ones(2, np.float32)
    got = ijit(f)(y)
    assert f(y).dtype == got.dtype == np.float32
    np.testing.assert_array_equal(got, [1.5, 1.5])


# -- fori_loop -----------------------------------------------------------------------------

@pytest.mark.parametrize("traced_bound", [False, True])
def test_fori_loop_type_errors_name_fori_loop_and_the_users_carry(traced_bound):
    def f(x, n):
        hi = n if traced_bound else 3
        return tj.fori_loop(0, hi, lambda i, c: (c[0], c[1].astype(np.float32)), (x, x))
    with pytest.raises(ControlFlowTypeError) as e:
        ijit(f)(np.ones(2), np.int64(3))
    msg = str(e.value)
    # it said "scan: carry[2]" (or "while_loop: carry[2]"): the index counted fori's own i
    assert "fori_loop: carry[1] changed from f64[2] to f32[2]" in msg
    assert "test_control_flow_found_bugs.py" in msg


def test_fori_loop_structure_error_shows_the_users_carry_not_the_index_pair():
    with pytest.raises(ControlFlowTypeError) as e:
        ijit(lambda x: tj.fori_loop(0, 3, lambda i, c: (c, c), x))(np.ones(2))
    msg = str(e.value)
    assert msg.startswith("tracejit: fori_loop: body_fun returns (*, *), but the carry is *")


@pytest.mark.parametrize("upper", [2.5, 1.75])
def test_fori_loop_with_a_traced_float_upper_bound_runs_int_upper_times(upper):
    # eager: range(0, int(2.5)) runs twice; under jit the loop tested i < 2.5 (three times)
    def f(u, x):
        return tj.fori_loop(0, u, lambda i, c: c + 1.0, x)
    assert f(np.float64(upper), 0.0) == ijit(f)(np.float64(upper), np.float64(0.0)) \
        == max(int(upper), 0)


# -- reverse mode through while_loop ---------------------------------------------------------

def test_grad_through_a_while_loop_whose_cond_alone_reads_the_input_is_zero_through_it():
    # the trip count depends on x, the carries do not: d/dx of the loop is 0, as in JAX
    def f(x):
        n, s = tj.while_loop(lambda c: c[0] < x[0] + 3, lambda c: (c[0] + 1, c[1] * 2.0),
                             (0, 1.5))
        return x.sum() * s
    x = np.array([0.3, -1.2])
    s = f(x) / x.sum()
    np.testing.assert_allclose(tj.grad(f)(x), [s, s])
    np.testing.assert_allclose(ijit(tj.grad(f))(x), [s, s])


def test_grad_ignores_a_while_loop_carry_that_depends_on_the_input_but_is_unused():
    def f(x):
        i, _ = tj.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, x))
        return x.sum() * i
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(ijit(tj.grad(f))(x), [3.0, 3.0])

    def g(x):       # the carry is used: still the error that says what to do instead
        return tj.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, x))[1].sum()
    with pytest.raises(ValueError, match="fori_loop with static"):
        ijit(tj.grad(g))(x)


# -- native loop modules: carries swapped through a nested control op -----------------------

def _native_and_eager_agree(f, *args):
    got = tj.jit(f, tiered=False)(*args)        # the scan / while_loop: one native module
    from tracejit.tracer.pytree import flatten
    for g, w in zip(flatten(got)[0], flatten(f(*args))[0]):
        np.testing.assert_array_equal(g, w)


def test_native_scan_whose_cond_swaps_two_carries():
    # the cond's results were names for the carries' buffers: copying the first into its
    # buffer overwrote the second's source (both carries came out equal)
    def f(x, w):
        def body(c, xi):
            a, b = tj.cond(xi > 1, lambda a, b: (b, a), lambda a, b: (a, w), *c)
            return (a, b), a.sum()
        return tj.scan(body, (x, x * 2), np.arange(5.0))
    _native_and_eager_agree(f, np.arange(3.0), np.full(3, 7.0))


def test_native_while_loop_whose_cond_swaps_two_carries():
    def f(x, n):
        def body(c):
            i, a, b = c
            a, b = tj.cond(i % 2 == 0, lambda: (b, a), lambda: (a + 1, b))
            return i + 1, a, b
        return tj.while_loop(lambda c: c[0] < n, body, (0, x, x * 2))
    _native_and_eager_agree(f, np.arange(3.0), np.int64(5))


def test_native_scan_whose_nested_loop_passes_swapped_carries_through():
    # a nested loop that keeps its carries (or runs zero times) returns its operands
    def f(x):
        def body(c, xi):
            a, b = c
            b, a = tj.fori_loop(0, 2, lambda i, s: s, (b, a))
            return (b, a), xi
        return tj.scan(body, (x, x * 2), np.arange(3.0))
    _native_and_eager_agree(f, np.arange(3.0))


def test_eager_results_never_share_memory_with_operands_as_under_jit():
    x = np.arange(3.0)
    outs = [tj.cond(True, lambda a: a, lambda a: a * 2, x),
            tj.switch(0, [lambda a: a[1:], lambda a: a], x),
            tj.while_loop(lambda c: False, lambda c: c, x),
            tj.fori_loop(0, 0, lambda i, c: c, x),
            tj.scan(lambda c, _: (c, None), x, None, length=0)[0]]
    for out in outs:
        out[...] = -1.0
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])


# -- arrays read by functions held in containers -----------------------------------------

_BRANCH_W = np.array([1.0, 2.0, 3.0])


def _branch_scale(x):
    return x * _BRANCH_W


def _make_branch(a):
    return lambda x: x + a


_BRANCHES = [_branch_scale, _make_branch(np.array([10.0, 20.0, 30.0]))]


@pytest.mark.parametrize("backend", ["interpreter", None])
def test_switch_branches_from_a_global_list_see_their_arrays_change_or_rebound(backend):
    # the branches are neither copied nor guarded (they sit in a list): their global and
    # closed-over arrays were baked in, a change in place or a rebinding silently ignored
    global _BRANCH_W
    saved = _BRANCH_W
    try:
        _BRANCH_W = np.array([1.0, 2.0, 3.0])
        f = tj.jit(lambda i, x: tj.switch(i, _BRANCHES, x),
                   **({"backend": backend} if backend else {}))
        x = np.ones(3)
        np.testing.assert_array_equal(f(np.int32(0), x), [1, 2, 3])
        _BRANCH_W *= 2
        np.testing.assert_array_equal(f(np.int32(0), x), [2, 4, 6])
        _BRANCH_W = _BRANCH_W + 1
        np.testing.assert_array_equal(f(np.int32(0), x), [3, 5, 7])
        _BRANCHES[1].__closure__[0].cell_contents[:] = 0
        np.testing.assert_array_equal(f(np.int32(1), x), [1, 1, 1])
    finally:
        _BRANCH_W = saved
        _BRANCHES[1].__closure__[0].cell_contents[:] = [10, 20, 30]


_WRITTEN = np.zeros(3)


def test_a_loop_body_writing_into_a_global_array_is_refused_not_written_once_while_tracing():
    # the refusal (an array of the enclosing trace) had the trace made again with the global
    # a constant: the write then ran on the user's array, once, while tracing, and the loop
    # added the value it had then at every step ([3, 2, 3], eagerly [4, 2, 3])
    def f(x):
        def body(c, xi):
            _WRITTEN[0] += 1.0
            return c + _WRITTEN, None
        return tj.scan(body, x, np.arange(2.0))[0]
    _WRITTEN[:] = 0
    with pytest.raises(tj.UnsupportedError, match="enclosing trace"):
        ijit(f)(np.arange(1.0, 4.0))
    np.testing.assert_array_equal(_WRITTEN, 0)


class _Stepper:
    def __init__(self):
        self.w = np.array([1.0, 2.0, 3.0])

    def step(self, c, xi):
        return c * self.w + xi, None


def _partial_step(w, c, xi):
    return c * w + xi, None


_STEPPER = _Stepper()
_STEPS = {"method": _STEPPER.step,
          "partial": __import__("functools").partial(_partial_step, np.array([1.0, 2.0, 3.0]))}


@pytest.mark.parametrize("kind", ["method", "partial"])
def test_a_scan_body_held_as_a_bound_method_or_partial_sees_its_array_change(kind):
    # the array a global bound method reads through self, or a partial holds as an argument,
    # was baked into the program: a change in place was not seen
    w = _STEPPER.w if kind == "method" else _STEPS["partial"].args[0]
    w[:] = [1, 2, 3]
    f = ijit(lambda x: tj.scan(_STEPS[kind], x, np.ones(2))[0])
    x = np.ones(3)
    np.testing.assert_array_equal(f(x), (x * w + 1) * w + 1)
    w *= 2
    np.testing.assert_array_equal(f(x), (x * w + 1) * w + 1)
