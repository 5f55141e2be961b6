"""jit's contract: pytrees in and out, static arguments, one trace per abstract signature,
weak Python scalars, constants, IR inspection, retrace diagnostics, nesting and methods."""
from __future__ import annotations

import collections
import os
import warnings

import numpy as np
import pytest

import tracejit
from tracejit import RetraceWarning, jit, make_ir

HERE = os.path.basename(__file__)
Params = collections.namedtuple("Params", "w b")


def f32(*shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 10


@pytest.fixture(autouse=True)
def _defaults(monkeypatch):
    """Each test sees the default settings, whatever the environment says."""
    monkeypatch.setattr(tracejit.config, "disable_jit", False)
    monkeypatch.setattr(tracejit.config, "explain_retrace", False)
    monkeypatch.setattr(tracejit.config, "retrace_warn", 8)


# --- pytrees ---------------------------------------------------------------------------------


def test_nested_pytrees_in_and_out_keep_their_structure():
    @jit
    def f(params, batch):
        x, (mask, extra) = batch
        h = x @ params["layers"][0].w + params["layers"][0].b
        return {"h": h, "stats": (h.mean(), [None, h.max(axis=0)]), "mask": mask}

    params = {"layers": [Params(f32(3, 2), np.ones(2, np.float32))]}
    batch = (f32(4, 3), (np.array([True, False, True, True]), None))
    got = f(params, batch)
    want = f.fn(params, batch)
    assert set(got) == {"h", "stats", "mask"}
    assert isinstance(got["stats"], tuple) and isinstance(got["stats"][1], list)
    assert got["stats"][1][0] is None
    np.testing.assert_allclose(got["h"], want["h"], rtol=1e-6)
    np.testing.assert_allclose(got["stats"][1][1], want["stats"][1][1], rtol=1e-6)
    np.testing.assert_array_equal(got["mask"], batch[1][0])


def test_namedtuple_output_is_rebuilt_as_the_same_namedtuple():
    @jit
    def f(p):
        return Params(p.w * 2, p.b + 1)

    out = f(Params(f32(2, 2), f32(2)))
    assert type(out) is Params
    np.testing.assert_allclose(out.w, f32(2, 2) * 2)


def test_dict_key_order_does_not_change_the_cache_entry():
    f = jit(lambda d: d["a"] - d["b"])
    f({"a": f32(2), "b": f32(2)})
    f({"b": f32(2), "a": f32(2)})
    assert f.trace_count == 1


# --- static arguments ------------------------------------------------------------------------


def test_static_argnums_value_can_be_used_as_a_shape():
    @jit(static_argnums=1)
    def f(x, n):
        return np.zeros((n,), x.dtype) + x.reshape(n, -1).sum(axis=1)

    np.testing.assert_allclose(f(f32(6), 2), f32(6).reshape(2, -1).sum(axis=1), rtol=1e-6)


def test_static_argnames_passed_by_keyword_is_static_and_cached():
    @jit(static_argnames="axis")
    def f(x, axis):
        return x.sum(axis=axis)

    assert f(f32(2, 3), axis=0).shape == (3,)
    assert f(f32(2, 3), axis=1).shape == (2,)
    f(f32(2, 3), axis=1)
    assert (f.trace_count, f.cache_size) == (2, 2)


def test_static_argnums_argument_passed_by_keyword_is_still_static():
    @jit(static_argnums=1)
    def f(x, k):
        return x[:k]

    assert f(f32(5), k=2).shape == (2,)
    assert f(f32(5), 3).shape == (3,)


def test_new_static_value_retraces():
    @jit(static_argnames=("mode",))
    def f(x, mode="relu"):
        return np.maximum(x, 0) if mode == "relu" else np.tanh(x)

    f(f32(3), mode="relu")
    f(f32(3), mode="tanh")
    f(f32(3), mode="relu")
    assert (f.trace_count, f.cache_size) == (2, 2)


# --- the cache -------------------------------------------------------------------------------


def test_same_signature_reuses_the_trace():
    f = jit(lambda x, y: x * y + 1)
    for _ in range(3):
        f(f32(2, 3), f32(2, 3))
    f(f32(2, 3) + 5, f32(2, 3))       # new values, same shapes and dtypes
    assert (f.trace_count, f.cache_size) == (1, 1)


@pytest.mark.parametrize("second", [
    pytest.param((f32(4), f32(3)), id="new-shape"),
    pytest.param((np.zeros(3), f32(3)), id="new-dtype"),
    pytest.param(((f32(3),), f32(3)), id="new-structure"),
    pytest.param((f32(3), 2.0), id="scalar-instead-of-array"),
])
def test_changed_signature_retraces(second):
    f = jit(lambda x, y: (x, y))
    f(f32(3), f32(3))
    f(*second)
    assert (f.trace_count, f.cache_size) == (2, 2)


def test_python_scalar_value_change_does_not_retrace():
    """Python scalars are keyed by type (weak), not by value: a new learning rate is free."""
    f = jit(lambda x, lr: x * lr)
    f(f32(3), 0.1)
    f(f32(3), 0.01)
    assert f.trace_count == 1
    np.testing.assert_allclose(f(f32(3), 0.5), f32(3) * np.float32(0.5))


def test_clear_cache_empties_it():
    f = jit(lambda x: x + 1)
    f(f32(2))
    f.clear_cache()
    assert f.cache_size == 0
    f(f32(2))
    assert f.trace_count == 2


# --- weak types and constants ----------------------------------------------------------------


def test_python_float_argument_is_weak_and_keeps_float32():
    f = jit(lambda x, s: x * s + s)
    out = f(f32(3), 2.0)
    assert out.dtype == np.float32
    assert f(f32(3), 2).dtype == np.float32
    assert f(np.arange(3), 2.5).dtype == np.float64       # int64 array * weak float


def test_numpy_scalar_argument_is_strong():
    f = jit(lambda x, s: x * s)
    assert f(f32(3), np.float64(2.0)).dtype == np.float64


def test_python_scalar_alone_returns_numpys_default_dtype():
    assert jit(lambda s: s * 2)(3.0).dtype == np.float64
    assert jit(lambda s: s + 1)(3).dtype == np.int64


def test_closed_over_arrays_and_numbers_become_constants():
    w = np.array([1.0, 2.0, 3.0], np.float32)
    scale = 0.5

    def f(x):
        return x * w * scale

    ir = str(make_ir(f)(f32(3)))
    assert "constant" in ir and "value=0.5" in ir
    assert "f32[3]" in ir and ir.count("%x") >= 1
    assert len(make_ir(f)(f32(3)).params) == 1         # w is not a parameter
    np.testing.assert_allclose(jit(f)(f32(3)), f32(3) * w * np.float32(scale))


# --- looking at the IR -----------------------------------------------------------------------


def test_make_ir_prints_typed_values_and_the_users_file_and_line():
    def f(x, y):
        return np.tanh(x @ y).sum(axis=1)
    line = f.__code__.co_firstlineno + 1

    text = str(make_ir(f)(f32(3, 4), f32(4, 2)))
    assert "func @f(%x: f32[3,4], %y: f32[4,2])" in text
    assert "matmul %x, %y : f32[3,2]" in text
    assert f"{HERE}:{line}" in text


def test_make_ir_honours_static_arguments():
    def f(x, n):
        return x.reshape(n, -1)

    fn = make_ir(f, static_argnums=1)(f32(6), 3)
    assert [str(p.type) for p in fn.params] == ["f32[6]"]
    assert "f32[3,2]" in str(fn)


def test_lower_gives_the_ir_text_of_the_cache_entry():
    f = jit(lambda x: np.exp(x) * 2)
    lowered = f.lower(f32(2, 2))
    assert "exp %x : f32[2,2]" in lowered.ir
    f(f32(2, 2))
    assert f.trace_count == 1          # lower() filled the cache that the call then used


def test_param_names_follow_the_argument_pytree():
    fn = make_ir(lambda params, x: x @ params["w"] + params["b"])(
        {"w": f32(3, 2), "b": f32(2)}, f32(4, 3))
    assert [p.name for p in fn.params] == ["params.b", "params.w", "x"]


# --- retrace diagnostics ---------------------------------------------------------------------


def _retrace_messages(capsys, calls):
    f = jit(lambda x, y=None: x)
    for args in calls:
        f(*args)
    return capsys.readouterr().err


def test_explain_retrace_names_the_argument_and_the_shape_change(monkeypatch, capsys):
    monkeypatch.setattr(tracejit.config, "explain_retrace", True)
    err = _retrace_messages(capsys, [(f32(3),), (f32(4),)])
    assert "retracing" in err and "x: shape (3,) -> (4,)" in err


def test_explain_retrace_names_a_dtype_change(monkeypatch, capsys):
    monkeypatch.setattr(tracejit.config, "explain_retrace", True)
    err = _retrace_messages(capsys, [(f32(3),), (np.zeros(3),)])
    assert "x: dtype float32 -> float64" in err


def test_explain_retrace_names_a_structure_change(monkeypatch, capsys):
    monkeypatch.setattr(tracejit.config, "explain_retrace", True)
    err = _retrace_messages(capsys, [(f32(3), {"a": f32(1)}),
                                     (f32(3), {"a": f32(1), "b": f32(1)})])
    assert "y: pytree structure {'a': *} -> {'a': *, 'b': *}" in err


def test_explain_retrace_names_a_static_value_change(monkeypatch, capsys):
    monkeypatch.setattr(tracejit.config, "explain_retrace", True)
    f = jit(lambda x, k: x[:k], static_argnums=1)
    f(f32(5), 2)
    f(f32(5), 3)
    assert "k: static value 2 -> 3" in capsys.readouterr().err


def test_explain_retrace_is_silent_by_default(capsys):
    _retrace_messages(capsys, [(f32(3),), (f32(4),)])
    assert "retracing" not in capsys.readouterr().err


def test_retrace_warning_after_eight_traces_names_the_changing_argument():
    f = jit(lambda batch, w: batch @ w)
    w = f32(3, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 13):
            f(f32(n, 3), w)
    retrace = [c for c in caught if issubclass(c.category, RetraceWarning)]
    assert len(retrace) == 1                            # warned once, not on every trace
    msg = str(retrace[0].message)
    assert "traced 8 times" in msg and "keeps changing is batch." in msg
    assert retrace[0].filename == __file__             # points at the user's call


# --- nesting, methods, disabling -------------------------------------------------------------


def test_jitted_function_called_inside_another_is_inlined():
    @jit
    def inner(x):
        return np.tanh(x) * 2

    @jit
    def outer(x):
        return inner(x) + inner(x * 3)

    x = f32(4)
    np.testing.assert_allclose(outer(x), np.tanh(x) * 2 + np.tanh(x * 3) * 2, rtol=1e-6)
    assert inner.trace_count == 0                      # traced through, not compiled alone
    assert str(make_ir(outer)(x)).count("tanh") == 2


class Dense:
    def __init__(self, n_in, n_out):
        self.w = f32(n_in, n_out)
        self.b = np.zeros(n_out, np.float32)
        self.n_out = n_out

    @jit
    def __call__(self, x):
        return np.maximum(x @ self.w + self.b, 0).reshape(-1, self.n_out)


def test_method_reads_array_attributes_as_arguments_not_stale_constants():
    layer = Dense(3, 2)
    x = f32(4, 3)
    np.testing.assert_allclose(layer(x), np.maximum(x @ layer.w, 0), rtol=1e-6)
    layer.w = layer.w * -1                              # same shape: no retrace, new values
    np.testing.assert_allclose(layer(x), np.maximum(x @ layer.w, 0), rtol=1e-6)
    Dense(3, 2)(x)                                      # another instance, same signature
    assert Dense.__call__.trace_count == 1


def test_method_non_array_attributes_are_static():
    layer = Dense(3, 2)
    before = Dense.__call__.trace_count
    layer.w, layer.b, layer.n_out = f32(3, 4), np.zeros(4, np.float32), 4
    assert layer(f32(2, 3)).shape == (2, 4)
    assert Dense.__call__.trace_count == before + 1


def test_method_sees_updates_of_arrays_inside_a_module_or_a_mixed_dict_attribute():
    """Arrays held by a sub-module or by a dict beside settings are dynamic too (they were
    frozen into the program); the settings beside them stay static."""
    from tracejit import nn

    class Predictor:
        def __init__(self):
            self.model = nn.Linear(3, 2, rng=np.random.default_rng(0))
            self.cfg = {"scale": np.ones(2, np.float32), "n": 2}

        @jit
        def predict(self, x):
            return self.model(x) * self.cfg["scale"] * self.cfg["n"]

    p, x = Predictor(), f32(1, 3)

    def eager():
        return p.model(x) * p.cfg["scale"] * p.cfg["n"]
    np.testing.assert_allclose(p.predict(x), eager(), rtol=1e-6)
    p.model.weight[:] = 0                        # in place, in the module
    p.model.bias = np.full(2, 5, np.float32)     # rebound, in the module
    p.cfg["scale"][:] = 10                       # in place, in the dict
    np.testing.assert_allclose(p.predict(x), eager(), rtol=1e-6)
    assert Predictor.predict.trace_count == 1
    p.cfg["n"] = 3                               # a static setting: traced again
    np.testing.assert_allclose(p.predict(x), eager(), rtol=1e-6)
    assert Predictor.predict.trace_count == 2


def test_static_values_of_other_types_trace_apart():
    """1, 1.0 and True are equal in Python, not to NumPy's promotion."""
    x = np.array([100, 1], np.int8)
    f = jit(lambda x, k: x * k, static_argnums=1, tiered=False)
    for k in (2.0, 2, (2,), (2.0,)):
        got, want = f(x, k[0] if isinstance(k, tuple) else k), x * (k[0] if isinstance(
            k, tuple) else k)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    g = jit(lambda b, k: b + k, static_argnums=1, tiered=False)
    b = np.array([True, False])
    np.testing.assert_array_equal(g(b, 1), b + 1)
    np.testing.assert_array_equal(g(b, True), b + True)
    assert g(b, True).dtype == np.bool_

    class Scaled:
        def __init__(self, k):
            self.k = k

        @jit
        def f(self, x):
            return x * self.k
    assert Scaled(2.0).f(x).dtype == np.float64 and Scaled(2).f(x).dtype == np.int8


def test_disable_jit_runs_the_python_function_eagerly(monkeypatch):
    monkeypatch.setattr(tracejit.config, "disable_jit", True)
    seen = []

    @jit
    def f(x):
        seen.append(type(x))
        return float(x.sum()) if x.sum() > 0 else 0.0   # concrete Python: fine eagerly

    assert f(f32(3)) == pytest.approx(0.3)
    assert seen == [np.ndarray] and f.trace_count == 0
    assert Dense(3, 2)(f32(1, 3)).shape == (1, 2)       # methods too


def test_output_scalars_are_numpy_scalars_with_numpys_dtype():
    out = jit(lambda x: (x.sum(), x.shape[0] * 2, x.mean() > 0))(f32(3))
    assert out[0].dtype == np.float32 and np.ndim(out[0]) == 0
    assert out[1] == 6 and out[2] == np.True_


def test_fast_path_of_the_last_program_falls_back_on_other_shapes_dtypes_and_layouts():
    """A repeated call skips the lookup and runs the last program, whose compiled code rejects
    arguments that are not its own; each of those must still get the right program."""
    f = jit(lambda x, y: x * 2 + y)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((3, 4), np.float32)
    cases = [(a, b), (a, b), (a[:2], b[:2]), (a, b), (a.astype(np.float64), b),
             (np.asfortranarray(a), b), (a[:, ::-1], b)]
    ro = a.copy()
    ro.flags.writeable = False
    cases.append((ro, b))
    for x, y in cases:
        got = f(x, y)
        want = x * 2 + y
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    # (3, 4) f32, (2, 4) f32, (3, 4) f64: layouts and read-only arrays reuse a program
    assert f.trace_count == 3
