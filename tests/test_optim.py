"""tracejit.optim against a line-by-line transcription of torch.optim's update loops
(torch/optim/sgd.py `_single_tensor_sgd`, torch/optim/adam.py `_single_tensor_adam`, default
flags: foreach/fused off, maximize=False, amsgrad=False), over several steps, eagerly and
with the whole update inside one jit."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tracejit
from tracejit import nn, optim
from tracejit.nn import functional as F
from tracejit.tracer.pytree import flatten


# -- the reference: torch.optim's per-parameter loops, transcribed --------------------------------

class TorchSGD:
    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        self.params = [p.astype(np.float64) for p in params]
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov
        self.momentum_buffer = [None] * len(params)

    def step(self, grads):
        for i, (param, grad) in enumerate(zip(self.params, grads)):
            d_p = grad
            if self.weight_decay != 0:
                d_p = d_p + self.weight_decay * param           # grad.add(param, alpha=wd)
            if self.momentum != 0:
                buf = self.momentum_buffer[i]
                if buf is None:
                    buf = d_p.copy()                            # torch.clone(grad).detach()
                else:
                    buf = self.momentum * buf + (1 - self.dampening) * d_p
                self.momentum_buffer[i] = buf
                d_p = d_p + self.momentum * buf if self.nesterov else buf
            self.params[i] = param - self.lr * d_p              # param.add_(grad, alpha=-lr)
        return self.params


class TorchAdam:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.params = [p.astype(np.float64) for p in params]
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.exp_avg = [np.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [np.zeros_like(p) for p in self.params]
        self.step_t = 0.0

    def step(self, grads):
        beta1, beta2 = self.betas
        self.step_t += 1
        for i, (param, grad) in enumerate(zip(self.params, grads)):
            if self.weight_decay != 0:
                grad = grad + self.weight_decay * param
            self.exp_avg[i] = self.exp_avg[i] + (grad - self.exp_avg[i]) * (1 - beta1)  # lerp_
            self.exp_avg_sq[i] = self.exp_avg_sq[i] * beta2 + (1 - beta2) * grad * grad
            bias_correction1 = 1 - beta1 ** self.step_t
            bias_correction2 = 1 - beta2 ** self.step_t
            step_size = self.lr / bias_correction1
            bias_correction2_sqrt = math.sqrt(bias_correction2)
            denom = np.sqrt(self.exp_avg_sq[i]) / bias_correction2_sqrt + self.eps
            self.params[i] = param - step_size * self.exp_avg[i] / denom   # addcdiv_
        return self.params


# -- fixtures: params and a fixed sequence of gradients -------------------------------------------

R = np.random.default_rng(11)
SHAPES = [(3, 4), (4,)]
STEPS = 5


def _params(dtype):
    return {"w": R.standard_normal(SHAPES[0]).astype(dtype),
            "b": R.standard_normal(SHAPES[1]).astype(dtype)}


P0 = _params(np.float64)
GRADS = [{"w": R.standard_normal(SHAPES[0]), "b": R.standard_normal(SHAPES[1])}
         for _ in range(STEPS)]


def _run(opt, params, grads_seq, update):
    state = opt.init(params)
    history = []
    for g in grads_seq:
        params, state = update(g, state, params)
        history.append(params)
    return history, state


def _reference(ref_cls, kwargs, grads_seq):
    leaves, _ = flatten(P0)
    ref = ref_cls(leaves, **kwargs)
    return [[p.copy() for p in ref.step(flatten(g)[0])] for g in grads_seq]


SGD_CONFIGS = {
    "plain": dict(lr=0.1),
    "weight_decay": dict(lr=0.1, weight_decay=0.01),
    "momentum": dict(lr=0.1, momentum=0.9),
    "momentum_dampening": dict(lr=0.05, momentum=0.8, dampening=0.3),
    "nesterov_weight_decay": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
}
ADAM_CONFIGS = {
    "default": dict(),
    "lr_betas_eps": dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
    "weight_decay": dict(lr=0.01, weight_decay=0.05),
}
CASES = ([("SGD", k, v) for k, v in SGD_CONFIGS.items()]
         + [("Adam", k, v) for k, v in ADAM_CONFIGS.items()])
IDS = [f"{name}-{k}" for name, k, _ in CASES]
REFS = {"SGD": TorchSGD, "Adam": TorchAdam}


@pytest.mark.parametrize("name, _, kwargs", CASES, ids=IDS)
def test_eager_float64_update_matches_torch_formulas(name, _, kwargs):
    opt = getattr(optim, name)(**kwargs)
    history, state = _run(opt, P0, GRADS, opt.update)
    for step, (got, want) in enumerate(zip(history, _reference(REFS[name], kwargs, GRADS))):
        for a, b in zip(flatten(got)[0], want):
            assert a.dtype == np.float64
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"step {step + 1}")
    assert float(state["step"]) == STEPS


# Every configuration traced and run on the reference interpreter; the fullest SGD and Adam
# configurations also compiled (the default backend), which is what training runs.
COMPILED = {"SGD-nesterov_weight_decay", "Adam-weight_decay"}


@pytest.mark.parametrize("name, _, kwargs", CASES, ids=IDS)
def test_jitted_float32_update_matches_eager_and_torch(name, _, kwargs):
    opt = getattr(optim, name)(**kwargs)
    p32 = {k: v.astype(np.float32) for k, v in P0.items()}
    g32 = [{k: v.astype(np.float32) for k, v in g.items()} for g in GRADS]
    backend = None if f"{name}-{_}" in COMPILED else "interpreter"
    update = tracejit.jit(opt.update, backend=backend)
    jitted, jstate = _run(opt, p32, g32, update)
    eager, _ = _run(opt, p32, g32, opt.update)
    assert update.trace_count == 1          # the step counter is traced state, not static
    ref = _reference(REFS[name], kwargs, GRADS)
    for step in range(STEPS):
        for a, b, c in zip(flatten(jitted[step])[0], flatten(eager[step])[0], ref[step]):
            assert a.dtype == np.float32
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)
    assert float(jstate["step"]) == STEPS


def test_sgd_nesterov_requires_momentum_and_zero_dampening():
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)


def test_state_has_one_buffer_per_parameter_and_plain_sgd_keeps_none():
    assert optim.SGD(lr=0.1).init(P0)["momentum"] == []
    state = optim.Adam().init(P0)
    assert [m.shape for m in state["exp_avg"]] == [(4,), (3, 4)]   # dict leaves: sorted keys
    assert all((m == 0).all() for m in state["exp_avg"] + state["exp_avg_sq"])


def test_adam_first_step_moves_each_parameter_by_lr_times_sign_of_grad():
    opt = optim.Adam(lr=0.01, eps=0.0)
    params, _ = opt.update(GRADS[0], opt.init(P0), P0)
    for k in P0:
        np.testing.assert_allclose(params[k], P0[k] - 0.01 * np.sign(GRADS[0][k]), rtol=1e-12)


def test_adam_bias_correction_is_computed_in_float64_for_float64_params():
    """Many steps with a constant gradient: the update stays lr * g/|g| to float64 precision
    (bias corrections rounded to float32 would be off at 1e-8 relative)."""
    opt = optim.Adam(lr=1.0, eps=0.0)
    p, g = {"w": np.zeros(3)}, {"w": np.array([1.0, -2.0, 3.0])}
    state = opt.init(p)
    for step in range(1, 31):
        p, state = opt.update(g, state, p)
        np.testing.assert_allclose(p["w"], -step * np.sign(g["w"]), rtol=1e-14)


# -- one jitted training step with a Module --------------------------------------------------------

class TinyMLP(nn.Module):
    def __init__(self, rng):
        self.fc1 = nn.Linear(6, 5, rng=rng)
        self.fc2 = nn.Linear(5, 3, rng=rng)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def test_one_jitted_step_with_a_module_equals_grad_then_update_eagerly_and_trains():
    rng = np.random.default_rng(0)
    model = TinyMLP(rng)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.integers(0, 3, 8)
    opt = optim.SGD(lr=0.2, momentum=0.9)

    def loss_fn(m, x, y):
        return F.cross_entropy(m(x), y)

    @tracejit.jit
    def step(m, state, x, y):
        loss, grads = tracejit.value_and_grad(loss_fn)(m, x, y)
        m, state = opt.update(grads, state, m)
        return m, state, loss

    m1, s1 = model, opt.init(model)
    m2, s2 = model, opt.init(model)
    losses = []
    for _ in range(15):
        m1, s1, loss = step(m1, s1, x, y)
        g = tracejit.grad(loss_fn)(m2, x, y)
        m2, s2 = opt.update(g, s2, m2)
        losses.append(float(loss))
    assert type(m1) is TinyMLP and m1.fc1.weight.dtype == np.float32
    for a, b in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert losses[-1] < 0.5 * losses[0]
    assert step.trace_count == 1


def test_a_jitted_training_step_on_a_batch_of_one_matches_the_interpreter():
    rng = np.random.default_rng(1)
    model = TinyMLP(rng)
    x = rng.standard_normal((1, 6)).astype(np.float32)
    y = rng.integers(0, 3, 1)
    opt = optim.SGD(lr=0.1)

    def step(m, state, x, y):
        loss, grads = tracejit.value_and_grad(lambda m: F.cross_entropy(m(x), y))(m)
        m, state = opt.update(grads, state, m)
        return m, state, loss

    compiled = tracejit.jit(step)(model, opt.init(model), x, y)
    reference = tracejit.jit(step, backend="interpreter")(model, opt.init(model), x, y)
    np.testing.assert_allclose(compiled[2], reference[2], rtol=1e-5)
    for a, b in zip(compiled[0].parameters(), reference[0].parameters()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
