"""Buffers (``Module.register_buffer``) and the normalization layers: BatchNorm1d/2d,
GroupNorm, InstanceNorm2d and their functions.

A buffer is model state that is no parameter: a leaf of the Module pytree (jit passes it,
writes into it reach the caller's array) that ``grad`` gives zeros, ``parameters()`` leaves
out and ``state_dict`` keeps. BatchNorm updates its running statistics in place in training
mode, as torch does; the update must be seen after a jitted step whether the model is an
argument (``model, state, loss = step(model, state, x)``), read from a closure, or held by a
jitted method's ``self``.

NumPy transcriptions of torch's formulas always run; torch itself (forward, gradients and
running statistics, float64 and float32) where it is installed. Jitted checks run on the
reference interpreter, one train step compiled."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit import nn, optim
from tracejit.nn import functional as F
from tracejit.tracer.pytree import flatten, state_leaves

RNG = np.random.default_rng(0)
X2 = RNG.standard_normal((4, 3))             # (N, C)
X4 = RNG.standard_normal((3, 4, 2, 3))       # (N, C, H, W)


def _interp(fn):
    return tracejit.jit(fn, backend="interpreter")


# -- NumPy references written from torch's documentation ----------------------------------------

def ref_batch_norm(x, rm, rv, w, b, momentum, eps=1e-5):
    """Training-mode batch norm: the output, and the running stats torch keeps after it."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    n = x.size // x.shape[1]
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    out = out * w.reshape(shape) + b.reshape(shape)
    return out, (1 - momentum) * rm + momentum * mean, \
        (1 - momentum) * rv + momentum * var * n / (n - 1)


def ref_group_norm(x, groups, w, b, eps=1e-5):
    g = x.reshape(x.shape[0], groups, -1)
    out = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + eps))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return out.reshape(x.shape) * w.reshape(shape) + b.reshape(shape)


# -- buffers ---------------------------------------------------------------------------------

class Scaled(nn.Module):
    def __init__(self):
        self.weight = np.array([1.0, 2.0])
        self.register_buffer("scale", np.array([3.0, 4.0]))
        self.register_buffer("scratch", np.zeros(2), persistent=False)
        self.register_buffer("empty", None)
        self.inner = nn.BatchNorm1d(2, dtype=np.float64)

    def forward(self, x):
        return self.inner(x * self.weight * self.scale)


def test_buffers_are_state_not_parameters():
    m = Scaled()
    assert [n for n, _ in m.named_parameters()] == ["weight", "inner.weight", "inner.bias"]
    assert [n for n, _ in m.named_buffers()] == [
        "scale", "scratch", "inner.running_mean", "inner.running_var",
        "inner.num_batches_tracked"]
    assert len(m.buffers()) == 5 and m.empty is None
    # torch's order: each module's parameters, then its persistent buffers, then submodules
    assert list(m.state_dict()) == ["weight", "scale", "inner.weight", "inner.bias",
                                    "inner.running_mean", "inner.running_var",
                                    "inner.num_batches_tracked"]
    sd = m.state_dict()
    sd["scale"] = np.array([5.0, 6.0])
    sd["inner.num_batches_tracked"] = np.array(7)
    m2 = Scaled().load_state_dict(sd)
    assert m2.scale.tolist() == [5.0, 6.0] and m2.inner.num_batches_tracked == 7
    assert m2.inner.num_batches_tracked.dtype == np.int64
    m2.scale = np.array([1.0, 1.0])                  # an array assigned: still a buffer
    assert "scale" in dict(m2.named_buffers()) and "scale" not in dict(m2.named_parameters())
    # the buffers are the pytree's state: the leaves grad gives zeros
    leaves, _ = flatten(m)
    names = ["weight", "scale", "scratch", "inner.weight", "inner.bias",
             "inner.running_mean", "inner.running_var", "inner.num_batches_tracked"]
    assert len(leaves) == len(names)
    assert sorted(state_leaves(m)) == [i for i, n in enumerate(names)
                                       if n in dict(m.named_buffers())]
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", np.zeros(1))
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("weight", np.zeros(1))
    with pytest.raises(TypeError, match="buffer 'c'"):
        m.register_buffer("c", [1.0])
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'scale'"):
        m.scale = 3


def test_grad_gives_buffers_zeros_and_a_model_with_int_buffers_differentiates():
    m = Scaled()
    g = tracejit.grad(lambda m: (m(X2[:, :2]) ** 2).sum())(m)
    assert g.scale.tolist() == [0.0, 0.0] and g.inner.running_mean.tolist() == [0.0, 0.0]
    assert g.inner.num_batches_tracked == 0 and g.inner.num_batches_tracked.dtype == np.int64
    assert np.abs(g.weight).sum() > 0
    # the forward pass grad ran counted one batch into the caller's model, as torch's does
    assert m.inner.num_batches_tracked == 1


# -- batch norm against NumPy -------------------------------------------------------------------

def _check_bn_state(bn, rm, rv, count):
    np.testing.assert_allclose(bn.running_mean, rm, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(bn.running_var, rv, rtol=1e-12, atol=1e-12)
    assert int(bn.num_batches_tracked) == count


def test_batch_norm_eager_training_and_eval_match_numpy():
    bn = nn.BatchNorm2d(4, momentum=0.3, dtype=np.float64)
    bn.weight, bn.bias = RNG.standard_normal(4), RNG.standard_normal(4)
    rm, rv = bn.running_mean.copy(), bn.running_var.copy()
    for k in range(2):
        out, rm, rv = ref_batch_norm(X4 + k, rm, rv, bn.weight, bn.bias, 0.3)
        np.testing.assert_allclose(bn(X4 + k), out, rtol=1e-12, atol=1e-12)
    _check_bn_state(bn, rm, rv, 2)
    bn.eval()
    want = ((X4 - rm.reshape(1, -1, 1, 1)) / np.sqrt(rv.reshape(1, -1, 1, 1) + 1e-5)
            * bn.weight.reshape(1, -1, 1, 1) + bn.bias.reshape(1, -1, 1, 1))
    np.testing.assert_allclose(bn(X4), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_interp(lambda x: bn(x))(X4), want, rtol=1e-12, atol=1e-12)
    _check_bn_state(bn, rm, rv, 2)                   # eval mode leaves the statistics


def test_batch_norm_momentum_none_is_a_cumulative_average():
    bn = nn.BatchNorm1d(3, momentum=None, dtype=np.float64)
    batches = [X2, X2 * 2 + 1, X2 - 3]
    for x in batches:
        bn(x)
    n = len(X2)
    np.testing.assert_allclose(bn.running_mean, np.mean([x.mean(0) for x in batches], 0),
                               rtol=1e-12, atol=1e-12)
    # (the first batch, at factor 1 / 1, replaces the initial statistics whole)
    np.testing.assert_allclose(bn.running_var, np.mean([x.var(0) * n / (n - 1)
                                                        for x in batches], 0),
                               rtol=1e-12, atol=1e-12)
    assert bn.num_batches_tracked == 3


def _train_step(opt):
    def step(model, state, x):
        loss, grads = tracejit.value_and_grad(lambda m: (m(x) ** 3).sum())(model)
        model, state = opt.update(grads, state, model)
        return model, state, loss
    return step


def test_running_stats_after_a_jitted_step_with_the_model_an_argument():
    bn = nn.BatchNorm1d(3, dtype=np.float64)
    opt = optim.SGD(lr=0.1)
    state = opt.init(bn)
    step = tracejit.jit(_train_step(opt))              # compiled, once
    rm, rv = bn.running_mean.copy(), bn.running_var.copy()
    model = bn
    for k in range(3):
        x = X2 * (k + 1)
        _, rm, rv = ref_batch_norm(x, rm, rv, model.weight, model.bias, 0.1)
        model, state, _ = step(model, state, x)
        _check_bn_state(model, rm, rv, k + 1)
        # the call's writes reached the caller's arrays too, as eager torch's would
        _check_bn_state(bn, rm, rv, k + 1) if k == 0 else None
    assert isinstance(model.num_batches_tracked, np.ndarray)


def test_running_stats_after_a_jitted_step_reading_the_model_from_a_closure():
    bn = nn.BatchNorm1d(3, dtype=np.float64)

    @_interp
    def forward(x):
        return bn(x).sum()

    @_interp
    def grads(x):
        return tracejit.grad(lambda m: (m(x) ** 2).sum())(bn).weight

    rm, rv = bn.running_mean.copy(), bn.running_var.copy()
    for k, f in enumerate([forward, forward, grads]):
        _, rm, rv = ref_batch_norm(X2 + k, rm, rv, bn.weight, bn.bias, 0.1)
        f(X2 + k)
        _check_bn_state(bn, rm, rv, k + 1)


def test_running_stats_when_grad_differentiates_a_function_closing_over_the_model():
    # grad with respect to the input (a saliency map) of a closure's model in training mode,
    # a layer called twice: each call sees the statistics the one before it wrote
    bn, ref = nn.BatchNorm1d(3, dtype=np.float64), nn.BatchNorm1d(3, dtype=np.float64)

    def saliency(x):
        return tracejit.grad(lambda x: (bn(bn(x)) ** 3).sum())(x)

    for k, f in enumerate([saliency, _interp(saliency), _interp(saliency)]):
        f(X2 + k)
        ref(ref(X2 + k))
        _check_bn_state(bn, ref.running_mean, ref.running_var, 2 * (k + 1))


class Trainer:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(3, 3, dtype=np.float64),
                                   nn.BatchNorm1d(3, dtype=np.float64))

    @tracejit.jit
    def loss(self, x):
        return (self.model(x) ** 2).mean()


def test_running_stats_after_a_jitted_method_of_an_object_holding_the_model():
    t = Trainer()
    bn = t.model[1]
    rm, rv = bn.running_mean.copy(), bn.running_var.copy()
    for k in range(2):
        h = X2 @ t.model[0].weight.T + t.model[0].bias
        _, rm, rv = ref_batch_norm(h, rm, rv, bn.weight, bn.bias, 0.1)
        t.loss(X2)
        _check_bn_state(t.model[1], rm, rv, k + 1)


class Holder:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(3, 3, dtype=np.float64),
                                   nn.BatchNorm1d(3, dtype=np.float64))

    def loss(self, x):
        return (self.model(x) ** 2).mean()


def test_running_stats_and_weights_of_jit_model_and_jit_of_a_bound_method():
    # jit(model) and jit(obj.loss) read the model's arrays at every call, as a closure's:
    # (baked in, an in-place change of a weight was not seen, and BatchNorm could not write)
    alone, holder = Holder().model, Holder()
    for model, f, is_loss in [(alone, _interp(alone), False),
                              (holder.model, _interp(holder.loss), True)]:
        ref = nn.Sequential(nn.Linear(3, 3, dtype=np.float64),
                            nn.BatchNorm1d(3, dtype=np.float64)).load_state_dict(
            model.state_dict())
        for k in range(2):
            f(X2 + k)
            ref(X2 + k)
            _check_bn_state(model[1], ref[1].running_mean, ref[1].running_var, k + 1)
        model[0].weight[...] = 0.5
        ref[0].weight[...] = 0.5
        model.eval()
        ref.eval()
        want = (ref(X2) ** 2).mean() if is_loss else ref(X2)
        np.testing.assert_allclose(f(X2), want, rtol=1e-12, atol=1e-12)


def test_batch_of_one_in_training_is_an_error_as_in_torch():
    bn = nn.BatchNorm1d(3)
    x = np.ones((1, 3), np.float32)
    for f in (bn, _interp(lambda x: bn(x))):
        with pytest.raises(ValueError, match="Expected more than 1 value per channel when "
                                             r"training, got input size \[1, 3\]"):
            f(x)
    bn.eval()
    assert bn(x).shape == (1, 3)                      # eval mode: the running statistics
    nn.BatchNorm2d(3)(np.ones((1, 3, 2, 1), np.float32))   # 2 values per channel: fine
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(np.ones((2, 3, 2), np.float32))
    with pytest.raises(ValueError, match="running_mean should contain 3 elements not 4"):
        nn.BatchNorm1d(4)(np.ones((2, 3), np.float32))


def test_group_and_instance_norm_match_numpy():
    w, b = RNG.standard_normal(4), RNG.standard_normal(4)
    np.testing.assert_allclose(F.group_norm(X4, 2, w, b), ref_group_norm(X4, 2, w, b),
                               rtol=1e-12, atol=1e-12)
    gn = nn.GroupNorm(2, 4, dtype=np.float64)
    gn.weight, gn.bias = w, b
    np.testing.assert_allclose(_interp(lambda x: gn(x))(X4), ref_group_norm(X4, 2, w, b),
                               rtol=1e-12, atol=1e-12)
    # instance norm: group norm with one channel a group
    inorm = nn.InstanceNorm2d(4, affine=True, dtype=np.float64)
    inorm.weight, inorm.bias = w, b
    np.testing.assert_allclose(inorm(X4), ref_group_norm(X4, 4, w, b), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(inorm(X4[0]), ref_group_norm(X4[:1], 4, w, b)[0], rtol=1e-12,
                               atol=1e-12)
    with pytest.raises(ValueError, match="divisible by num_groups"):
        F.group_norm(X4, 3)
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)


# -- against torch -----------------------------------------------------------------------------

class Norms(nn.Module):
    """Every normalization layer in one model (few traces): BatchNorm2d, GroupNorm,
    InstanceNorm2d with running stats, BatchNorm1d on 3-D and (momentum=None) 2-D input."""

    def __init__(self, dtype):
        self.bn2 = nn.BatchNorm2d(4, momentum=0.2, dtype=dtype)
        self.gn = nn.GroupNorm(2, 4, dtype=dtype)
        self.inorm = nn.InstanceNorm2d(4, affine=True, track_running_stats=True, dtype=dtype)
        self.bn1 = nn.BatchNorm1d(4, dtype=dtype)
        self.bn0 = nn.BatchNorm1d(4, momentum=None, dtype=dtype)
        for m in (self.bn2, self.gn, self.inorm, self.bn1, self.bn0):
            m.weight = RNG.uniform(0.5, 1.5, 4).astype(dtype)
            m.bias = RNG.standard_normal(4).astype(dtype)

    def forward(self, x):
        h = self.inorm(self.gn(self.bn2(x)))
        h = self.bn1(h.reshape(h.shape[0], 4, -1))
        return self.bn0(h.mean(axis=2) * h.max(axis=2))


def _torch_norms(ours):
    torch = pytest.importorskip("torch")
    t = torch.nn.ModuleDict({
        "bn2": torch.nn.BatchNorm2d(4, momentum=0.2), "gn": torch.nn.GroupNorm(2, 4),
        "inorm": torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
        "bn1": torch.nn.BatchNorm1d(4), "bn0": torch.nn.BatchNorm1d(4, momentum=None)})
    dtype = {np.float64: torch.float64, np.float32: torch.float32}[ours.bn2.weight.dtype.type]
    t = t.to(dtype)
    t.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})

    def forward(x):
        h = t["inorm"](t["gn"](t["bn2"](x)))
        h = t["bn1"](h.reshape(h.shape[0], 4, -1))
        return t["bn0"](h.mean(dim=2) * h.amax(dim=2))
    return torch, t, forward


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-4)])
def test_norm_layers_forward_gradients_and_running_stats_match_torch(dtype, tol):
    model = Norms(dtype)
    torch, t, t_forward = _torch_norms(model)
    x = X4.astype(dtype)
    cube = (np.arange(12).reshape(3, 4) % 5 - 2).astype(dtype)

    def loss(m, x):
        return (m(x) ** 3 * cube).sum()

    def close(a, b, what, scale=1.0):
        b = b.detach().numpy()
        err = np.abs(np.asarray(a) - b).max()
        assert err <= tol * max(scale, float(np.abs(b).max())), (what, err)

    def torch_step(x):
        xt = torch.tensor(x, requires_grad=True)
        t.zero_grad()
        value = (t_forward(xt) ** 3 * torch.tensor(cube)).sum()
        value.backward()
        # float32 gradients through four normalizations cancel: compared at the scale of
        # the largest one
        scale = max([1.0] + [float(g.abs().max()) for g in [xt.grad] + [
            p.grad for p in t.parameters()]])
        return value, xt.grad, scale

    # eager forward and grad (grad compiles its trace) ...
    value, (g_model, g_x) = tracejit.value_and_grad(loss, argnums=(0, 1))(model, x)
    tv, tgx, scale = torch_step(x)
    close(value, tv, "loss")
    close(g_x, tgx, "d loss / d x", scale)
    for name, p in t.named_parameters():
        close(dict(g_model.named_parameters())[name], p.grad, f"d loss / d {name}", scale)
    for name, b in t.named_buffers():
        close(dict(model.named_buffers())[name], b, name)
    # ... then under jit, the model an argument (interpreter), its statistics written back
    step = _interp(lambda m, x: tracejit.value_and_grad(loss, argnums=(0, 1))(m, x))
    for k in range(2):
        x_k = (X4 * (k + 2)).astype(dtype)
        value, (g_model, g_x) = step(model, x_k)
        tv, tgx, scale = torch_step(x_k)
        close(value, tv, "loss")
        close(g_x, tgx, "d loss / d x", scale)
        for name, p in t.named_parameters():
            close(dict(g_model.named_parameters())[name], p.grad, f"d loss / d {name}",
                  scale)
        for name, b in t.named_buffers():
            close(dict(model.named_buffers())[name], b, name)
    # eval mode: the running statistics
    model.eval()
    t.eval()
    close(_interp(lambda x: model(x))(x), t_forward(torch.tensor(x)), "eval forward")
    close(F.batch_norm(x, model.bn2.running_mean, model.bn2.running_var, model.bn2.weight,
                       model.bn2.bias, False), t["bn2"](torch.tensor(x)), "F.batch_norm")


def test_optimizers_leave_buffers_unchanged_sgd():
    bn = nn.BatchNorm1d(3)
    opt = optim.SGD(lr=0.1, momentum=0.9)
    state = opt.init(bn)
    step = _interp(_train_step(opt))
    x = X2.astype(np.float32)
    model, state, _ = step(bn, state, x)
    # the step's forward pass updated the statistics; the optimizer left them so
    np.testing.assert_array_equal(model.running_mean, bn.running_mean)
    np.testing.assert_array_equal(model.running_var, bn.running_var)
    assert model.num_batches_tracked == 1 and model.num_batches_tracked.dtype == np.int64


@pytest.mark.parametrize("make", [lambda: optim.Adam(lr=0.1),
                                  lambda: optim.AdamW(lr=0.1),
                                  lambda: optim.SGD(lr=0.1, weight_decay=0.1),
                                  lambda: optim.RMSprop(lr=0.1, weight_decay=0.1),
                                  lambda: optim.ParamGroups({"all": optim.Adam(lr=0.1)},
                                                            label=lambda path, p: "all")])
def test_optimizers_leave_buffers_unchanged(make):
    bn = nn.BatchNorm1d(3)
    opt = make()
    state = opt.init(bn)
    model, state, _ = _interp(_train_step(opt))(bn, state, X2.astype(np.float32))
    np.testing.assert_array_equal(model.running_mean, bn.running_mean)
    assert model.num_batches_tracked.dtype == np.int64 and model.num_batches_tracked == 1


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_functions_match_torch(dtype, tol):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x, w, b = X4.astype(dtype), RNG.standard_normal(4).astype(dtype), \
        RNG.standard_normal(4).astype(dtype)
    rm, rv = RNG.standard_normal(4).astype(dtype), RNG.uniform(0.5, 2, 4).astype(dtype)
    ours, theirs = (rm.copy(), rv.copy()), (torch.tensor(rm), torch.tensor(rv))
    T = torch.tensor

    def close(a, b):
        np.testing.assert_allclose(a, b.numpy(), rtol=tol, atol=tol)
    for training in (True, False):
        close(F.batch_norm(x, *ours, w, b, training, 0.3, 1e-3),
              tf.batch_norm(T(x), *theirs, T(w), T(b), training, 0.3, 1e-3))
        close(ours[0], theirs[0])
        close(ours[1], theirs[1])
        close(F.instance_norm(x[:, :, :, :1], *ours, w, b, training, 0.2),
              tf.instance_norm(T(x[:, :, :, :1]), *theirs, T(w), T(b), training, 0.2))
        close(ours[0], theirs[0])
        close(ours[1], theirs[1])
    close(F.group_norm(x, 2, w, b, 1e-3), tf.group_norm(T(x), 2, T(w), T(b), 1e-3))
    close(F.group_norm(x[:, :, 0], 4), tf.group_norm(T(x[:, :, 0]), 4))
    close(F.batch_norm(x[:, :, 0, 0], None, None, training=True),
          tf.batch_norm(T(x[:, :, 0, 0]), None, None, training=True))
