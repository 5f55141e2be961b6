"""tracejit.optim.RMSprop and Adagrad, step by step over several steps, against NumPy
transcriptions of torch.optim's single-tensor loops (torch/optim/rmsprop.py
``_single_tensor_rmsprop``, adagrad.py ``_single_tensor_adagrad``) and, where installed,
torch.optim itself: float64 and float32, eagerly and with the update inside one jit."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit import optim
from tracejit.tracer.pytree import flatten

R = np.random.default_rng(5)
STEPS = 6
P0 = {"w": R.standard_normal((3, 4)), "b": R.standard_normal(4)}
GRADS = [{"w": R.standard_normal((3, 4)), "b": R.standard_normal(4)} for _ in range(STEPS)]


# -- the references: torch's loops, transcribed (float64) -------------------------------------

def torch_rmsprop(params, grads_seq, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0,
                  momentum=0.0, centered=False, maximize=False):
    params = [p.copy() for p in params]
    sq = [np.zeros_like(p) for p in params]
    gavg = [np.zeros_like(p) for p in params]
    buf = [np.zeros_like(p) for p in params]
    history = []
    for grads in grads_seq:
        for i, g in enumerate(grads):
            g = -g if maximize else g
            if weight_decay != 0:
                g = g + weight_decay * params[i]
            sq[i] = sq[i] * alpha + (1 - alpha) * g * g
            if centered:
                gavg[i] = gavg[i] + (1 - alpha) * (g - gavg[i])
                avg = np.sqrt(sq[i] - gavg[i] * gavg[i]) + eps
            else:
                avg = np.sqrt(sq[i]) + eps
            if momentum > 0:
                buf[i] = buf[i] * momentum + g / avg
                params[i] = params[i] - lr * buf[i]
            else:
                params[i] = params[i] - lr * g / avg
        history.append([p.copy() for p in params])
    return history


def torch_adagrad(params, grads_seq, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                  initial_accumulator_value=0.0, eps=1e-10, maximize=False):
    params = [p.copy() for p in params]
    sums = [np.full_like(p, initial_accumulator_value) for p in params]
    history = []
    for step, grads in enumerate(grads_seq, start=1):
        for i, g in enumerate(grads):
            g = -g if maximize else g
            if weight_decay != 0:
                g = g + weight_decay * params[i]
            clr = lr / (1 + (step - 1) * lr_decay)
            sums[i] = sums[i] + g * g
            params[i] = params[i] - clr * g / (np.sqrt(sums[i]) + eps)
        history.append([p.copy() for p in params])
    return history


CASES = {
    "RMSprop-default": ("RMSprop", dict()),
    "RMSprop-momentum": ("RMSprop", dict(lr=0.02, momentum=0.5)),
    "RMSprop-centered": ("RMSprop", dict(lr=0.02, alpha=0.9, centered=True)),
    "RMSprop-all": ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1,
                                    momentum=0.9, centered=True, maximize=True)),
    "Adagrad-default": ("Adagrad", dict(lr=0.1)),
    "Adagrad-all": ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1,
                                    initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
}
REFS = {"RMSprop": torch_rmsprop, "Adagrad": torch_adagrad}


def _leaves(tree, dtype=np.float64):
    return [np.asarray(x, dtype) for x in flatten(tree)[0]]


def _run(opt, update, dtype):
    params = {k: v.astype(dtype) for k, v in P0.items()}
    state = opt.init(params)
    history = []
    for g in GRADS:
        params, state = update({k: v.astype(dtype) for k, v in g.items()}, state, params)
        history.append(params)
    return history, state


@pytest.mark.parametrize("case", CASES)
def test_float64_eager_and_jitted_follow_the_transcribed_torch_loop(case):
    name, kwargs = CASES[case]
    opt = getattr(optim, name)(**kwargs)
    want = REFS[name](_leaves(P0), [_leaves(g) for g in GRADS], **kwargs)
    jitted = tracejit.jit(opt.update, backend="interpreter")
    for update, tol in ((opt.update, 1e-13), (jitted, 1e-13)):
        history, state = _run(opt, update, np.float64)
        for step, (got, ref) in enumerate(zip(history, want), start=1):
            for a, b in zip(_leaves(got), ref):
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"step {step}")
        assert float(state["step"]) == STEPS
    assert jitted.trace_count == 1


@pytest.mark.parametrize("case", ["RMSprop-all", "Adagrad-all"])
def test_float32_compiled_step_stays_float32_and_follows_the_reference(case):
    name, kwargs = CASES[case]
    opt = getattr(optim, name)(**kwargs)
    want = REFS[name](_leaves(P0), [_leaves(g) for g in GRADS], **kwargs)
    update = tracejit.jit(opt.update)
    history, _ = _run(opt, update, np.float32)
    eager, _ = _run(opt, opt.update, np.float32)
    for got, e, ref in zip(history, eager, want):
        for a, b, c in zip(flatten(got)[0], flatten(e)[0], ref):
            assert a.dtype == np.float32
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)
    assert update.trace_count == 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES)
def test_against_torch_optim(case, dtype):
    torch = pytest.importorskip("torch")
    name, kwargs = CASES[case]
    keys = sorted(P0)
    tp = [torch.tensor(P0[k].astype(dtype), requires_grad=True) for k in keys]
    topt = getattr(torch.optim, name)(tp, **kwargs)
    opt = getattr(optim, name)(**kwargs)
    params = {k: v.astype(dtype) for k, v in P0.items()}
    state = opt.init(params)
    tol = 1e-13 if dtype == np.float64 else 1e-6
    for step, g in enumerate(GRADS, start=1):
        for t, k in zip(tp, keys):
            t.grad = torch.tensor(g[k].astype(dtype))
        topt.step()
        params, state = opt.update({k: v.astype(dtype) for k, v in g.items()}, state, params)
        for t, k in zip(tp, keys):
            assert params[k].dtype == dtype
            np.testing.assert_allclose(params[k], t.detach().numpy(), rtol=tol, atol=tol,
                                       err_msg=f"{k}, step {step}")


def test_state_holds_the_buffers_torchs_flags_need():
    assert sorted(optim.RMSprop().init(P0)) == ["square_avg", "step"]
    full = optim.RMSprop(momentum=0.9, centered=True).init(P0)
    assert sorted(full) == ["grad_avg", "momentum_buffer", "square_avg", "step"]
    state = optim.Adagrad(initial_accumulator_value=0.25).init(P0)
    assert [s.shape for s in state["sum"]] == [(4,), (3, 4)]
    assert all((s == 0.25).all() for s in state["sum"])


@pytest.mark.parametrize("make, match", [
    (lambda: optim.RMSprop(lr=-1.0), "learning rate"),
    (lambda: optim.RMSprop(alpha=-0.5), "alpha"),
    (lambda: optim.RMSprop(momentum=-0.1), "momentum"),
    (lambda: optim.Adagrad(lr_decay=-1), "lr_decay"),
    (lambda: optim.Adagrad(initial_accumulator_value=-1), "initial_accumulator_value"),
    (lambda: optim.Adagrad(lr="0.1"), "learning rate"),
])
def test_bad_hyperparameters_are_refused_with_the_callers_line(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "test_optim_rmsprop_adagrad.py" in str(info.value)


def test_a_state_made_for_other_parameters_is_refused():
    opt = optim.RMSprop(centered=True)
    state = optim.RMSprop().init(P0)           # no grad_avg
    with pytest.raises(ValueError, match="grad_avg"):
        opt.update(GRADS[0], state, P0)
