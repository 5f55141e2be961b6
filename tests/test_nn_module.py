"""tracejit.nn: Module as a pytree, jit and grad through Modules, layers with PyTorch's defaults,
state_dict / load_state_dict / save / load, train() / eval()."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tracejit
from tracejit import nn
from tracejit.nn import functional as F
from tracejit.tracer.pytree import flatten, unflatten


class Net(nn.Module):
    """A small CNN shaped like the reference one: conv -> relu -> flatten -> linear."""

    def __init__(self, rng):
        self.conv = nn.Conv2d(1, 2, 3, padding=1, rng=rng)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 3, rng=rng), nn.ReLU(),
                                  nn.Dropout(0.5), nn.Linear(3, 2, rng=rng))

    def forward(self, x, seed=None):
        return self.head(F.relu(self.conv(x)), seed=seed)


def make_net(seed=0):
    return Net(np.random.default_rng(seed))


X = np.random.default_rng(1).standard_normal((2, 1, 4, 4)).astype(np.float32)
NET_KEYS = ["conv.weight", "conv.bias", "head.1.weight", "head.1.bias", "head.4.weight",
            "head.4.bias"]


# -- structure and pytree -----------------------------------------------------------------------

def test_named_parameters_use_pytorch_state_dict_keys():
    net = make_net()
    assert list(net.state_dict()) == NET_KEYS
    assert [p.shape for p in net.parameters()] == [(2, 1, 3, 3), (2,), (3, 32), (3,), (2, 3),
                                                   (2,)]
    assert all(p.dtype == np.float32 for p in net.parameters())


def test_pytree_flatten_unflatten_round_trip_keeps_classes_and_static_attributes():
    net = make_net().eval()
    leaves, tree = flatten(net)
    assert len(leaves) == 6
    for leaf, (_, p) in zip(leaves, net.named_parameters()):
        assert leaf is p
    new = unflatten(tree, [leaf * 2 for leaf in leaves])
    assert type(new) is Net and type(new.head[1]) is nn.Linear and type(new.head) is nn.Sequential
    assert new.conv.padding == 1 and new.head[1].out_features == 3 and new.head[3].p == 0.5
    assert new.training is False and new.head[3].training is False
    np.testing.assert_array_equal(new.conv.weight, net.conv.weight * 2)
    assert flatten(new)[1] == tree


def test_linear_without_bias_has_no_bias_leaf():
    lin = nn.Linear(4, 3, bias=False, rng=np.random.default_rng(0))
    assert list(lin.state_dict()) == ["weight"] and lin.bias is None
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(lin(x), x @ lin.weight.T)
    assert len(flatten(lin)[0]) == 1


def test_unhashable_static_attribute_is_reported_when_flattened():
    class Bad(nn.Module):
        def __init__(self):
            self.sizes = [1, 2]

    with pytest.raises(TypeError, match="unhashable.*tuple"):
        flatten(Bad())


def test_reassigning_an_attribute_moves_it_between_parameters_and_static():
    lin = nn.Linear(2, 2, rng=np.random.default_rng(0))
    lin.bias = None
    assert list(lin.state_dict()) == ["weight"]
    lin.bias = np.zeros(2, np.float32)
    assert list(lin.state_dict()) == ["weight", "bias"]


def test_sequential_indexing_length_and_missing_attribute():
    net = make_net()
    assert len(net.head) == 5 and isinstance(net.head[0], nn.Flatten)
    with pytest.raises(AttributeError, match="nope"):
        net.nope


def test_flatten_start_and_end_dim_follow_torch():
    x = np.zeros((2, 3, 4, 5))
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0)(x).shape == (120,)
    assert nn.Flatten(1, 2)(x).shape == (2, 12, 5)
    assert nn.Flatten(-3, -2)(x).shape == (2, 12, 5)


def test_repr_shows_submodules_and_parameter_shapes():
    text = repr(make_net())
    assert "(conv): Conv2d(" in text and "weight: float32[2, 1, 3, 3]" in text


# -- PyTorch default initialisation ---------------------------------------------------------------

def test_linear_and_conv2d_init_are_uniform_within_one_over_sqrt_fan_in():
    rng = np.random.default_rng(0)
    lin = nn.Linear(400, 300, rng=rng)
    conv = nn.Conv2d(8, 64, (3, 5), groups=2, rng=rng)
    for m, fan_in in [(lin, 400), (conv, 4 * 3 * 5)]:
        bound = 1 / math.sqrt(fan_in)
        for p in (m.weight, m.bias):
            assert np.abs(p).max() <= bound
        # U(-b, b) has standard deviation b / sqrt(3)
        assert abs(m.weight.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert conv.weight.shape == (64, 4, 3, 5)


def test_init_is_reproducible_from_the_rng():
    a, b = make_net(3), make_net(3)
    for (ka, pa), (kb, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa, pb)
    assert not np.array_equal(make_net(4).conv.weight, a.conv.weight)


# -- jit and grad through a Module --------------------------------------------------------------

def test_jit_through_a_module_equals_eager_and_reuses_the_trace():
    net = make_net().eval()
    f = tracejit.jit(lambda m, x: m(x))
    np.testing.assert_allclose(f(net, X), net(X), rtol=1e-5, atol=1e-6)
    other = make_net(5).eval()            # new parameter values, same structure: no retrace
    np.testing.assert_allclose(f(other, X), other(X), rtol=1e-5, atol=1e-6)
    assert f.trace_count == 1


def test_jitted_method_forward_equals_eager():
    class Jitted(nn.Module):
        def __init__(self):
            self.lin = nn.Linear(4, 2, rng=np.random.default_rng(0))

        @tracejit.jit
        def forward(self, x):
            return F.softmax(self.lin(x), dim=1)

    m = Jitted()
    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(m(x), F.softmax(m.lin(x), dim=1), rtol=1e-6)


def _loss(model, x, t):
    return F.cross_entropy(model(x), t)


T = np.array([1, 0], np.int64)


def test_grad_returns_a_module_of_gradients_matching_finite_differences():
    net = make_net().eval()
    net64 = unflatten(flatten(net)[1], [p.astype(np.float64) for p in net.parameters()])
    x64 = X.astype(np.float64)
    # On the reference interpreter (float64 kernels would only be compiled for this test).
    g = tracejit.jit(tracejit.grad(_loss), backend="interpreter")(net64, x64, T)
    assert type(g) is Net and type(g.head) is nn.Sequential
    assert list(g.state_dict()) == NET_KEYS
    eps = 1e-6
    for key, grad in g.state_dict().items():
        p = net64.state_dict()[key]
        assert grad.shape == p.shape
        fd = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            for sign in (1, -1):
                state = net64.state_dict()
                q = p.copy()
                q[idx] += sign * eps
                state[key] = q
                m = unflatten(flatten(net64)[1], [state[k] for k in NET_KEYS])
                fd[idx] += sign * _loss(m, x64, T) / (2 * eps)
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7, err_msg=key)


def test_value_and_grad_inside_jit_equals_outside():
    net = make_net().eval()
    v1, g1 = tracejit.value_and_grad(_loss)(net, X, T)
    v2, g2 = tracejit.jit(tracejit.value_and_grad(_loss))(net, X, T)
    assert type(g1) is Net and type(g2) is Net and list(g1.state_dict()) == NET_KEYS
    np.testing.assert_allclose(v1, v2, rtol=1e-6)
    for a, b in zip(g1.parameters(), g2.parameters()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


# -- train / eval and dropout -------------------------------------------------------------------

def test_train_and_eval_switch_every_submodule():
    net = make_net()
    assert net.training and net.head[3].training
    assert net.eval() is net
    assert not net.training and not net.head.training and not net.head[3].training
    net.train()
    assert net.head[3].training


def test_eval_mode_disables_dropout_and_train_mode_uses_the_seed():
    net = make_net()
    h = F.relu(net.conv(X)).reshape(2, -1)
    no_dropout = net.head[4](F.relu(net.head[1](h)))
    np.testing.assert_allclose(net.eval()(X), no_dropout, rtol=1e-6)
    net.train()
    a, b, c = net(X, seed=1), net(X, seed=1), net(X, seed=2)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_jit_retraces_on_train_eval_switch_and_matches_eager():
    net = make_net()
    f = tracejit.jit(lambda m, x, s: m(x, seed=s))
    s = np.int64(3)
    np.testing.assert_allclose(f(net, X, s), net(X, seed=3), rtol=1e-5, atol=1e-6)
    net.eval()
    np.testing.assert_allclose(f(net, X, s), net(X), rtol=1e-5, atol=1e-6)
    assert f.trace_count == 2


def test_dropout_layer_in_eval_is_identity():
    d = nn.Dropout(0.9).eval()
    np.testing.assert_array_equal(d(X), X)


# -- state_dict, load_state_dict, save, load ----------------------------------------------------

def test_state_dict_load_state_dict_round_trip():
    a, b = make_net(0), make_net(1)
    b.load_state_dict(a.state_dict())
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(b.state_dict()[k], v)
    np.testing.assert_allclose(b.eval()(X), a.eval()(X))


def test_load_state_dict_casts_to_the_parameter_dtype():
    a = make_net()
    state = {k: v.astype(np.float64) for k, v in a.state_dict().items()}
    a.load_state_dict(state)
    assert all(p.dtype == np.float32 for p in a.parameters())


def test_save_and_load_npz_round_trip(tmp_path):
    a, b = make_net(0), make_net(1)
    path = tmp_path / "net.npz"
    a.save(path)
    with np.load(path) as data:
        assert sorted(data.files) == sorted(NET_KEYS)
    assert b.load(path) is b
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(b.state_dict()[k], v)


def test_load_state_dict_rejects_shape_mismatch():
    a = make_net()
    state = a.state_dict()
    state["head.1.weight"] = np.zeros((3, 31), np.float32)
    with pytest.raises(ValueError, match=r"head\.1\.weight.*\(3, 31\).*\(3, 32\)"):
        a.load_state_dict(state)


def test_load_state_dict_rejects_missing_and_unexpected_keys():
    a = make_net()
    state = a.state_dict()
    del state["conv.bias"]
    with pytest.raises(KeyError, match="missing.*conv.bias"):
        a.load_state_dict(state)
    state = a.state_dict()
    state["extra.weight"] = np.zeros(1)
    with pytest.raises(KeyError, match="unexpected.*extra.weight"):
        a.load_state_dict(state)


def test_failed_load_leaves_the_model_unchanged():
    a = make_net(0)
    before = {k: v.copy() for k, v in a.state_dict().items()}
    state = make_net(1).state_dict()
    state["head.4.bias"] = np.zeros(5, np.float32)           # last key has the wrong shape
    with pytest.raises(ValueError):
        a.load_state_dict(state)
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)
