"""Writing into arrays under tracing has NumPy's semantics (functionalization): ``x[k] = v``,
``x op= y``, ``out=``, ``np.copyto``, ``np.add.at``, ``x.fill``. Views see writes into the array
they view and the other way round; arguments written into are updated in the caller's arrays.

Each case runs eagerly on copies of its inputs, then under jit on each backend (the reference
interpreter, the NumPy tier, compiled kernels) on other copies: the results and the arguments
after the call must be NumPy's.
"""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit.tracer.errors import UnsupportedError

BACKENDS = ["interpreter", "numpy", None]
CASES = []


def case(*make):
    def register(fn):
        CASES.append(pytest.param(fn, make, id=fn.__name__))
        return fn
    return register


def m(*shape):
    return lambda rng: rng.standard_normal(shape)


def ints(*shape, hi=5):
    return lambda rng: rng.integers(0, hi, shape)


@case(m(4, 3), m(3))
def set_row_then_read_a_view(x, v):
    top = x[:2]
    x[1] = v
    return top * 1.0, x.sum()


@case(m(4, 3), m(2, 3))
def slice_plus_equals_is_seen_by_the_root(x, y):
    x[1:3] += y
    return x * 2


@case(m(5, 4))
def write_through_a_transposed_view(x):
    t = x.T
    t[0] = 7.0
    t[1:3, ::2] = -1.0
    return x.copy(), t + 0


@case(m(6), m(3))
def strided_and_negative_step_slices(x, v):
    x[::2] = v
    x[::-3] = 0.5
    return x + 0


@case(m(2, 3, 4))
def reshape_view_shares_memory(x):
    flat = x.reshape(-1)
    flat[5] = 100.0
    x[1, 2, 3] = -5.0
    return flat + 0, x.sum(axis=0)


@case(m(4, 4))
def reshape_of_a_transposed_view_is_a_copy(x):
    c = x.T.reshape(-1)       # NumPy copies: the strides allow no view
    c[0] = 99.0
    return x + 0, c + 0


@case(m(5, 3), ints(4, hi=5), m(4, 3))
def integer_array_assignment_with_traced_indices(x, idx, v):
    x[idx] = v
    return x + 0


@case(m(5, 3), m(3))
def constant_index_array_with_repeats_keeps_the_last_write(x, v):
    x[[1, 3, 1]] = np.stack([v, v * 2, v * 3])
    x[[0, 2], [2, 0]] = 4.0
    return x + 0


@case(m(4, 5))
def traced_boolean_mask_assignment(x):
    x[x < 0] = 0.0
    x[x[:, 0] > 0.5] = -1.0
    return x + 0


@case(m(25, 6), ints(25, hi=6))
def min_char_rnn_softmax_gradient(probs, targets):
    dy = np.copy(probs)
    for t in range(len(targets)):
        dy[t, targets[t]] -= 1
    return dy


@case(m(3, 4), m(3, 4))
def in_place_operators_on_a_local(a, b):
    z = a * 1
    w = z
    z += b
    z *= 2.0
    z -= a
    z /= 3.0
    z **= 2
    return w


@case(m(3, 3), m(3, 3))
def matmul_in_place(a, b):
    c = a + 0
    c @= b
    return c


@case(m(4), m(4), m(4))
def adagrad_updates_arguments(p, g, mem):
    mem += g * g
    p -= 0.1 * g / np.sqrt(mem + 1e-8)
    return (p * p).sum()


@case(m(3, 4))
def clip_with_out_is_the_argument(g):
    r = np.clip(g, -0.5, 0.5, out=g)
    return r is g, g.sum()


@case(m(3, 4), m(3, 4), m(3, 4))
def ufunc_and_reduction_out(a, b, o):
    np.add(a, b, out=o)
    s = np.zeros_like(a[0])
    a.sum(axis=0, out=s)
    np.multiply(o, 2, o)
    return o + s


@case(m(6), ints(5, hi=6), m(5))
def add_at_accumulates_repeats(a, idx, v):
    np.add.at(a, idx, v)
    np.subtract.at(a, [0, 0], 1.0)
    return a + 0


@case(m(3, 3), m(3))
def copyto_fill_and_fill_diagonal(x, v):
    y = np.empty_like(x)
    np.copyto(y, v)
    z = np.zeros_like(v)
    z.fill(2.5)
    np.fill_diagonal(x, 0.0)
    return y, z, x.diagonal() + 0


@case(m(4, 3))
def diagonal_and_broadcast_views_see_later_writes(x):
    d = np.diagonal(x)
    b = np.broadcast_to(x[0], (2, 3))
    x[0, 0] = 10.0
    return d + 0, b + 0


@case(m(3,))
def copies_do_not_see_writes(x):
    c1, c2, c3, c4 = x.copy(), np.copy(x), +x, x.astype(np.float64)
    c5 = np.concatenate([x])
    x[0] = 42.0
    return c1 + c2 + c3 + c4 + c5


@case(m(4), ints(4, hi=3))
def int_array_writes_cast_like_numpy(x, n):
    n[1] = 2.7                  # float into int: truncation, as NumPy's assignment does
    n[2:] = x[2:]
    return n + 0


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b or "compiled")
@pytest.mark.parametrize("fn,make", CASES)
def test_writes_match_numpy_and_update_the_arguments(fn, make, backend):
    rng = np.random.default_rng(1)
    inputs = [mk(rng) for mk in make]
    eager_args = [a.copy() for a in inputs]
    jit_args = [a.copy() for a in inputs]
    expected = fn(*eager_args)
    got = tracejit.jit(fn, backend=backend)(*jit_args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(e, dtype=float),
                                   rtol=1e-12, atol=1e-12)
    for g, e in zip(jit_args, eager_args):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_the_same_jitted_function_writes_back_on_every_call():
    @tracejit.jit
    def step(p, g):
        p -= 0.5 * g
    p = np.ones(3)
    for _ in range(3):
        assert step(p, np.ones(3)) is None
    np.testing.assert_array_equal(p, np.full(3, -0.5))


def test_a_written_argument_returned_is_the_callers_array():
    @tracejit.jit
    def f(x):
        x *= 2
        return x
    x = np.arange(3.0)
    assert f(x) is x
    np.testing.assert_array_equal(x, [0.0, 2.0, 4.0])


def test_writing_into_a_read_only_argument_is_numpys_error():
    f = tracejit.jit(lambda x: x.__setitem__(0, 1.0))
    x = np.zeros(3)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        f(x)


def test_writing_into_one_of_two_arguments_sharing_memory_is_refused():
    def f(a, b):
        a[0] = 1.0
        return b + 0
    x = np.zeros(3)
    with pytest.raises(ValueError, match="shares memory"):
        tracejit.jit(f)(x, x)


def test_writing_into_a_broadcast_view_is_read_only_as_in_numpy():
    def f(x):
        b = np.broadcast_to(x, (2, 3))
        b[0, 0] = 1.0
        return b
    with pytest.raises(ValueError, match="read-only"):
        tracejit.jit(f)(np.zeros(3))


def test_in_place_operator_casting_follows_numpy():
    def f(n, x):
        n += x
        return n
    with pytest.raises(TypeError, match="same_kind"):
        tracejit.jit(f)(np.zeros(3, np.int64), np.ones(3))


def test_in_place_operator_result_must_fit_the_array():
    def f(a, b):
        a += b
        return a
    with pytest.raises(ValueError, match="non-broadcastable output"):
        tracejit.jit(f)(np.zeros(3), np.ones((2, 3)))


def test_grad_through_writes_gives_no_gradient_to_overwritten_elements():
    def loss(w, x):
        h = x * w
        h[1] = 3.0 * w[0]          # h[1] no longer depends on w[1]
        h[2:] += w[2:] ** 2
        return (h * h).sum()
    w = np.array([0.5, -1.0, 2.0, 0.3])
    x = np.array([1.0, 2.0, -1.0, 0.5])
    g = tracejit.grad(loss)(w, x)
    eps = 1e-6
    fd = [(loss(w + eps * e, x) - loss(w - eps * e, x)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_grad_through_integer_array_assignment_matches_finite_differences():
    idx = np.array([3, 0])

    def loss(w, v):
        y = np.tanh(w)
        y[idx] = v * v
        return (y * np.arange(5.0)).sum()
    w, v = np.linspace(-1, 1, 5), np.array([0.7, -0.2])
    gw, gv = tracejit.grad(loss, argnums=(0, 1))(w, v)
    eps = 1e-6
    fw = [(loss(w + eps * e, v) - loss(w - eps * e, v)) / (2 * eps) for e in np.eye(5)]
    fv = [(loss(w, v + eps * e) - loss(w, v - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(gw, fw, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gv, fv, rtol=1e-6, atol=1e-8)


def test_grad_of_a_function_writing_into_its_argument_is_refused():
    def loss(w):
        w[0] = 0.0
        return w.sum()
    with pytest.raises(UnsupportedError, match="writes into its argument w"):
        tracejit.grad(loss)(np.ones(3))


def test_writes_into_a_closed_over_array_of_an_outer_trace_are_refused():
    @tracejit.jit
    def f(x):
        def inner(w):
            x[0] = w.sum()
            return w.sum()
        return tracejit.grad(inner)(x * 1)
    with pytest.raises(UnsupportedError, match="enclosing trace"):
        f(np.ones(3))


def test_the_ir_shows_the_written_argument_as_a_result():
    def f(x):
        x[0] = 1.0
    text = str(tracejit.make_ir(f)(np.zeros(3)))
    assert "scatter" not in text and "update_slice" in text and "return %" in text


def test_running_statistics_stored_into_a_dict_argument_reach_the_callers_dict():
    @tracejit.jit
    def normalize(x, state):
        state["mean"] = 0.9 * state["mean"] + 0.1 * x.mean(axis=0)
        state["steps"] = state["steps"] + 1
        return x - state["mean"]
    eager_state = {"mean": np.zeros(3), "steps": np.int64(0)}
    state = {"mean": np.zeros(3), "steps": np.int64(0)}
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((4, 3))
        np.testing.assert_allclose(normalize(x, state), normalize.fn(x, eager_state))
    np.testing.assert_allclose(state["mean"], eager_state["mean"])
    assert state["steps"] == 3 and normalize.trace_count == 1


def test_grad_of_a_function_storing_into_its_argument_dict_is_refused():
    def loss(p):
        p["w"] = p["w"] * 2
        return p["w"].sum()
    with pytest.raises(UnsupportedError, match=r"stores a new value into its argument p\['w'\]"):
        tracejit.grad(loss)({"w": np.ones(3)})


def test_grad_with_repeated_traced_indices_goes_to_the_last_write_only():
    def loss(v, idx):
        y = np.zeros_like(v[:2]) + v.sum()
        y[idx] = v * v
        return (y * np.array([1.0, 3.0])).sum()
    v, idx = np.array([0.7, -0.2, 0.4]), np.array([1, 0, 1])
    g = tracejit.grad(loss)(v, idx)
    eps = 1e-6
    fd = [(loss(v + eps * e, idx) - loss(v - eps * e, idx)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


class _RunningMean:
    def __init__(self):
        self.mean = np.zeros(3)
        self.buffers = {"count": np.zeros(1)}   # a 0-d one would become a NumPy scalar, static

    def update(self, x):
        self.mean = 0.9 * self.mean + 0.1 * x.mean(axis=0)
        self.buffers["count"] = self.buffers["count"] + 1
        self.mean[0] += 1.0
        return x - self.mean

    jitted_update = tracejit.jit(update)


def test_a_jitted_method_storing_into_self_updates_the_object_as_eagerly():
    eager, jitted = _RunningMean(), _RunningMean()
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((4, 3))
        np.testing.assert_allclose(jitted.jitted_update(x), eager.update(x))
    np.testing.assert_allclose(jitted.mean, eager.mean)
    assert jitted.buffers["count"] == eager.buffers["count"] == 3


# -- slice writes in the compiled program: in place when nothing reads the old value ----------

def _rows_written_in_a_loop(x, v):
    y = np.tanh(x)
    for i in range(1, y.shape[0]):
        y[i, 1:] = y[i - 1, :-1] * 0.5 + v[i, 1:]     # reads the row before, written just now
    y[::2, 0] = 7.0
    return y.sum(axis=1), y


def test_a_loop_of_slice_writes_runs_in_place_with_numpys_results_and_gradient():
    from gradcheck import check_grad
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    f = tracejit.jit(_rows_written_in_a_loop, tiered=False)
    for got, expected in zip(f(x, v), _rows_written_in_a_loop(x.copy(), v.copy())):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    entry = f.lower(x, v).source.split("# entry")[1]
    # each write is an assignment into the one buffer of y, none copies the whole array
    assert entry.count("b0[") == 6 and "copyto(b0" not in entry, entry
    check_grad(lambda x, v: (_rows_written_in_a_loop(x, v)[1] ** 2).sum(), x, v)


def test_an_update_whose_operand_is_read_afterwards_writes_into_a_copy():
    from tracejit.driver import compile_function
    from tracejit.ir import Builder, TensorType, dtypes, interpret, ops
    b = Builder()
    x = b.param(TensorType(dtypes.float64, (4, 3)))
    v = b.param(TensorType(dtypes.float64, (2, 3)))
    y = b.emit(ops.tanh, [x]).result
    z = b.emit(ops.update_slice, [y, v], starts=[1, 0], steps=[2, 1]).result
    fn = b.build([b.emit(ops.add, [y, z]).result])      # the old y is read after the write
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((4, 3)), rng.standard_normal((2, 3))]
    program = compile_function(fn, "numba", tiered=False)
    np.testing.assert_allclose(program(inputs)[0], interpret(fn, inputs)[0], rtol=1e-12)
    assert not program.program.plan._in_place


def test_a_written_argument_is_never_updated_in_place_inside_the_program():
    def f(x):
        x[1:3] = 0.0
        return x * 2
    a = np.arange(5.0)
    jf = tracejit.jit(f, tiered=False)
    out = jf(a)
    np.testing.assert_array_equal(out, [0, 0, 0, 6, 8])
    np.testing.assert_array_equal(a, [0, 0, 0, 3, 4])     # written back, as NumPy does
    assert not jf.lower(np.arange(5.0)).source.split("# entry")[1].count("p0[1:3")


def test_the_numpy_tier_writes_a_dying_array_in_place_but_never_one_a_view_still_reads():
    from tracejit.driver import compile_function
    from tracejit.ir import Builder, TensorType, dtypes, interpret, ops
    b = Builder()
    x = b.param(TensorType(dtypes.float64, (4, 3)))
    v = b.param(TensorType(dtypes.float64, (1, 3)))
    y = b.emit(ops.tanh, [x]).result
    seen = b.emit(ops.transpose, [y], perm=(1, 0)).result     # a NumPy view of y's array here
    z = b.emit(ops.update_slice, [y, v], starts=[0, 0], steps=[1, 1]).result
    w = b.emit(ops.update_slice, [z, v], starts=[2, 0], steps=[1, 1]).result   # z dies: in place
    fn = b.build([w, b.emit(ops.neg, [seen]).result])
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal((4, 3)), rng.standard_normal((1, 3))]
    before = [a.copy() for a in inputs]
    got = compile_function(fn, "numpy")(inputs)
    for g, e in zip(got, interpret(fn, inputs)):
        np.testing.assert_array_equal(g, e)
    for a, a0 in zip(inputs, before):
        np.testing.assert_array_equal(a, a0)


def test_a_box_written_with_the_array_itself_runs_on_the_numpy_tier():
    """update_slice(x, x) (the whole array written with itself) on the NumPy tier: x dies
    there, but it is also the written value, so it is not written in place (the first tier
    had emptied x's slot before reading it as the value: AttributeError on None)."""
    from tracejit.driver import compile_function
    from tracejit.ir import Builder, TensorType, dtypes, interpret, ops
    b = Builder()
    p = b.param(TensorType(dtypes.bool_, (1,)))
    x = b.emit(ops.logical_not, [p]).result
    y = b.emit(ops.update_slice, [x, x], starts=[0], steps=[1]).result
    fn = b.build([b.emit(ops.logical_not, [y]).result])
    arg = np.array([False])
    np.testing.assert_array_equal(compile_function(fn, "numpy", tiered=False)([arg])[0],
                                  interpret(fn, [arg])[0])
