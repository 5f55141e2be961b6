"""Arrays a jitted function reads from its globals and closures are read at every call, as
eagerly: a change made in place between calls (an optimizer's ``W -= lr * dW``) is seen
(tracer/external_arrays.py)."""
import numpy as np
import pytest

import tracejit
from tracejit.tracer.errors import UnsupportedError

W = np.ones((3, 3))
B = np.zeros(3)
SCALE = np.array(2.0)
FROZEN = np.arange(3.0)
FROZEN.flags.writeable = False
FLAGS = np.array([1, 0, 1])
WF = np.asfortranarray(np.arange(9.0).reshape(3, 3))


def _reset():
    W[...] = 1.0
    B[...] = 0.0
    SCALE[...] = 2.0


def layer(x):
    return np.tanh(x @ W + B)


@tracejit.jit
def predict(x):
    return layer(x) * SCALE


def test_a_global_array_changed_in_place_is_seen_by_the_next_call():
    _reset()
    x = np.linspace(-1, 1, 3)
    first = predict(x)
    np.testing.assert_allclose(first, np.tanh(x @ W + B) * 2.0)
    W[...] *= 0.5
    B[0] = 1.0
    SCALE[...] = 3.0                       # a 0-d array, changed in place
    np.testing.assert_allclose(predict(x), np.tanh(x @ W + B) * 3.0)
    assert predict.trace_count == 1        # read at the call, not traced again
    _reset()


def test_views_and_values_computed_from_a_global_array_follow_its_changes():
    _reset()

    @tracejit.jit
    def f(x):
        return x @ W.T[:, ::-1] + (W * 2).sum() + np.linalg.norm(W[0])

    x = np.arange(3.0)
    eager = lambda: x @ W.T[:, ::-1] + (W * 2).sum() + np.linalg.norm(W[0])  # noqa: E731
    np.testing.assert_allclose(f(x), eager())
    W[0, 1] = 7.0
    np.testing.assert_allclose(f(x), eager())
    _reset()


def test_min_char_rnn_style_training_loop_on_global_weights_learns():
    """The classic plain-NumPy pattern: the loss reads global weights, the loop updates them
    in place. The jitted loss must see each update, as the eager one does."""
    rng = np.random.default_rng(0)
    g = {"Wxh": rng.standard_normal((4, 8)) * 0.1, "Why": rng.standard_normal((8, 2)) * 0.1}
    Wxh, Why = g["Wxh"], g["Why"]
    xs, ys = rng.standard_normal((16, 4)), rng.standard_normal((16, 2))

    def loss_and_grads(xs, ys):
        h = np.tanh(xs @ Wxh)
        err = h @ Why - ys
        dWhy = h.T @ err / len(xs)
        dWxh = xs.T @ ((err @ Why.T) * (1 - h * h)) / len(xs)
        return (err ** 2).mean(), dWxh, dWhy

    jitted = tracejit.jit(loss_and_grads)
    losses = []
    for _ in range(5):
        eager = loss_and_grads(xs, ys)
        loss, dWxh, dWhy = jitted(xs, ys)
        np.testing.assert_allclose(loss, eager[0], rtol=1e-12)
        losses.append(loss)
        Wxh -= 0.5 * dWxh                  # in place, on the closure's arrays
        Why -= 0.5 * dWhy
    assert losses[-1] < losses[0]
    assert jitted.trace_count == 1


def test_grad_and_vjp_outside_jit_see_a_global_array_changed_in_place():
    _reset()
    gradient = tracejit.grad(lambda x: (layer(x) * SCALE).sum())
    x = np.array([0.1, -0.2, 0.3])
    before = gradient(x)
    W[...] = 2.0
    after = gradient(x)
    eps = 1e-6
    numeric = np.array([((np.tanh((x + eps * e) @ W + B) * 2).sum()
                         - (np.tanh((x - eps * e) @ W + B) * 2).sum()) / (2 * eps)
                        for e in np.eye(3)])
    np.testing.assert_allclose(after, numeric, rtol=1e-6)
    assert not np.allclose(before, after)
    out, pullback = tracejit.vjp(layer, x)
    np.testing.assert_allclose(out, np.tanh(x @ W + B))
    _reset()


def test_jit_of_grad_and_a_scan_body_see_a_global_array_changed_in_place():
    _reset()

    @tracejit.jit
    def step(x):
        def body(h, _):
            return np.tanh(h @ W), None
        h, _ = tracejit.scan(body, x, None, length=2)
        return h + tracejit.grad(lambda v: (v @ W).sum())(x)

    def eager(x):
        h = np.tanh(np.tanh(x @ W) @ W)
        return h + W.sum(axis=1)

    x = np.array([0.5, -0.5, 0.25])
    np.testing.assert_allclose(step(x), eager(x))
    W[1] = -1.0
    np.testing.assert_allclose(step(x), eager(x))
    _reset()


def test_a_jitted_helper_reading_a_global_is_followed():
    _reset()
    helper = tracejit.jit(lambda x: x * B)

    @tracejit.jit
    def f(x):
        return helper(x) + 1

    x = np.ones(3)
    np.testing.assert_allclose(f(x), x * B + 1)
    B[...] = [1.0, 2.0, 3.0]
    np.testing.assert_allclose(f(x), x * B + 1)
    _reset()


def test_python_code_reading_a_global_arrays_values_still_traces_with_it_constant():
    @tracejit.jit
    def f(x):
        if FLAGS[0] > 0:                  # Python needs the value: traced as before
            return x + FLAGS.sum()
        return x

    np.testing.assert_allclose(f(np.zeros(3)), np.full(3, 2.0))


def test_writing_into_a_global_array_inside_jit_is_refused_with_what_to_do():
    _reset()

    @tracejit.jit
    def f(x):
        B[0] = x.sum()
        return x

    with pytest.raises(UnsupportedError, match="(?s)writes into global B.*pass the array as an argument"):
        f(np.ones(3))
    assert (B == 0).all()


def test_read_only_and_unused_global_arrays_are_not_parameters():
    _reset()

    @tracejit.jit
    def f(x):
        _ = W.shape                          # read for its shape only
        return x + FROZEN

    lowered = f.lower(np.ones(3))
    assert len(lowered.function.params) == 1, lowered.ir


def test_a_global_array_that_is_not_c_contiguous_is_read_with_its_layout():
    @tracejit.jit
    def f(x):
        return x @ WF

    x = np.arange(3.0)
    np.testing.assert_allclose(f(x), x @ WF)
    WF[2, 0] = 100.0
    np.testing.assert_allclose(f(x), x @ WF)
    np.testing.assert_allclose(f(x), x @ WF)


_ZEROS = np.zeros(3)


def test_a_copy_of_a_global_array_written_with_traced_values_is_a_traced_array():
    """Was refused ("a NumPy array from outside cannot hold a traced value"): the global is
    traced now, so its copy is too."""
    def f(x):
        h = _ZEROS.copy()
        h[0:2] = x[:2]
        return np.sum(x, out=h[2:3].reshape(())) + h

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(tracejit.jit(f)(x), f(x))


MODES = np.array([1, 0])
TABLE = np.arange(5000.0)


def test_a_small_global_array_python_reads_traces_again_when_changed_in_place():
    """Python needs MODES's values, so it stays a constant of the trace: a change in place is
    seen by comparing its contents at the next call; the large TABLE is still an input."""
    @tracejit.jit
    def f(x):
        if MODES[0] > 0:
            return x + TABLE[:3]
        return x - TABLE[:3]

    x = np.ones(3)
    np.testing.assert_allclose(f(x), x + TABLE[:3])
    TABLE[:3] = -1.0
    np.testing.assert_allclose(f(x), x - 1.0)
    assert f.trace_count == 1
    MODES[0] = 0
    np.testing.assert_allclose(f(x), x + 1.0)
    assert f.trace_count == 2
    MODES[0] = 1
    TABLE[:3] = np.arange(3.0)


def test_vjp_outside_jit_traces_again_when_a_small_constant_array_changes():
    def f(x):
        return x * 2.0 if MODES[1] == 0 else x * 3.0

    x = np.ones(2)
    _, pullback = tracejit.vjp(f, x)
    np.testing.assert_allclose(pullback(np.ones(2))[0], [2.0, 2.0])
    MODES[1] = 1
    _, pullback = tracejit.vjp(f, x)
    np.testing.assert_allclose(pullback(np.ones(2))[0], [3.0, 3.0])
    MODES[1] = 0


# -- found by review ---------------------------------------------------------------------------
_RW = np.ones(2)


def _power(x, n):
    return x if n == 0 else _power(x * _RW, n - 1)


def test_a_recursive_helper_reads_the_global_array_at_every_level():
    """The recursive call went to the original function, whose _RW was the traced constant:
    after _RW changed in place, only the outermost level saw the new values."""
    f = tracejit.jit(lambda x: _power(x, 3))
    x = np.ones(2)
    np.testing.assert_allclose(f(x), x)
    _RW[...] = 2.0
    try:
        np.testing.assert_allclose(f(x), [8.0, 8.0])
    finally:
        _RW[...] = 1.0


def test_a_written_argument_sharing_memory_with_a_global_array_is_refused():
    """f(W) with f writing into its argument and reading the global W: the trace took them as
    separate arrays and gave another result than NumPy's, silently."""
    g = np.ones(3)

    def f(x):
        x[0] = 5.0
        return x + g

    with pytest.raises(ValueError, match="shares memory with g .closed over by f."):
        tracejit.jit(f)(g)


_LOG: dict = {}


def test_globals_and_exec_in_a_jitted_function_write_the_modules_globals():
    """The function's copy had globals of its own: globals()[...] = v and exec wrote there."""
    def f(x):
        globals()["_LOG"] = {"seen": 1}
        exec("_LOG['exec'] = 2")
        return x * _RW

    tracejit.jit(f)(np.ones(2))
    assert _LOG == {"seen": 1, "exec": 2}


def test_a_class_body_in_a_jitted_function_reads_the_global_array_at_every_call():
    """A class body reads globals with LOAD_NAME, which was not followed: a stale constant."""
    def f(x):
        class K:
            w = _RW * 2
        return x + K.w

    j = tracejit.jit(f)
    x = np.zeros(2)
    np.testing.assert_allclose(j(x), f(x))
    _RW[...] = 3.0
    try:
        np.testing.assert_allclose(j(x), f(x))
    finally:
        _RW[...] = 1.0


def test_isinstance_of_a_global_array_is_true_under_jit():
    """isinstance(W, np.ndarray) saw the tracer: False, so the jitted function took the other
    branch than the eager one."""
    def f(x):
        if isinstance(_RW, np.ndarray) and type(_RW) is np.ndarray:
            return x + _RW
        return x

    j = tracejit.jit(f)
    x = np.zeros(2)
    np.testing.assert_allclose(j(x), f(x))
    _RW[...] = 4.0
    try:
        np.testing.assert_allclose(j(x), f(x))     # left a constant, checked at every call
    finally:
        _RW[...] = 1.0


_CPLX = np.array([1 + 1j, 2j])


def test_a_small_global_array_of_an_unsupported_dtype_traces_again_when_changed():
    """A complex (or object) global used only on the Python side stayed a constant that was
    never checked: the next call used its old values."""
    def f(x):
        return x + np.abs(_CPLX)

    j = tracejit.jit(f)
    x = np.zeros(2)
    np.testing.assert_allclose(j(x), f(x))
    _CPLX[0] = 3 + 4j
    np.testing.assert_allclose(j(x), f(x))


def test_a_global_memmap_changed_in_place_is_seen(tmp_path):
    """An np.memmap (an ndarray subclass) was left a constant, never checked: stale values."""
    mm = np.memmap(tmp_path / "w.dat", dtype=np.float64, mode="w+", shape=(3,))
    mm[:] = 1.0

    def f(x):
        return x + mm

    j = tracejit.jit(f)
    x = np.zeros(3)
    np.testing.assert_allclose(j(x), f(x))
    mm[0] = 4.0
    np.testing.assert_allclose(j(x), f(x))
    del mm


_COUNT = np.array([3.0])


def test_python_code_catching_the_error_for_a_global_arrays_value_takes_the_eager_path():
    """int(_COUNT[0]) on the lifted array raised, the function's own except took its
    fallback, and the trace kept it: another result than NumPy's, silently."""
    def f(x):
        try:
            n = int(_COUNT[0])
        except TypeError:
            n = 0
        return x + n

    j = tracejit.jit(f)
    x = np.zeros(2)
    np.testing.assert_allclose(j(x), f(x))
    _COUNT[0] = 5.0
    try:
        np.testing.assert_allclose(j(x), f(x))
    finally:
        _COUNT[0] = 3.0


EMBEDDING = np.arange(12.0).reshape(4, 3)


def test_a_global_table_indexed_by_traced_values_is_read_at_every_call():
    """Was a "cannot convert a traced value" error: the table is traced now, so a gather."""
    @tracejit.jit
    def lookup(ids):
        return EMBEDDING[ids].sum(axis=0)

    ids = np.array([0, 3])
    np.testing.assert_allclose(lookup(ids), EMBEDDING[ids].sum(axis=0))
    EMBEDDING[3] = 100.0
    np.testing.assert_allclose(lookup(ids), EMBEDDING[ids].sum(axis=0))


# -- arrays held in attributes and containers ---------------------------------------------------
class _Config:
    pass


CFG = _Config()
CFG.scale = np.array([2.0, 2.0, 2.0])
CFG.flags = np.array([1.0])
PARAMS = {"W": np.ones(3)}


class _Layer:
    def __init__(self, n):
        self.W = np.ones((n, n))
        self.b = np.zeros(n)


NET = [_Layer(3), _Layer(3)]


def _net_loss(x):
    for layer_ in NET:
        x = np.tanh(x @ layer_.W + layer_.b)
    return x.sum()


def test_arrays_in_attributes_and_dicts_changed_in_place_are_seen_by_the_next_call():
    """They were baked into the trace as constants: ``cfg.scale[0] = 5`` or
    ``params["W"] *= 3`` between calls gave the old result silently."""
    CFG.scale[...] = 2.0
    PARAMS["W"][...] = 1.0
    f = tracejit.jit(lambda x: x * CFG.scale + PARAMS["W"])
    x = np.arange(3.0)
    np.testing.assert_allclose(f(x), x * 2.0 + 1.0)
    CFG.scale[0] = 5.0
    PARAMS["W"] *= 3
    np.testing.assert_allclose(f(x), x * CFG.scale + PARAMS["W"])
    assert f.trace_count == 1             # parameters, not a trace per change
    assert "constant" not in str(f.lower(x).ir).split("{", 1)[1]


def test_arrays_of_objects_in_a_global_list_are_read_at_every_call_by_jit_grad_and_vjp():
    """A model kept as a list of layer objects, updated in place by a plain-NumPy optimizer:
    the jitted gradient follows it (finite differences of the eager loss)."""
    for layer_ in NET:
        layer_.W[...] = 1.0
        layer_.b[...] = 0.0
    x = np.array([0.1, -0.2, 0.3])
    g = tracejit.jit(tracejit.grad(_net_loss))
    g(x)
    NET[0].W *= 0.5
    NET[1].b += 1.0
    eps = 1e-6
    fd = [(_net_loss(x + eps * e) - _net_loss(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g(x), fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(tracejit.grad(_net_loss)(x), fd, rtol=1e-6, atol=1e-9)
    out, _ = tracejit.vjp(_net_loss, x)
    NET[0].b -= 0.25
    out2, _ = tracejit.vjp(_net_loss, x)
    np.testing.assert_allclose(out2, _net_loss(x))
    assert out2 != out


def test_a_small_array_attribute_python_reads_traces_again_when_changed_in_place():
    """``if cfg.flags[0] > 0`` runs on the array itself (no op takes it): the branch is baked,
    so the array's contents are checked at every call."""
    CFG.flags[...] = 1.0
    CFG.scale[...] = 1.0

    @tracejit.jit
    def f(x):
        if CFG.flags[0] > 0:
            return x * CFG.scale
        return x - CFG.scale
    x = np.ones(3)
    np.testing.assert_allclose(f(x), x)
    CFG.flags[0] = -1.0
    np.testing.assert_allclose(f(x), x - 1.0)
    CFG.scale[...] = 7.0
    np.testing.assert_allclose(f(x), x - 7.0)
    assert f.trace_count == 2


def test_an_object_a_function_closes_over_has_its_arrays_read_at_every_call():
    def make():
        state = _Config()
        state.w = np.ones(2)
        return state, tracejit.jit(lambda x: (x * state.w).sum())
    state, f = make()
    assert f(np.ones(2)) == 2.0
    state.w[1] = 4.0
    assert f(np.ones(2)) == 5.0


# -- arrays rebound between calls ---------------------------------------------------------------
W_RB = np.ones(3)


def _scaled(x):
    return x * W_RB


def test_a_global_array_rebound_to_one_of_the_same_kind_is_passed_without_tracing_again():
    """``W = W - lr * dW`` in a plain-NumPy training loop traced again at every step (a
    RetraceWarning after eight); the new array is passed where the program takes the old."""
    global W_RB
    W_RB = np.ones(3)
    f = tracejit.jit(_scaled)
    x = np.arange(3.0)
    for step in range(12):
        np.testing.assert_allclose(f(x), x * W_RB)
        W_RB = W_RB - 0.5 * x                 # a new array each step
    assert f.trace_count == 1
    W_RB = np.ones(4)                         # another shape: traced again
    np.testing.assert_allclose(f(np.arange(4.0)), np.arange(4.0))
    W_RB = np.ones(4, np.float32)             # another dtype: traced again
    assert f(np.arange(4.0)).dtype == np.float64 and f.trace_count == 3


def test_a_guarded_attribute_array_rebound_is_passed_and_a_python_read_one_traces_again():
    box = _Config()
    box.w = np.ones(2)
    box.flag = np.array([1.0])
    f = tracejit.jit(lambda x: x + box.w)
    g = tracejit.jit(lambda x: x * 2 if box.flag[0] > 0 else x * 3)
    assert f(np.ones(2)).tolist() == [2.0, 2.0] and g(np.ones(2)).tolist() == [2.0, 2.0]
    box.w = box.w * 5
    box.flag = np.array([-1.0])
    assert f(np.ones(2)).tolist() == [6.0, 6.0] and f.trace_count == 1
    assert g(np.ones(2)).tolist() == [3.0, 3.0] and g.trace_count == 2
