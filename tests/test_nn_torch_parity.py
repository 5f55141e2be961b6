"""tracejit.nn against PyTorch: ModuleDict, Sequential and Module traversal, the losses'
``weight`` / ``ignore_index`` / ``label_smoothing`` / ``reduction`` and probability targets.

Two kinds of check: torch itself (values and gradients, float64, rtol 1e-6; skipped where torch
is not installed: CI installs only the test extras) and NumPy transcriptions of torch's
documented formulas, with hand-derived gradients, which always run. Transforms are checked
on the reference interpreter (no kernels to compile) and once on the compiled backend."""
from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import tracejit
from tracejit import nn, optim
from tracejit.nn import functional as F
from tracejit.tracer.pytree import flatten, unflatten

RTOL = 1e-6


def _torch():
    return pytest.importorskip("torch")


def _interp(fn):
    return tracejit.jit(fn, backend="interpreter")


# -- NumPy references written from torch's documentation (loops, no shared code) ---------------

def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def ref_nll(logp, t, weight=None, ignore_index=-100, reduction="mean", eps=0.0):
    """torch.nn.CrossEntropyLoss's formulas for class indices, rows (N, C) (with eps: the
    label-smoothed loss, whose log-probabilities are those of the logits)."""
    n, c = logp.shape
    w = np.ones(c) if weight is None else np.asarray(weight, np.float64)
    losses, wsum = np.zeros(n), 0.0
    for i in range(n):
        if t[i] == ignore_index:
            continue
        nll = -w[t[i]] * logp[i, t[i]]
        smooth = -sum(w[k] * logp[i, k] for k in range(c))
        losses[i] = (1 - eps) * nll + eps / c * smooth
        wsum += w[t[i]]
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / wsum if wsum else np.nan


def ref_cross_entropy(x, t, **kw):
    """Logits (N, C), (C,) or (N, C, d...): the K-dimensional case as rows."""
    if x.ndim == 1:
        out = ref_nll(_log_softmax(x[None], 1), np.reshape(t, 1), **kw)
        return out[0] if kw.get("reduction") == "none" else out
    rows = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    out = ref_nll(_log_softmax(rows, 1), np.reshape(t, -1), **kw)
    return out.reshape(t.shape) if kw.get("reduction") == "none" else out


def ref_ce_grad(x, t, weight=None, ignore_index=-100, eps=0.0):
    """d mean-loss / d logits for rows (N, C), by hand: nll_n = -w_t logp_nt gives
    w_t (p_n - e_t); smooth_n = -sum_k w_k logp_nk gives p_n sum(w) - w."""
    n, c = x.shape
    w = np.ones(c) if weight is None else weight
    p = np.exp(_log_softmax(x, 1))
    g = np.zeros_like(x)
    valid = t != ignore_index
    for i in np.flatnonzero(valid):
        onehot = np.eye(c)[t[i]]
        g[i] = (1 - eps) * w[t[i]] * (p[i] - onehot) + eps / c * (p[i] * w.sum() - w)
    return g / w[t[valid]].sum()


def ref_ce_probs(x, q, weight=None, reduction="mean", eps=0.0):
    """Probability targets: -sum_c w_c q'_c logp_c, q' = (1 - eps) q + eps / C; the mean
    divides by the number of samples."""
    axis = 1 if x.ndim > 1 else 0
    c = x.shape[axis]
    w = np.ones(c) if weight is None else weight
    wb = w.reshape((c,) + (1,) * (x.ndim - 1 - axis))
    q = (1 - eps) * q + eps / c
    per = -(_log_softmax(x, axis) * q * wb).sum(axis=axis)
    if reduction == "none":
        return per
    if reduction == "sum":
        return per.sum()
    return per.sum() / per.size if per.size else np.nan


# -- the cases ----------------------------------------------------------------------------------

R = np.random.default_rng(20250101)
N, C = 7, 5
X = R.standard_normal((N, C)) * 2
T = np.array([0, 4, -100, 2, 2, -100, 1])                 # two targets ignored
T_ALL_IGNORED = np.full(N, -100)
T_OTHER_IGNORE = np.where(T == -100, 3, T)                 # ignore_index=3 instead
W = R.random(C) + 0.1
XK = R.standard_normal((2, C, 3, 2))                       # K-dimensional (N, C, d1, d2)
TK = R.integers(0, C, (2, 3, 2))
TK[0, 1, 1] = TK[1, 2, 0] = -100
Q = R.dirichlet(np.ones(C), N)                             # probability targets
QK = np.moveaxis(R.dirichlet(np.ones(C), (2, 3, 2)), -1, 1)

OPTIONS = {
    "plain": {},
    "weight": {"weight": W},
    "smoothing": {"label_smoothing": 0.25},
    "weight+smoothing": {"weight": W, "label_smoothing": 0.25},
}
REDUCTIONS = ["mean", "sum", "none"]


def _t(torch, v):
    return torch.tensor(v) if isinstance(v, np.ndarray) else v


def _cotangent(shape):
    return np.random.default_rng(3).standard_normal(tuple(shape))


def _configs(fn, cases, options=OPTIONS, reductions=REDUCTIONS, **extra):
    """(fn, x, t, kwargs) for every (x, t) case x option x reduction."""
    return [(fn, x, t, dict(reduction=r, **opts, **extra))
            for x, t in cases for opts in options.values() for r in reductions]


def _torch_value_and_grad(torch_fn, x, t, kw):
    """torch's loss, and the gradient of sum(loss * cotangent), in float64."""
    torch = _torch()
    xt = torch.tensor(x, requires_grad=True)
    out = torch_fn(xt, torch.tensor(t), **{a: _t(torch, v) for a, v in kw.items()})
    ct = _cotangent(out.shape)
    (out * torch.tensor(ct)).sum().backward()
    return out.detach().numpy(), xt.grad.numpy(), ct


def _assert_close(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-12, equal_nan=True, err_msg=what)


def _check_against_torch(configs, torch_fn, with_grads, jit=True):
    """Every config's value eagerly; for those ``with_grads`` picks (each is one trace, which
    keeps the file fast), the value and the gradient under jit(value_and_grad) (targets
    traced too), or eagerly with ``jit=False``."""
    for fn, x, t, kw in configs:
        want, want_grad, ct = _torch_value_and_grad(torch_fn, x, t, kw)
        what = f"input {x.shape} target {np.ravel(t)[:4]}... {kw}"
        _assert_close(fn(x, t, **kw), want, what)
        if not with_grads(x, t, kw):
            continue
        vg = tracejit.value_and_grad(lambda x, t: (fn(x, t, **kw) * ct).sum())
        value, grad = (_interp(vg) if jit else vg)(x, t)
        _assert_close(value, (want * ct).sum(), what)
        _assert_close(grad, want_grad, what)


def _weighted_smoothed_mean(x, t, kw):
    return kw["reduction"] == "mean" and "weight" in kw and "label_smoothing" in kw


# -- cross_entropy / nll_loss against torch (values and gradients, eager and under jit) ----------

def _torch_ce():
    return _torch().nn.functional.cross_entropy


def test_cross_entropy_matches_torch():
    """Ignored targets, class weights, label smoothing, each reduction; gradients of the
    plain and the weighted smoothed mean, and of the weighted smoothed unreduced losses."""
    _check_against_torch(_configs(F.cross_entropy, [(X, T)]), _torch_ce(),
                         lambda x, t, kw: len(kw) == 1 and kw["reduction"] == "mean"
                         or len(kw) == 3 and kw["reduction"] != "sum")


def test_cross_entropy_of_all_ignored_targets_matches_torch():
    """A nan mean with zero gradients, a zero sum, zero unreduced losses."""
    _check_against_torch(_configs(F.cross_entropy, [(X, T_ALL_IGNORED)]), _torch_ce(),
                         lambda x, t, kw: kw["reduction"] == "mean" and len(kw) in (1, 3))


def test_cross_entropy_gradients_match_torch_eagerly():
    _check_against_torch(_configs(F.cross_entropy, [(X, T)],
                                  {"weight+smoothing": OPTIONS["weight+smoothing"]}, ["mean"]),
                         _torch_ce(), lambda x, t, kw: True, jit=False)


def test_k_dimensional_cross_entropy_matches_torch():
    _check_against_torch(_configs(F.cross_entropy, [(XK, TK)]), _torch_ce(),
                         _weighted_smoothed_mean)


def test_unbatched_cross_entropy_matches_torch():
    _check_against_torch(_configs(F.cross_entropy, [(X[0], np.array(2)),
                                                    (X[0], np.array(-100))]),
                         _torch_ce(), _weighted_smoothed_mean)


def test_cross_entropy_with_another_ignore_index_matches_torch():
    _check_against_torch(_configs(F.cross_entropy, [(X, T_OTHER_IGNORE)], ignore_index=3),
                         _torch_ce(), _weighted_smoothed_mean)


def test_probability_targets_match_torch():
    _check_against_torch(_configs(F.cross_entropy, [(X, Q), (XK, QK), (X[0], Q[0])]),
                         _torch_ce(), lambda x, t, kw: x is X and _weighted_smoothed_mean(
                             x, t, kw) or x is XK and len(kw) == 1 and kw["reduction"] == "none")


def test_nll_loss_matches_torch():
    torch = _torch()
    logp, logpk = _log_softmax(X, 1), _log_softmax(XK, 1)
    options = {"plain": {}, "weight": {"weight": W}}
    configs = _configs(F.nll_loss, [(logp, T), (logp, T_ALL_IGNORED), (logpk, TK)], options)
    configs += _configs(F.nll_loss, [(logp, T_OTHER_IGNORE)], options, ignore_index=3)
    _check_against_torch(configs, torch.nn.functional.nll_loss,
                         lambda x, t, kw: "weight" in kw and (
                             kw["reduction"] == "mean" and t is T
                             or kw["reduction"] == "none" and x is logpk))


def test_zero_weight_sum_with_targets_left_is_nan_as_torch():
    """Targets whose classes all weigh 0: torch's 0/0, nan gradients on those rows only."""
    torch = _torch()
    w = np.array([0.0, 0.0, 1.0, 1.0, 1.0])
    t = np.array([0, 1, -100])
    for fn, tfn, x in ((F.cross_entropy, torch.nn.functional.cross_entropy, X[:3]),
                       (F.nll_loss, torch.nn.functional.nll_loss, _log_softmax(X[:3], 1))):
        _check_against_torch([(fn, x, t, {"weight": w})], tfn, lambda x, t, kw: True,
                             jit=False)


def test_compiled_jit_cross_entropy_matches_torch_in_float32():
    """The compiled backend (not the interpreter), float32 in and out, a traced weight."""
    torch = _torch()
    x, w = X.astype(np.float32), W.astype(np.float32)
    step = tracejit.jit(tracejit.value_and_grad(
        lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.1)))
    value, grad = step(x, T, w)
    assert np.asarray(value).dtype == np.float32 and grad.dtype == np.float32
    xt = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.cross_entropy(xt, torch.tensor(T), weight=torch.tensor(w),
                                             label_smoothing=0.1)
    want.backward()
    np.testing.assert_allclose(value, want.item(), rtol=1e-5)
    np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    value, grad = step(x, T_ALL_IGNORED, w)
    assert np.isnan(value) and not grad.any()


def test_mse_loss_reductions_match_torch():
    torch = _torch()
    y = R.standard_normal(X.shape)
    _check_against_torch(_configs(F.mse_loss, [(X, y)], {"plain": {}}),
                         torch.nn.functional.mse_loss, lambda x, t, kw: kw["reduction"] == "sum")


def test_legacy_size_average_and_reduce_match_torch():
    torch = _torch()
    xt, tt = torch.tensor(X), torch.tensor(T)
    for size_average, reduce in [(False, None), (None, False), (True, True), (False, True)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.nn.functional.cross_entropy(xt, tt, size_average=size_average,
                                                     reduce=reduce).numpy()
        with pytest.warns(UserWarning, match="size_average and reduce"):
            got = F.cross_entropy(X, T, size_average=size_average, reduce=reduce)
        _assert_close(got, want)


# -- cross_entropy / nll_loss against NumPy transcriptions (no torch needed) ---------------------

def _ref_kw(kw):
    kw = dict(kw)
    kw["eps"] = kw.pop("label_smoothing", 0.0)
    return kw


def test_cross_entropy_matches_torch_formulas():
    configs = _configs(F.cross_entropy, [(X, T), (X, T_ALL_IGNORED), (XK, TK),
                                         (X[0], np.array(3)), (X[0], np.array(-100))])
    configs += _configs(F.cross_entropy, [(X, T_OTHER_IGNORE)], ignore_index=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # no 0/0 warning for all-ignored batches
        for fn, x, t, kw in configs:
            _assert_close(fn(x, t, **kw), ref_cross_entropy(x, t, **_ref_kw(kw)), str(kw))
    # under jit (a traced target): the weighted, smoothed losses
    for t in (T, T_ALL_IGNORED):
        for r in REDUCTIONS:
            kw = dict(weight=W, label_smoothing=0.25, reduction=r)
            _assert_close(_interp(lambda x, t: F.cross_entropy(x, t, **kw))(X, t),
                          ref_cross_entropy(X, t, **_ref_kw(kw)))


def test_cross_entropy_gradient_matches_the_hand_derived_formula():
    """Mean reduction: sum over kept rows of (1-eps) w_t (p - e_t) + eps/C (p sum(w) - w),
    over the kept targets' weight sum."""
    for opts in OPTIONS.values():
        want = ref_ce_grad(X, T, opts.get("weight"), eps=opts.get("label_smoothing", 0.0))
        grad = tracejit.grad(lambda x, t: F.cross_entropy(x, t, **opts))
        _assert_close(_interp(grad)(X, T), want)


def test_probability_targets_match_torch_formulas():
    for _, x, q, kw in _configs(F.cross_entropy, [(X, Q), (XK, QK), (X[0], Q[0])]):
        _assert_close(F.cross_entropy(x, q, **kw), ref_ce_probs(x, q, **_ref_kw(kw)), str(kw))
    kw = dict(weight=W, label_smoothing=0.25)
    _assert_close(_interp(lambda x, q: F.cross_entropy(x, q, **kw))(XK, QK),
                  ref_ce_probs(XK, QK, W, eps=0.25))
    # one-hot probabilities without weights or smoothing are class indices
    t = np.where(T == -100, 0, T)
    for r in REDUCTIONS:
        _assert_close(F.cross_entropy(X, np.eye(C)[t], reduction=r),
                      F.cross_entropy(X, t, reduction=r))


def test_nll_loss_matches_torch_formulas():
    logp = _log_softmax(X, 1)
    for weight in (None, W):
        for reduction in REDUCTIONS:
            for t, ii in ((T, -100), (T_OTHER_IGNORE, 3), (T_ALL_IGNORED, -100)):
                _assert_close(F.nll_loss(logp, t, weight, ignore_index=ii, reduction=reduction),
                              ref_nll(logp, t, weight, ii, reduction))


def test_all_ignored_targets_give_torchs_nan_mean_zero_sum_and_zero_gradients():
    for opts in OPTIONS.values():
        assert np.isnan(F.cross_entropy(X, T_ALL_IGNORED, **opts))
        assert F.cross_entropy(X, T_ALL_IGNORED, reduction="sum", **opts) == 0
        np.testing.assert_array_equal(
            F.cross_entropy(X, T_ALL_IGNORED, reduction="none", **opts), np.zeros(N))
        assert np.isnan(F.nll_loss(X, T_ALL_IGNORED, weight=opts.get("weight")))
    grad = tracejit.grad(lambda x, t: F.cross_entropy(x, t, W, label_smoothing=0.5))
    np.testing.assert_array_equal(_interp(grad)(X, T_ALL_IGNORED), np.zeros_like(X))
    # An empty batch is the same case (torch: nan), for probability targets too.
    assert np.isnan(F.cross_entropy(np.zeros((0, C)), np.zeros(0, np.int64)))
    assert np.isnan(F.cross_entropy(np.zeros((0, C)), np.zeros((0, C))))


def test_cross_entropy_keeps_float32():
    x, w = X.astype(np.float32), W.astype(np.float32)
    for out in (F.cross_entropy(x, T, weight=w, label_smoothing=0.1),
                F.cross_entropy(x, T, weight=W, reduction="none"),
                F.cross_entropy(x, Q.astype(np.float32), weight=w),
                _interp(lambda x: F.cross_entropy(x, T_ALL_IGNORED, weight=W))(x),
                F.nll_loss(x, T, w, reduction="sum")):
        assert np.asarray(out).dtype == np.float32
    np.testing.assert_allclose(F.cross_entropy(x, T, weight=w, label_smoothing=0.1),
                               ref_cross_entropy(X, T, weight=W, eps=0.1), rtol=1e-5)


def test_loss_argument_errors_follow_torch():
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(X, np.array([0, 1, 2, 3, 4, 5, 0]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.nll_loss(X, np.array([0, 1, 2, 3, 4, -1, 0]))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.cross_entropy(X, T, reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(X, T, label_smoothing=1.5)
    with pytest.raises(ValueError, match="ignore_index is not supported"):
        F.cross_entropy(X, Q, ignore_index=1)
    with pytest.raises(ValueError, match="weight tensor should be defined"):
        F.cross_entropy(X, T, weight=np.ones(C + 1))
    with pytest.raises(TypeError, match="must be floating point"):
        F.cross_entropy(X, np.zeros((N, C), np.int64))
    with pytest.raises(ValueError, match="valid value for reduction"):
        nn.CrossEntropyLoss(reduction="mena")


# -- loss modules --------------------------------------------------------------------------------

def test_loss_modules_equal_the_functions_and_hold_no_parameters():
    ce = nn.CrossEntropyLoss(weight=W, ignore_index=3, label_smoothing=0.2, reduction="sum")
    _assert_close(ce(X, T_OTHER_IGNORE),
                  F.cross_entropy(X, T_OTHER_IGNORE, W, ignore_index=3, reduction="sum",
                                  label_smoothing=0.2))
    np.testing.assert_array_equal(ce.weight, W)
    # the class weights are a constant (torch: a buffer), not a parameter an optimizer trains
    assert ce.state_dict() == {} and flatten(ce)[0] == []
    _assert_close(_interp(lambda m, x, t: m(x, t))(ce, X, T_OTHER_IGNORE),
                  ce(X, T_OTHER_IGNORE))
    nll = nn.NLLLoss(weight=W, reduction="none")
    _assert_close(nll(_log_softmax(X, 1), T), F.nll_loss(_log_softmax(X, 1), T, W,
                                                         reduction="none"))
    assert np.isnan(nn.CrossEntropyLoss()(X, T_ALL_IGNORED))
    _assert_close(nn.MSELoss(reduction="sum")(X, 2 * X), (X * X).sum())


def test_loss_modules_match_torch():
    torch = _torch()
    xt, tt = torch.tensor(X), torch.tensor(T)
    ours = nn.CrossEntropyLoss(weight=W, label_smoothing=0.3)
    theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor(W), label_smoothing=0.3)
    _assert_close(ours(X, T), theirs(xt, tt).numpy())
    _assert_close(nn.NLLLoss()(X, T), torch.nn.NLLLoss()(xt, tt).numpy())


# -- ModuleDict ----------------------------------------------------------------------------------

class DictNet(nn.Module):
    """Two heads chosen by name, as multi-task models in PyTorch."""

    def __init__(self, rng, dtype=np.float64):
        self.trunk = nn.Linear(4, 6, rng=rng, dtype=dtype)
        self.heads = nn.ModuleDict({"cls": nn.Linear(6, 3, rng=rng, dtype=dtype),
                                    "aux": nn.Sequential(nn.Tanh(),
                                                         nn.Linear(6, 3, rng=rng, dtype=dtype))})

    def forward(self, x):
        h = F.relu(self.trunk(x))
        return self.heads["cls"](h) + 0.5 * self.heads["aux"](h)


DICT_KEYS = ["trunk.weight", "trunk.bias", "heads.cls.weight", "heads.cls.bias",
             "heads.aux.1.weight", "heads.aux.1.bias"]
XD = R.standard_normal((5, 4))
TD = np.array([0, 2, 1, -100, 2])


def test_module_dict_mapping_interface_follows_torch():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)
    d = nn.ModuleDict(OrderedDict([("b", a), ("a", b)]))
    assert list(d) == ["b", "a"] == d.keys()                   # insertion order, not sorted
    assert d["b"] is a and d.a is b and "a" in d and "z" not in d and len(d) == 2
    d["c"] = c
    d.update([("d", nn.Tanh()), ("b", nn.Sigmoid())])         # pairs; existing keys replaced
    assert [k for k, _ in d.items()] == ["b", "a", "c", "d"]
    assert isinstance(d["b"], nn.Sigmoid) and d.values()[2] is c
    assert d.pop("a") is b and list(d) == ["b", "c", "d"]
    del d["b"]
    assert list(d) == ["c", "d"] and list(d.state_dict()) == ["c.weight", "c.bias"]
    d.update(nn.ModuleDict({"e": nn.Identity()}))
    assert list(d) == ["c", "d", "e"]
    d.clear()
    assert len(d) == 0 and d.state_dict() == {}
    with pytest.raises(KeyError):
        d["missing"]
    with pytest.raises(KeyError, match="contain"):
        d["a.b"] = nn.ReLU()
    with pytest.raises(KeyError, match="attribute 'keys' already exists"):
        d["keys"] = nn.ReLU()
    with pytest.raises(KeyError, match="attribute 'training' already exists"):
        d["training"] = nn.ReLU()
    with pytest.raises(TypeError, match="not a Module"):
        d["x"] = np.ones(2)
    with pytest.raises(ValueError, match="2 is required"):
        d.update([("x", nn.ReLU(), 1)])


def test_module_dict_parameters_state_dict_and_pytree():
    net = DictNet(np.random.default_rng(0))
    assert list(net.state_dict()) == DICT_KEYS
    assert [n for n, _ in net.named_parameters()] == DICT_KEYS
    assert isinstance(net.heads, nn.ModuleDict)
    leaves, tree = flatten(net)
    assert len(leaves) == 6
    new = unflatten(tree, [leaf * 2 for leaf in leaves])
    assert type(new.heads) is nn.ModuleDict and list(new.heads) == ["cls", "aux"]
    np.testing.assert_array_equal(new.heads["cls"].weight, 2 * net.heads["cls"].weight)
    other = DictNet(np.random.default_rng(1))
    other.load_state_dict(net.state_dict())
    np.testing.assert_array_equal(other(XD), net(XD))
    net.eval()
    assert not net.heads.training and not net.heads["aux"][0].training


def test_a_dict_of_modules_assigned_to_an_attribute_becomes_a_module_dict():
    """As a list becomes a ModuleList: its layers are parameters, not (unhashable) statics."""
    class Net(nn.Module):
        def __init__(self):
            self.layers = {"x": nn.Linear(2, 2), "y": nn.Linear(2, 1)}

    net = Net()
    assert isinstance(net.layers, nn.ModuleDict)
    assert list(net.state_dict()) == ["layers.x.weight", "layers.x.bias", "layers.y.weight",
                                      "layers.y.bias"]
    assert len(flatten(net)[0]) == 4


def test_module_dict_state_dict_keys_and_gradients_match_torch():
    """The same model in torch: the same state_dict keys (so checkpoints map one to one) and
    the same gradients of a weighted, smoothed cross-entropy with an ignored target."""
    torch = _torch()
    net = DictNet(np.random.default_rng(0))
    tnet = torch.nn.Module()
    tnet.trunk = torch.nn.Linear(4, 6)
    tnet.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(6, 3),
                                      "aux": torch.nn.Sequential(torch.nn.Tanh(),
                                                                 torch.nn.Linear(6, 3))})
    tnet = tnet.double()
    assert list(tnet.state_dict()) == DICT_KEYS
    tnet.load_state_dict({k: torch.tensor(v) for k, v in net.state_dict().items()})
    w = np.array([1.0, 2.0, 0.5])

    def loss(m, x, t):
        return F.cross_entropy(m(x), t, weight=w, label_smoothing=0.1)

    value, grads = _interp(tracejit.value_and_grad(loss))(net, XD, TD)
    xt = torch.tensor(XD)
    h = torch.relu(tnet.trunk(xt))
    out = tnet.heads["cls"](h) + 0.5 * tnet.heads["aux"](h)
    want = torch.nn.functional.cross_entropy(out, torch.tensor(TD), weight=torch.tensor(w),
                                             label_smoothing=0.1)
    want.backward()
    np.testing.assert_allclose(value, want.item(), rtol=RTOL)
    theirs = dict(tnet.named_parameters())
    for k, g in grads.state_dict().items():
        np.testing.assert_allclose(g, theirs[k].grad.numpy(), rtol=RTOL, atol=1e-12,
                                   err_msg=k)


def test_a_model_holding_a_module_dict_trains_under_a_jitted_step():
    net = DictNet(np.random.default_rng(0), np.float32)
    x, t = XD.astype(np.float32), TD
    opt = optim.SGD(lr=0.2, momentum=0.9)

    @tracejit.jit
    def step(model, state, x, t):
        loss, grads = tracejit.value_and_grad(
            lambda m: F.cross_entropy(m(x), t, label_smoothing=0.05))(model)
        model, state = opt.update(grads, state, model)
        return model, state, loss

    state = opt.init(net)
    losses = []
    for _ in range(30):
        net, state, loss = step(net, state, x, t)
        losses.append(float(loss))
    assert step.trace_count == 1
    assert type(net) is DictNet and isinstance(net.heads, nn.ModuleDict)
    assert list(net.state_dict()) == DICT_KEYS
    assert losses[-1] < 0.5 * losses[0]


# -- Sequential, Module traversal ---------------------------------------------------------------

def _seq():
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.Tanh())


def test_sequential_slicing_iteration_append_and_insert():
    s = _seq()
    assert [type(m) for m in s] == [nn.Linear, nn.ReLU, nn.Linear, nn.Tanh]
    tail = s[2:]
    assert isinstance(tail, nn.Sequential) and len(tail) == 2
    assert list(tail.state_dict()) == ["2.weight", "2.bias"]    # names kept, as torch
    x = R.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(tail(s[:2](x)), s(x), rtol=1e-6)
    assert s[-1] is s.children()[3]
    s.append(nn.Identity())
    assert len(s) == 5 and isinstance(s[4], nn.Identity)
    s.insert(1, nn.Sigmoid())
    assert [type(m) for m in s][:3] == [nn.Linear, nn.Sigmoid, nn.ReLU]
    assert list(s.state_dict()) == ["0.weight", "0.bias", "3.weight", "3.bias"]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(3, 2)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"] and named.act is named[1]
    np.testing.assert_allclose(_interp(lambda m, x: m(x))(named, x), named(x), rtol=1e-6)


def test_sequential_slices_and_inserts_name_like_torch():
    torch = _torch()
    ours, theirs = _seq(), torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                                               torch.nn.Linear(4, 2), torch.nn.Tanh())
    assert list(ours[1:].state_dict()) == list(theirs[1:].state_dict())
    ours.insert(0, nn.Linear(3, 3))
    theirs.insert(0, torch.nn.Linear(3, 3))
    ours.append(nn.Linear(2, 2))
    theirs.append(torch.nn.Linear(2, 2))
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_named_modules_children_apply_and_del_follow_torch():
    net = DictNet(np.random.default_rng(0))
    names = [n for n, _ in net.named_modules()]
    assert names == ["", "trunk", "heads", "heads.cls", "heads.aux", "heads.aux.0",
                     "heads.aux.1"]
    assert list(net.modules())[0] is net and len(list(net.modules())) == 7
    assert [n for n, _ in net.named_children()] == ["trunk", "heads"]

    def zero_linear(m):
        if isinstance(m, nn.Linear):
            m.weight = np.zeros_like(m.weight)

    assert net.apply(zero_linear) is net
    assert not any(p.any() for k, p in net.state_dict().items() if k.endswith("weight"))
    shared = nn.Linear(2, 2)
    twice = nn.Sequential(shared, shared)
    assert len(list(twice.modules())) == 2                     # listed once, as torch
    net.add_module("extra", nn.Linear(1, 1))
    assert "extra.weight" in net.state_dict()
    del net.extra
    assert "extra.weight" not in net.state_dict()
    del net.trunk.bias
    assert "trunk.bias" not in net.state_dict()
    with pytest.raises(KeyError, match="already exists"):
        net.add_module("forward", nn.ReLU())


def test_named_modules_match_torch():
    torch = _torch()
    tnet = torch.nn.Module()
    tnet.trunk = torch.nn.Linear(4, 6)
    tnet.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(6, 3),
                                      "aux": torch.nn.Sequential(torch.nn.Tanh(),
                                                                 torch.nn.Linear(6, 3))})
    ours = DictNet(np.random.default_rng(0))
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in tnet.named_modules()]


def test_identity_softmax_and_log_softmax_modules():
    np.testing.assert_array_equal(nn.Identity(54, unused="x")(X), X)
    _assert_close(nn.Softmax(dim=1)(X), np.exp(_log_softmax(X, 1)))
    _assert_close(nn.LogSoftmax(dim=-1)(X), _log_softmax(X, 1))
    _assert_close(_interp(lambda m, x: m(x))(nn.LogSoftmax(0), X), _log_softmax(X, 0))
