"""Bugs found around nn model state (buffers, BatchNorm's running statistics) by writing
training code as a PyTorch user would, each pinned by the test named after the behaviour.

NumPy references always run; torch comparisons where torch is installed. Jitted checks run
on the reference interpreter (no compilation)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracejit
from tracejit import nn, optim
from tracejit.tracer import Tracer
from tracejit.tracer.errors import UnsupportedError

RNG = np.random.default_rng(7)
XS = [RNG.standard_normal((4, 3)) for _ in range(3)]


@pytest.fixture(autouse=True)
def _interpreted(monkeypatch):
    # eager grad, autocast and jitted methods run through jit: on the reference interpreter
    monkeypatch.setattr(tracejit.config, "backend", "interpreter")


def _interp(fn):
    return tracejit.jit(fn, backend="interpreter")


class Tracking(nn.Module):
    """A custom Module that keeps statistics in buffers, updated in place in its forward as
    torch code writes it."""

    def __init__(self, how):
        self.how = how
        self.w = np.ones(3)
        self.register_buffer("buf", np.zeros(3))
        self.register_buffer("count", np.zeros((), np.int64))

    def forward(self, x):
        if self.how == "iadd":
            self.buf += x.mean(0)
        elif self.how == "setitem":
            self.buf[...] = x.mean(0)
        elif self.how == "slice":
            self.buf[:] = self.buf * 0.5 + x.mean(0)
        elif self.how == "scale":
            self.buf *= 0.9          # no traced operand: NumPy did it once, at trace time
            self.buf += 1
        elif self.how == "fill":
            self.buf.fill(2.0)
        elif self.how == "out":
            np.add(self.buf, x.mean(0), out=self.buf)
        if self.training:
            self.count += 1
        return x * self.w + self.buf


def _calls(mode, m):
    if mode == "closure":
        return _interp(lambda x: m(x))
    if mode == "jit(model)":
        return _interp(m)
    # grad of a function that closes over the model (a saliency map): the state is written
    # all the same, as torch's forward writes it
    return lambda x: tracejit.grad(lambda x: m(x).sum())(x)


@pytest.mark.parametrize("mode", ["closure", "jit(model)", "grad"])
@pytest.mark.parametrize("how", ["iadd", "setitem", "slice", "scale", "fill", "out"])
def test_a_custom_forward_updating_its_buffers_in_place_works_for_a_closure_model(how, mode):
    # x += v, x[...] = v, x *= c, x.fill(c), out=x and self.count += 1 on a buffer of a model
    # jit reads from outside: refused with misleading messages (a "constant made by np.zeros",
    # a "NumPy array cannot hold a traced value"), an internal error under grad (out=), and
    # the count or the buffer was changed once by NumPy at trace time before the refusal
    ref, m = Tracking(how), Tracking(how)
    call = _calls(mode, m)
    for x in XS:
        want = ref(x)
        got = call(x)
        if mode != "grad":
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(m.buf, ref.buf, rtol=1e-12, atol=1e-12)
        assert m.count == ref.count
    assert type(m.buf) is np.ndarray and type(m.count) is np.ndarray
    assert m.count.dtype == np.int64 and m.count == len(XS)
    m.eval()
    ref.eval()
    if mode != "grad":
        np.testing.assert_allclose(call(XS[0]), ref(XS[0]), rtol=1e-12, atol=1e-12)
    assert m.count == ref.count == len(XS)


class Rebinding(nn.Module):
    def __init__(self):
        self.register_buffer("ema", np.zeros(3))

    def forward(self, x):
        self.ema = self.ema * 0.9 + x.mean(0)         # a new array, not the buffer's
        return x - self.ema


@pytest.mark.parametrize("mode", ["closure", "jit(model)", "grad"])
def test_rebinding_a_buffer_of_a_closure_model_under_jit_is_a_clear_error(mode):
    # was silent: the user's model kept the traced value (an escaped tracer), the result
    # was wrong, and the next use failed far from the line
    m = Rebinding()
    with pytest.raises(UnsupportedError, match=r"buffer Rebinding\.ema.*\n.*self\.ema = "
                                               r"self\.ema.*\n.*self\.ema\[\.\.\.\] = new"):
        _calls(mode, m)(XS[0])
    assert type(m.ema) is np.ndarray and not m.ema.any()
    # eagerly it is torch's rebinding
    m(XS[0])
    np.testing.assert_allclose(m.ema, XS[0].mean(0))


OPTIMIZERS = {
    "SGD": lambda: optim.SGD(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "Adam": lambda: optim.Adam(lr=0.01, amsgrad=True, weight_decay=0.1),
    "AdamW": lambda: optim.AdamW(lr=0.01),
    "RMSprop": lambda: optim.RMSprop(lr=0.01, momentum=0.5, centered=True),
    "Adagrad": lambda: optim.Adagrad(lr=0.1, initial_accumulator_value=0.1),
    "Adamax": lambda: optim.Adamax(lr=0.01),
    "NAdam": lambda: optim.NAdam(lr=0.01),
    "RAdam": lambda: optim.RAdam(lr=0.01),
    "ParamGroups": lambda: optim.ParamGroups(
        {"decay": optim.AdamW(lr=0.01), "no_decay": optim.Adam(lr=0.01)},
        label=lambda path, p: "no_decay" if p.ndim == 1 else "decay"),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_an_eager_optimizer_step_on_a_batchnorm_model_warns_nothing_and_moves_no_buffer(name):
    # Adam & co. computed their step on num_batches_tracked too (an int64 leaf: eps cast to
    # 0, a 0 / 0): "RuntimeWarning: invalid value encountered in scalar divide" at every
    # eager step (an error under np.seterr(all="raise")), and kept moments for each buffer
    model = nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.BatchNorm1d(4, dtype=np.float64),
                          nn.Linear(4, 2, dtype=np.float64))
    opt = OPTIMIZERS[name]()
    state = opt.init(model)
    n_params = len(model.parameters())
    held = [v for v in state.values() if isinstance(v, list)] if name != "ParamGroups" else \
        [v for s in state.values() for v in s.values() if isinstance(v, list)]
    assert all(len(v) <= n_params for v in held)        # no state for the buffers
    x = XS[0]
    ref = nn.BatchNorm1d(4, dtype=np.float64)
    value_and_grad = _interp(tracejit.value_and_grad(lambda m, x: (m(x) ** 2).mean()))
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(2):
            ref((x + k) @ model[0].weight.T + model[0].bias)
            loss, grads = value_and_grad(model, x + k)
            h0 = model[0].weight
            model, state = opt.update(grads, state, model)
            bn = model[1]
            np.testing.assert_allclose(bn.running_mean, ref.running_mean, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(bn.running_var, ref.running_var, rtol=1e-12, atol=1e-12)
            assert type(bn.num_batches_tracked) is np.ndarray
            assert bn.num_batches_tracked.dtype == np.int64 and bn.num_batches_tracked == k + 1
            assert not np.array_equal(model[0].weight, h0)      # the parameters did move


def _eval_model():
    model = nn.Sequential(nn.Linear(3, 2, dtype=np.float64), nn.BatchNorm1d(2, dtype=np.float64))
    model(XS[1])
    model.eval()
    return model


def test_jacobians_and_hessian_of_a_model_with_batchnorm_give_its_buffers_zeros():
    # jacrev, jacfwd and hessian with respect to any model holding a BatchNorm were refused
    # (its int64 num_batches_tracked: "cast it with ....astype(np.float64)"), in eval mode
    # too; grad gives buffers zeros, and so do they now (JAX: float0 zeros for int leaves)
    model = _eval_model()
    bn = model[1]
    x = XS[0]
    scale = bn.weight / np.sqrt(bn.running_var + bn.eps)
    # y[n, i] = (x[n] @ W[i] + b[i] - rm[i]) * scale[i] + beta[i]
    want_w = np.einsum("ij,nk,i->nijk", np.eye(2), x, scale)
    for jac in (tracejit.jacrev, tracejit.jacfwd):
        J = jac(lambda m: m(x))(model)
        np.testing.assert_allclose(J[0].weight, want_w, rtol=1e-12, atol=1e-15)
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            z = getattr(J[1], name)
            assert z.shape == (4, 2) + getattr(bn, name).shape and not z.any()
            assert z.dtype == getattr(bn, name).dtype
    jm, jx = tracejit.jacrev(lambda m, x: m(x), argnums=(0, 1))(model, x)
    np.testing.assert_allclose(jx, np.einsum("ni,ij,nm->nimj", scale[None] * np.ones((4, 1)),
                                             model[0].weight, np.eye(4)), rtol=1e-12, atol=1e-12)
    H = tracejit.hessian(lambda m: (m(x) ** 2).sum())(model)
    # d2/dW2 of sum((x W^T + b - rm) * s)^2 = 2 s_i^2 x^T x on the diagonal blocks
    want_h = 2 * np.einsum("ij,i,kl->ikjl", np.eye(2), scale ** 2, x.T @ x)
    np.testing.assert_allclose(H[0].weight[0].weight, want_h, rtol=1e-10, atol=1e-12)
    assert not H[1].num_batches_tracked[1].running_mean.any()
    assert bn.num_batches_tracked == 1                       # eval mode: untouched


def test_jacobians_of_a_model_in_training_mode_are_refused_before_touching_its_statistics():
    model = _eval_model().train()
    before = {k: v.copy() for k, v in model.state_dict().items()}
    for jac in (tracejit.jacrev, tracejit.jacfwd, tracejit.hessian):
        with pytest.raises(UnsupportedError, match="running_mean"):
            jac(lambda m: (m(XS[0]) ** 2).sum())(model)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v, before[k])


def test_mixed_precision_training_of_a_model_with_batchnorm_updates_its_statistics():
    # autocast refused any write into a model's state: a forward pass of a CNN with
    # BatchNorm in training mode under autocast (argument, closure, or inside a jitted
    # grad step) raised "writes into its argument ... under a transform"
    def make():
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    x = XS[0].astype(np.float32)
    model, ref = make(), make()
    ref.load_state_dict(model.state_dict())
    low = tracejit.amp.autocast(lambda m, x: m(x), dtype="float16")
    closure = tracejit.amp.autocast(lambda x: model(x), dtype="float16")

    @_interp
    def step(m, x):
        return tracejit.grad(lambda m: (low(m, x) ** 2).mean())(m)

    jitted = _interp(low)
    calls = [lambda x: low(model, x), lambda x: jitted(model, x), closure, _interp(closure),
             lambda x: step(model, x)]
    for k, call in enumerate(calls):
        out, want = call(x + k), ref(x + k)
        if k < 4:
            assert out.dtype == np.float32
            np.testing.assert_allclose(out, want, atol=3e-3)
        bn, rbn = model[1], ref[1]
        np.testing.assert_allclose(bn.running_mean, rbn.running_mean, atol=1e-3)
        np.testing.assert_allclose(bn.running_var, rbn.running_var, atol=1e-3)
        assert bn.running_mean.dtype == np.float32 and bn.num_batches_tracked.dtype == np.int64
        assert bn.num_batches_tracked == k + 1


def test_a_checkpointed_block_with_batchnorm_trains_and_updates_its_statistics_once():
    # checkpoint refused a write into a model's state ("writes into its argument ... under
    # a transform"); recomputing the block for the backward pass must not count it twice
    def make():
        return nn.Sequential(nn.Linear(3, 3, dtype=np.float64), nn.BatchNorm1d(3, dtype=np.float64),
                             nn.Tanh(), nn.Linear(3, 2, dtype=np.float64))
    model, ref = make(), make()
    ref.load_state_dict(model.state_dict())
    x = XS[0]

    def loss(m):
        h = tracejit.checkpoint(lambda m, x: m[:3](x))(m, x)
        return (m[3](h) ** 2).sum()

    def closure_loss(x):
        return (tracejit.checkpoint(lambda x: model(x))(x) ** 2).sum()

    for k, g in enumerate([tracejit.grad(loss), _interp(tracejit.grad(loss))]):
        got = g(model)
        want = tracejit.grad(lambda m: (m(x) ** 2).sum())(ref)
        for a, b in zip(got.parameters(), want.parameters()):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(model[1].running_mean, ref[1].running_mean, rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(model[1].running_var, ref[1].running_var, rtol=1e-12,
                                   atol=1e-12)
        assert model[1].num_batches_tracked == k + 1
    _interp(tracejit.grad(closure_loss))(x)
    ref(x)
    np.testing.assert_allclose(model[1].running_mean, ref[1].running_mean, rtol=1e-12, atol=1e-12)
    assert model[1].num_batches_tracked == 3


class Trainer:
    def __init__(self, model):
        self.model = model

    @tracejit.jit
    def predict(self, x):
        return self.model(x)


def test_a_jitted_method_keeps_the_users_model_object_so_eval_and_settings_reach_it():
    # every call of a jitted method set self.model to a rebuilt copy of the model (its
    # arrays shared): the user's own reference no longer reached it, so model.eval(),
    # bn.momentum = ..., bn.eps = ... or load_state_dict on it were silently ignored
    model = nn.Sequential(nn.Linear(3, 3, dtype=np.float64), nn.BatchNorm1d(3, dtype=np.float64),
                          nn.Dropout(0.5))
    bn = model[1]
    trainer = Trainer(model)
    trainer.predict(XS[0])
    assert trainer.model is model and trainer.model[1] is bn
    bn.momentum = None                       # a cumulative average from here on
    ref = nn.BatchNorm1d(3, dtype=np.float64, momentum=None)
    ref.load_state_dict(bn.state_dict())
    h = XS[1] @ model[0].weight.T + model[0].bias
    ref(h)
    trainer.predict(XS[1])
    np.testing.assert_allclose(bn.running_mean, ref.running_mean, rtol=1e-12, atol=1e-12)
    model.eval()
    # no dropout
    np.testing.assert_allclose(trainer.predict(XS[2]), model(XS[2]), rtol=1e-12, atol=1e-12)
    state = {k: v + 1.0 for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    np.testing.assert_allclose(trainer.predict(XS[2]), model(XS[2]), rtol=1e-12, atol=1e-12)


def test_two_models_sharing_a_batchnorm_train_in_one_module_list_and_the_error_says_so():
    # passed as two arguments the shared running statistics are two leaves, refused with
    # "Pass a copy of one of them", which would split the layer: the error names the way
    def make(bn):
        return nn.Sequential(nn.Linear(3, 3, dtype=np.float64), bn)
    bn = nn.BatchNorm1d(3, dtype=np.float64)
    a, b = make(bn), make(bn)
    ref = nn.BatchNorm1d(3, dtype=np.float64)
    x = XS[0]
    both = _interp(lambda ab, x: ab[0](x).sum() + ab[1](x).sum())
    both(nn.ModuleList([a, b]), x)
    ref(x @ a[0].weight.T + a[0].bias)
    ref(x @ b[0].weight.T + b[0].bias)
    np.testing.assert_allclose(bn.running_mean, ref.running_mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(bn.running_var, ref.running_var, rtol=1e-12, atol=1e-12)
    assert bn.num_batches_tracked == 2
    with pytest.raises(ValueError, match=r"nn\.ModuleList\(\[a, b\]\)"):
        _interp(lambda a, b, x: a(x).sum() + b(x).sum())(a, b, x)
    assert bn.num_batches_tracked == 2


def test_grad_scaler_trains_a_model_with_batchnorm():
    # GradScaler.unscale refused the int64 zero "gradient" grad gives num_batches_tracked
    # ("a gradient has dtype int64; gradients are floats"): any AMP loop over a model with
    # BatchNorm failed, the functional jitted step and the PyTorch-style eager one alike
    def make():
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    scaler, opt = tracejit.amp.GradScaler(), optim.SGD(lr=0.1, momentum=0.9)
    x = XS[0].astype(np.float32)

    @_interp
    def step(model, opt_state, scaler_state, x):
        grads = tracejit.grad(lambda m: scaler.scale((m(x) ** 2).mean(), scaler_state))(model)
        grads, found_inf = scaler.unscale(grads, scaler_state)
        model, opt_state = scaler.step(opt, grads, opt_state, model, found_inf)
        return model, opt_state, scaler.update(scaler_state, found_inf)

    model = make()
    opt_state, scaler_state = opt.init(model), scaler.init()
    eager = make()
    eager_state = opt.init(eager)
    grad_fn = _interp(tracejit.grad(lambda m, x, s: scaler.scale((m(x) ** 2).mean(), s)))
    for k in range(2):
        ref = nn.BatchNorm1d(4)
        ref.load_state_dict(model[1].state_dict())
        ref(x @ model[0].weight.T + model[0].bias)
        w = model[0].weight
        model, opt_state, scaler_state = step(model, opt_state, scaler_state, x)
        bn = model[1]
        np.testing.assert_allclose(bn.running_mean, ref.running_mean, rtol=1e-5, atol=1e-7)
        assert bn.num_batches_tracked == k + 1 and bn.num_batches_tracked.dtype == np.int64
        assert not np.array_equal(model[0].weight, w)
        grads = grad_fn(eager, x, scaler.state)
        eager, eager_state = scaler.step(opt, grads, eager_state, eager)
        scaler.update()
        assert eager[1].num_batches_tracked == k + 1
        assert eager[1].num_batches_tracked.dtype == np.int64


def test_vmap_jvp_and_scan_of_a_model_in_training_mode_say_to_call_eval():
    # refused, as JAX and functorch refuse an in-place buffer update under vmap, but the
    # advice was "write into a copy (x = x.copy() first)" or "pass it to the inner function
    # as an argument", no way out of a BatchNorm's own write
    model = _eval_model().train()
    xs = np.stack(XS[:2])
    scan = _interp(lambda m, xs: tracejit.lax.scan(lambda m, x: (m, m(x)), m, xs)[1])
    calls = [lambda: tracejit.vmap(lambda m, x: m(x), in_axes=(None, 0))(model, xs),
             lambda: tracejit.vmap(lambda x: model(x))(xs),
             lambda: tracejit.jvp(lambda m: m(XS[0]), (model,), (model,)),
             lambda: scan(model, xs)]
    for call in calls:
        with pytest.raises(UnsupportedError, match=r"call model\.eval\(\) first"):
            call()
    assert model[1].num_batches_tracked == 1
    model.eval()
    want = np.stack([model(x) for x in xs])
    np.testing.assert_allclose(calls[0](), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(calls[3](), want, rtol=1e-12, atol=1e-12)


def test_closure_model_with_custom_buffer_updates_and_batchnorm_matches_torch():
    torch = pytest.importorskip("torch")

    class Net(nn.Module):
        def __init__(self):
            self.lin = nn.Linear(3, 3, dtype=np.float64)
            self.bn = nn.BatchNorm1d(3, dtype=np.float64)
            self.register_buffer("ema", np.zeros(3))
            self.register_buffer("steps", np.zeros((), np.int64))

        def forward(self, x):
            z = self.lin(x)
            if self.training:
                self.ema *= 0.9
                self.ema += 0.1 * z.mean(0)
                self.steps += 1
            return self.bn(z) - self.ema

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3, dtype=torch.float64)
            self.bn = torch.nn.BatchNorm1d(3, dtype=torch.float64)
            self.register_buffer("ema", torch.zeros(3, dtype=torch.float64))
            self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

        def forward(self, x):
            z = self.lin(x)
            if self.training:
                with torch.no_grad():
                    self.ema *= 0.9
                    self.ema += 0.1 * z.mean(0)
                    self.steps += 1
            return self.bn(z) - self.ema

    model, t = Net(), TNet()
    t.load_state_dict({k: torch.tensor(v) for k, v in model.state_dict().items()})
    f = _interp(lambda x: model(x))
    for k, x in enumerate(XS + XS[:1]):
        if k == 3:
            model.eval()
            t.eval()
        np.testing.assert_allclose(f(x), t(torch.tensor(x)).detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
        for name, v in t.state_dict().items():
            np.testing.assert_allclose(model.state_dict()[name], v.numpy(), rtol=1e-10,
                                       atol=1e-12)
    assert model.steps == 3 and model.steps.dtype == np.int64
