"""Strings, bytes and enum members inside arguments are static values (issue 13): part of the
cache key by value, handed to the function as themselves, as torch.compile treats them. Real
code branches on them in Python (cs231n's ``bn_param["mode"] == "train"``)."""
from __future__ import annotations

import enum
import functools

import numpy as np
import pytest

import tracejit as tj
from gradcheck import EPS

numpy_tier = functools.partial(tj.jit, backend="numpy")


def batchnorm(x, bn_param):
    """cs231n's batchnorm_forward, cut down: branches on a str, writes into the dict."""
    eps = bn_param.get("eps", 1e-5)
    if bn_param["mode"] == "train":
        mean, var = x.mean(axis=0), x.var(axis=0)
        m = bn_param["momentum"]
        bn_param["running_mean"] = m * bn_param["running_mean"] + (1 - m) * mean
        bn_param["running_var"] = m * bn_param["running_var"] + (1 - m) * var
    elif bn_param["mode"] == "test":
        mean, var = bn_param["running_mean"], bn_param["running_var"]
    else:
        raise ValueError(f"invalid mode {bn_param['mode']!r}")
    return (x - mean) / np.sqrt(var + eps)


def _bn_param(mode):
    return {"mode": mode, "eps": 1e-5, "momentum": 0.9,
            "running_mean": np.zeros(3), "running_var": np.ones(3)}


def _x(seed=0):
    return np.random.default_rng(seed).standard_normal((5, 3))


def test_same_string_reuses_the_trace_a_new_one_traces_its_branch():
    f = numpy_tier(batchnorm)
    got_p, want_p = _bn_param("train"), _bn_param("train")
    for seed in range(3):
        x = _x(seed)
        np.testing.assert_allclose(f(x, got_p), batchnorm(x, want_p), rtol=1e-12)
    assert f.trace_count == 1
    for k in ("running_mean", "running_var"):          # the writes reached the caller's dict
        np.testing.assert_allclose(got_p[k], want_p[k], rtol=1e-12)
    got_p["mode"] = want_p["mode"] = "test"
    x = _x(7)
    np.testing.assert_allclose(f(x, got_p), batchnorm(x, want_p), rtol=1e-12)
    assert f.trace_count == 2
    got_p["mode"] = "train"                            # back to the first trace
    f(x, got_p)
    assert f.trace_count == 2 and f.cache_size == 2


def test_the_function_gets_the_string_itself_and_no_parameter_stands_for_it():
    seen = []

    def f(x, p):
        seen.append(p["mode"])
        return x * 2.0

    lowered = numpy_tier(f).lower(np.ones(3), {"mode": "train", "w": np.ones(3)})
    assert seen == ["train"] and type(seen[0]) is str
    assert [p.name for p in lowered.function.params] == ["x", "p.w"]
    assert "train" not in lowered.ir


def test_a_string_argument_need_not_be_marked_static():
    f = numpy_tier(lambda x, act: np.tanh(x) if act == "tanh" else np.maximum(x, 0.0))
    x = _x()
    np.testing.assert_allclose(f(x, "tanh"), np.tanh(x))
    np.testing.assert_allclose(f(x, act="relu"), np.maximum(x, 0.0))
    assert f(x, "tanh").shape == x.shape and f.trace_count == 2


@pytest.mark.parametrize("container", ["list", "tuple", "nested dict"])
def test_strings_inside_lists_tuples_and_dicts(container):
    def f(layers):
        out = layers[0][1]
        for act, w in layers[1:]:
            out = np.tanh(out * w) if act == "tanh" else np.maximum(out * w, 0.0)
        return out

    w = [np.linspace(-1.0, 1.0, 4) * k for k in (1.0, 2.0, 3.0)]
    acts = ["input", "tanh", "relu"]
    if container == "list":
        layers = [[a, v] for a, v in zip(acts, w)]
    elif container == "tuple":
        layers = tuple((a, v) for a, v in zip(acts, w))
    else:
        layers = {i: {0: a, 1: v} for i, (a, v) in enumerate(zip(acts, w))}
        layers = [layers[i] for i in range(3)]
    jf = numpy_tier(f)
    np.testing.assert_allclose(jf(layers), f(layers))
    assert jf.trace_count == 1


def test_storing_a_new_string_into_an_argument_reaches_the_caller():
    def set_eval(x, state):
        state["mode"] = "eval"
        state["calls"] = state["calls"] + 1.0
        return x

    state = {"mode": "train", "calls": np.zeros(())}
    numpy_tier(set_eval)(np.ones(2), state)
    assert state["mode"] == "eval" and state["calls"] == 1.0


class Mode(enum.Enum):
    TRAIN = "train"
    EVAL = "eval"


class Small(enum.IntEnum):
    ONE = 1


class Other(enum.IntEnum):
    FIRST = 1


def test_bytes_and_enum_members_are_static_by_value_and_type():
    seen = []

    def f(x, key):
        seen.append(key)
        return x + 1.0 if key is Small.ONE or key in (Mode.TRAIN, b"up") else x - 1.0

    jf = numpy_tier(f)
    x = np.zeros(2)
    assert jf(x, Mode.TRAIN)[0] == 1.0 and jf(x, Mode.EVAL)[0] == -1.0
    assert jf(x, b"up")[0] == 1.0 and jf(x, b"down")[0] == -1.0
    assert jf(x, Small.ONE)[0] == 1.0
    # Other.FIRST == Small.ONE == 1 (IntEnum), but a member of another class: its own trace
    assert jf(x, Other.FIRST)[0] == -1.0
    assert jf.trace_count == 6 and seen[-1] is Other.FIRST


def test_none_stays_part_of_the_structure():
    f = numpy_tier(lambda x, b: x if b is None else x + b)
    assert f(np.ones(2), None)[0] == 1.0 and f(np.ones(2), np.ones(2))[0] == 2.0
    assert f.trace_count == 2


def test_a_function_may_return_a_string():
    f = numpy_tier(lambda x, p: (p["mode"], x * 2.0))
    mode, y = f(np.ones(2), {"mode": "train"})
    assert mode == "train" and y[0] == 2.0


def test_retrace_explanation_names_the_changed_string(monkeypatch, capsys):
    monkeypatch.setattr(tj.config, "explain_retrace", True)
    f = numpy_tier(batchnorm)
    f(_x(), _bn_param("train"))
    f(_x(), _bn_param("test"))
    err = capsys.readouterr().err
    assert "bn_param['mode']: static value 'train' -> 'test'" in err


def test_grad_with_a_string_in_a_dict_differentiates_the_array_leaves():
    def loss(params, x):
        h = x @ params["w"]
        h = np.tanh(h) if params["act"] == "tanh" else np.maximum(h, 0.0)
        return np.sum(h ** 2)

    rng = np.random.default_rng(1)
    params = {"act": "tanh", "w": rng.standard_normal((3, 2))}
    x = rng.standard_normal((4, 3))
    g = numpy_tier(tj.grad(loss))(params, x)
    assert g["act"] == "tanh"                     # the structure of the argument, as in JAX
    want = np.zeros_like(params["w"])
    for i in np.ndindex(want.shape):
        up, down = params["w"].copy(), params["w"].copy()
        up[i] += EPS
        down[i] -= EPS
        want[i] = (loss({"act": "tanh", "w": up}, x) - loss({"act": "tanh", "w": down}, x)
                   ) / (2 * EPS)
    np.testing.assert_allclose(g["w"], want, rtol=1e-6, atol=1e-8)
    g_relu = tj.grad(loss)({"act": "relu", "w": params["w"]}, x)     # eager grad, own trace
    np.testing.assert_allclose(g_relu["w"], 2 * x.T @ np.maximum(x @ params["w"], 0.0))


def test_compiled_backend_with_a_string_in_a_dict():
    f = tj.jit(batchnorm, tiered=False)
    got_p, want_p = _bn_param("train"), _bn_param("train")
    x = _x(3)
    np.testing.assert_allclose(f(x, got_p), batchnorm(x, want_p), rtol=1e-12)
    np.testing.assert_allclose(got_p["running_var"], want_p["running_var"], rtol=1e-12)


def test_tree_map_leaves_static_values_alone():
    out = tj.tree_map(lambda a: a * 2, {"mode": "train", "w": np.ones(2)})
    assert out["mode"] == "train" and out["w"][0] == 2.0
