"""Regressions for bugs found writing PyTorch-style training code against tracejit.nn,
tracejit.optim and tracejit.amp (round 2): each test failed before its fix. References are
NumPy code written here or exact values; none imports torch."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit import nn

R = np.random.default_rng(7)
X = R.standard_normal((3, 4)).astype(np.float32)


def _interp(fn):
    return tracejit.jit(fn, backend="interpreter")


def _dropout_net():
    rng = np.random.default_rng(1)
    return nn.Sequential(nn.Linear(4, 8, rng=rng), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(8, 2, rng=rng))


# -- train()/eval() of a model the jitted function does not take as an argument -----------------

class _Holder:
    def __init__(self):
        self.model = _dropout_net()

    def predict(self, x, seed):
        return self.model(x, seed=seed)


def _jitted_ways():
    """(model, jitted forward) for each way to jit code that reads a model it is not passed:
    a closure, jit(model), jit(model.forward), jit(obj.method)."""
    def closure(m):
        return _interp(lambda x, seed: m(x, seed=seed))

    out = []
    m = _dropout_net()
    out.append((m, closure(m)))
    m = _dropout_net()
    out.append((m, _interp(m)))
    m = _dropout_net()
    out.append((m, _interp(m.forward)))
    h = _Holder()
    out.append((h.model, _interp(h.predict)))
    return out


def test_eval_and_train_of_a_model_read_from_a_closure_self_or_jit_model_trace_again():
    """model.eval() set a static flag the guards did not see: the jitted forward kept its
    train-mode trace and applied dropout at inference (and Dropout.p = 0 was ignored)."""
    for model, f in _jitted_ways():
        train = model(X, seed=3)
        np.testing.assert_allclose(f(X, seed=3), train, rtol=1e-6)
        model.eval()
        np.testing.assert_allclose(f(X, seed=3), model(X), rtol=1e-6)
        model.train()
        np.testing.assert_allclose(f(X, seed=3), train, rtol=1e-6)
        model[2].p = 0.0
        np.testing.assert_allclose(f(X, seed=3), model(X, seed=3), rtol=1e-6)
        assert f.trace_count == 4


class _DropHolder:
    def __init__(self):
        self.lin = nn.Linear(4, 4, rng=np.random.default_rng(0))
        self.drop = nn.Dropout(0.5)

    def _forward(self, x):
        return self.drop(self.lin(x), seed=3)

    forward = tracejit.jit(_forward, backend="interpreter")


def test_eval_of_a_static_model_argument_or_a_parameterless_layer_of_self_traces_again():
    """A static model (static_argnums) and a layer without arrays held by a jitted method's
    self are keyed by identity, which model.eval() keeps: the train-mode trace ran on."""
    model = _dropout_net()
    f = tracejit.jit(lambda m, x, seed: m(x, seed=seed), static_argnums=0,
                     backend="interpreter")
    np.testing.assert_allclose(f(model, X, 1), model(X, seed=1), rtol=1e-6)
    model.eval()
    np.testing.assert_allclose(f(model, X, 1), model(X), rtol=1e-6)
    h = _DropHolder()
    h.forward(X)
    h.drop.eval()
    np.testing.assert_allclose(h.forward(X), h.lin(X), rtol=1e-6)


def test_a_layer_switched_to_eval_in_a_global_list_of_layers_traces_again():
    layers = _dropout_net().children()
    f = _interp(lambda x: layers[3](layers[2](layers[0](x), seed=5)))
    f(X)
    layers[2].eval()
    np.testing.assert_allclose(f(X), layers[3](layers[0](X)), rtol=1e-6)


# -- the weights of a model read from globals / closures ---------------------------------------

class _Block(nn.Module):
    def __init__(self, rng):
        self.seq = nn.Sequential(nn.Linear(4, 4, rng=rng), nn.ReLU())
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        return self.norm(self.seq(x)) + x


@pytest.mark.parametrize("make", [
    lambda rng: nn.Sequential(nn.Linear(4, 8, rng=rng), nn.ReLU(), nn.Linear(8, 2, rng=rng)),
    lambda rng: nn.Sequential(_Block(rng), nn.Linear(4, 2, rng=rng))], ids=["flat", "nested"])
def test_jitted_code_sees_new_weights_of_a_model_it_reads_from_a_closure(make):
    """A Sequential's weights sit four __dict__ levels down (_modules, "0", _parameters): past
    the depth arrays were looked for, so they were baked in as constants and load_state_dict
    or an in-place update was silently not seen."""
    model = make(np.random.default_rng(0))
    f = _interp(lambda x: model(x))
    np.testing.assert_allclose(f(X), model(X), rtol=1e-6)
    model.load_state_dict(make(np.random.default_rng(1)).state_dict())
    np.testing.assert_allclose(f(X), model(X), rtol=1e-6)
    for p in model.parameters():
        p *= 0.5
    np.testing.assert_allclose(f(X), model(X), rtol=1e-6)
    assert f.trace_count == 1


def test_jitted_code_sees_new_weights_of_every_layer_of_a_long_model_it_reads():
    """Past 64 items of a container (a Sequential's 65th layer) the weights stayed constants."""
    rng = np.random.default_rng(0)
    model = nn.Sequential(*[nn.Linear(4, 4, rng=rng) for _ in range(70)])
    f = _interp(lambda x: model(x))
    f(X)
    model[68].weight[...] = 0.5
    np.testing.assert_allclose(f(X), model(X), rtol=1e-5)


# -- state_dict --------------------------------------------------------------------------------

class _TiedHead(nn.Module):
    def __init__(self):
        self.emb = np.zeros((3, 2), np.float32)
        self.out = nn.Linear(2, 3, bias=False)
        self.out.weight = self.emb


def test_loading_two_values_into_a_tied_parameter_keeps_the_last_as_torch():
    """torch copies each name's value into the one tensor in state_dict order: the last
    (out.weight) is what a tied model holds after loading an untied checkpoint; the first's
    (emb) was kept."""
    m = _TiedHead()
    m.load_state_dict({"emb": np.ones((3, 2)), "out.weight": np.full((3, 2), 2.0)})
    assert m.emb is m.out.weight
    np.testing.assert_array_equal(m.emb, np.full((3, 2), 2.0, np.float32))


def test_load_state_dict_with_strict_false_loads_the_keys_the_model_has():
    lin = nn.Linear(2, 3)
    lin.load_state_dict({"weight": np.ones((3, 2)), "extra": np.zeros(1)}, strict=False)
    np.testing.assert_array_equal(lin.weight, np.ones((3, 2), np.float32))
    with pytest.raises(KeyError):
        lin.load_state_dict({"weight": np.ones((3, 2))})


# -- torch's constructor arguments -------------------------------------------------------------

def test_layers_take_torchs_constructor_arguments():
    """nn.ReLU(inplace=True), nn.GELU(approximate="tanh"), nn.Dropout(p, inplace=False),
    nn.LayerNorm(n, elementwise_affine=False) and nn.MaxPool2d(k, s, p, dilation) were
    TypeErrors."""
    from tracejit.nn import functional as F
    np.testing.assert_array_equal(nn.ReLU(inplace=True)(X), F.relu(X))
    x = np.array([-1.0, 2.0, -3.0])
    F.relu(x, inplace=True)                         # as torch: the result written into x
    np.testing.assert_array_equal(x, [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(nn.GELU(approximate="tanh")(X), F.gelu(X, "tanh"))
    assert nn.Dropout(0.2, inplace=False).p == 0.2
    ln = nn.LayerNorm(4, elementwise_affine=False)
    assert ln.parameters() == [] and len(nn.LayerNorm(4, bias=False).parameters()) == 1
    np.testing.assert_array_equal(ln(X), F.layer_norm(X, (4,)))
    img = R.standard_normal((1, 1, 7, 7))
    pool = nn.MaxPool2d(3, 2, 1, 2)
    np.testing.assert_array_equal(pool(img), F.max_pool2d(img, 3, 2, 1, 2))
    assert pool(img).shape == (1, 1, 3, 3)
    with pytest.raises(ValueError):
        nn.MaxPool2d(2, ceil_mode=True)


def test_sequential_and_module_list_take_item_assignment_deletion_insert_and_pop():
    """As torch's: s[i] = layer keeps the name, del and pop number the layers again (they
    were TypeErrors), and the parameters follow."""
    rng = np.random.default_rng(0)
    a, b, c = (nn.Linear(4, 4, rng=rng) for _ in range(3))
    for cls in (nn.Sequential, lambda *ls: nn.ModuleList(ls)):
        s = cls(a, nn.ReLU(), b)
        s[-1] = c
        assert s[2] is c and [n for n, _ in s.named_parameters()] == [
            "0.weight", "0.bias", "2.weight", "2.bias"]
        del s[0]
        assert [n for n, _ in s.named_children()] == ["0", "1"] and s[1] is c
        assert s.pop(0).__class__ is nn.ReLU and len(s) == 1
        with pytest.raises(TypeError):
            s[0] = np.ones(3)
    m = nn.ModuleList([a])
    m.insert(0, b)
    assert list(m) == [b, a]


def _conv_reference(xp, w, b):
    """Direct cross-correlation of an already padded (N, C, H, W) input."""
    o, _, kh, kw = w.shape
    n, _, h, wd = xp.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i:i + kh, j:j + kw], w)
    return out + b.reshape(1, o, 1, 1)


@pytest.mark.parametrize("mode, np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                           ("circular", "wrap")])
def test_conv2d_padding_modes_pad_the_input_as_torch(mode, np_mode):
    """Conv2d(padding_mode=...) was a TypeError."""
    conv = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode, rng=np.random.default_rng(0),
                     dtype=np.float64)
    x = R.standard_normal((1, 2, 4, 5))
    want = _conv_reference(np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode=np_mode),
                           conv.weight, conv.bias)
    np.testing.assert_allclose(conv(x), want, rtol=1e-12)
    np.testing.assert_allclose(conv(x[0]), want[0], rtol=1e-12)
    with pytest.raises(ValueError):
        nn.Conv2d(2, 3, 3, padding_mode="mirror")


def test_named_parameters_joins_a_prefix_with_a_dot_as_torch():
    m = nn.Sequential(nn.Linear(2, 2))
    assert [n for n, _ in m.named_parameters(prefix="model")] == ["model.0.weight",
                                                                  "model.0.bias"]
    assert [n for n, _ in m[0].named_parameters("fc")] == ["fc.weight", "fc.bias"]


def test_one_hot_infers_the_classes_and_refuses_classes_out_of_range_as_torch():
    """num_classes had no default (torch: -1, the largest class + 1), -1 gave no column, and
    a class >= num_classes or < 0 gave a row of zeros silently."""
    from tracejit.nn import functional as F
    np.testing.assert_array_equal(F.one_hot(np.array([0, 2])), [[1, 0, 0], [0, 0, 1]])
    for bad in (np.array([0, 2]), np.array([-1, 0])):
        with pytest.raises(ValueError, match="Class values"):
            F.one_hot(bad, 2)
    with pytest.raises(TypeError):
        F.one_hot(np.array([0.0, 1.0]), 2)


# -- optimizers: torch's amsgrad, maximize, AdamW ----------------------------------------------

def _torch_adam(p, grads, lr, betas, eps, wd, amsgrad, maximize, decoupled):
    """torch/optim/adam.py _single_tensor_adam, transcribed (float64)."""
    m, v, vmax = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if wd and decoupled:
            p = p * (1 - lr * wd)
        elif wd:
            g = g + wd * p
        m = m + (g - m) * (1 - betas[0])
        v = v * betas[1] + (1 - betas[1]) * g * g
        if amsgrad:
            vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / np.sqrt(1 - betas[1] ** t) + eps
        p = p - lr / (1 - betas[0] ** t) * m / denom
    return p


@pytest.mark.parametrize("kwargs", [dict(amsgrad=True), dict(maximize=True, weight_decay=0.1),
                                    dict(decoupled=True, amsgrad=True, weight_decay=0.3)],
                         ids=["amsgrad", "maximize", "adamw"])
def test_adam_amsgrad_maximize_and_adamw_follow_torch(kwargs):
    """Adam(amsgrad=True) and Adam(maximize=True) were TypeErrors; there was no AdamW."""
    from tracejit import optim
    p0 = R.standard_normal((2, 3))
    grads = [R.standard_normal((2, 3)) * s for s in (1.0, 0.1, 2.0, 0.5)]
    flags = dict(amsgrad=False, maximize=False, weight_decay=0.0, decoupled=False) | kwargs
    decoupled = flags.pop("decoupled")
    opt = (optim.AdamW if decoupled else optim.Adam)(lr=0.05, betas=(0.8, 0.9), **flags)
    state, p = opt.init(p0), p0
    for g in grads:
        p, state = opt.update(g, state, p)
    want = _torch_adam(p0, grads, 0.05, (0.8, 0.9), 1e-8, flags["weight_decay"],
                       flags["amsgrad"], flags["maximize"], decoupled)
    np.testing.assert_allclose(p, want, rtol=1e-12, atol=1e-15)


def test_sgd_maximize_ascends():
    from tracejit import optim
    p0, g = np.array([1.0, -2.0]), np.array([0.5, 0.25])
    opt = optim.SGD(lr=0.1, momentum=0.9, maximize=True)
    p, state = opt.update(g, opt.init(p0), p0)
    p, state = opt.update(g, state, p)
    np.testing.assert_allclose(p, p0 + 0.1 * g + 0.1 * (0.9 * g + g), rtol=1e-15)


# -- jit keys -----------------------------------------------------------------------------------

class _Scale(nn.Module):
    def __init__(self, k):
        self.k = k
        self.w = np.ones(2, np.float32)

    def forward(self, x):
        return x * self.k


def test_a_module_setting_of_another_type_but_equal_value_traces_again():
    """k=2 and k=2.0 are equal in Python, so the jit key of the model did not change and the
    float setting reused the int trace (an int64 result where NumPy gives float64)."""
    f = _interp(lambda m, x: m(x))
    x = np.array([1, 2])
    assert f(_Scale(2), x).dtype == np.int64
    out = f(_Scale(2.0), x)
    assert out.dtype == np.float64 and f.trace_count == 2


def test_adamw_with_an_array_learning_rate_a_schedule_rebinds_follows_it_under_jit():
    """The decoupled decay p * (1 - lr * wd) had NumPy compute lr * wd at trace time: with
    opt.lr an array rebound each step (passed in the old one's place, no trace again), the
    decay kept the first learning rate."""
    from tracejit import optim
    p0 = R.standard_normal(3).astype(np.float32)
    g = R.standard_normal(3).astype(np.float32)
    opt = optim.AdamW(lr=np.array(0.1), weight_decay=0.5)
    step = _interp(lambda g, st, p: opt.update(g, st, p))
    p, st, pe, se = p0, opt.init(p0), p0, opt.init(p0)
    for i in range(3):
        opt.lr = np.array(0.1 * 0.5 ** i)
        p, st = step(g, st, p)
        pe, se = opt.update(g, se, pe)
        np.testing.assert_allclose(p, pe, rtol=1e-6)


def test_softmax_takes_torchs_dtype_and_implicit_dim():
    """F.softmax(x, -1, dtype=np.float32) and F.softmax(x) were TypeErrors."""
    from tracejit.nn import functional as F
    x = R.standard_normal((2, 3)).astype(np.float16)
    out = F.softmax(x, -1, dtype=np.float32)
    wide = x.astype(np.float64)
    want = np.exp(wide) / np.exp(wide).sum(axis=-1, keepdims=True)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_allclose(F.log_softmax(x, dtype=np.float32), np.log(want), rtol=1e-6)


def test_avg_pool2d_layer_is_f_avg_pool2d():
    """There was no nn.AvgPool2d (F.avg_pool2d only)."""
    from tracejit.nn import functional as F
    img = R.standard_normal((1, 2, 5, 5))
    pool = nn.AvgPool2d(3, 2, 1, count_include_pad=False)
    np.testing.assert_array_equal(pool(img), F.avg_pool2d(img, 3, 2, 1, False, False))
    np.testing.assert_allclose(nn.AvgPool2d(5)(img)[..., 0, 0], img.mean(axis=(2, 3)))


def test_bce_with_logits_follows_torchs_formula_and_gradient():
    """There was no binary_cross_entropy_with_logits / nn.BCEWithLogitsLoss."""
    from tracejit.nn import functional as F
    x = np.array([[-40.0, -2.0, 0.0], [0.5, 3.0, 40.0]])
    y = np.array([[0.0, 1.0, 0.25], [1.0, 0.0, 0.5]])
    pw, w = np.array([2.0, 0.5, 3.0]), np.array([1.0, 2.0, 0.5])
    softplus = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)       # log(1 + exp(-x))
    want = w * ((1 - y) * x + (1 + (pw - 1) * y) * softplus)
    out = F.binary_cross_entropy_with_logits(x, y, w, reduction="none", pos_weight=pw)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    loss = nn.BCEWithLogitsLoss(weight=w, pos_weight=pw)
    np.testing.assert_allclose(loss(x, y), want.mean(), rtol=1e-12)
    sig = 1 / (1 + np.exp(-x))
    grad = _interp(tracejit.grad(
        lambda x: F.binary_cross_entropy_with_logits(x, y, reduction="sum")))
    np.testing.assert_allclose(grad(x), sig - y, rtol=1e-12, atol=1e-15)   # 0.5 - y at 0


def test_embedding_gathers_rows_and_passes_no_gradient_through_padding_idx():
    """There was no embedding / nn.Embedding."""
    emb = nn.Embedding(4, 2, padding_idx=1, rng=np.random.default_rng(0), dtype=np.float64)
    np.testing.assert_array_equal(emb.weight[1], [0.0, 0.0])
    emb.weight[1] = 5.0                     # torch reads the row as it is, trains it never
    idx = np.array([[0, 1, 2], [1, 3, 3]])
    np.testing.assert_array_equal(emb(idx), emb.weight[idx])
    g = _interp(tracejit.grad(lambda m: (m(idx) ** 2).sum()))(emb)
    want = np.zeros((4, 2))
    np.add.at(want, idx.ravel(), 2 * emb.weight[idx.ravel()])
    want[1] = 0
    np.testing.assert_allclose(g.weight, want, rtol=1e-12)


def test_layers_built_with_dtype_none_hold_float32_as_torch():
    """dtype=None (torch's default) went to NumPy, which reads None as float64."""
    for layer in (nn.Linear(2, 2, dtype=None), nn.Conv2d(1, 1, 1, dtype=None),
                  nn.LayerNorm(2, dtype=None), nn.Embedding(3, 2, dtype=None)):
        assert {p.dtype for p in layer.parameters()} == {np.dtype(np.float32)}
