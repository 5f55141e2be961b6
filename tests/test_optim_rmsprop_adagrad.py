"""tracejit.optim.RMSprop and Adagrad, step by step over several steps, against NumPy
transcriptions of torch.optim's single-tensor loops (torch/optim/rmsprop.py
``_single_tensor_rmsprop``, adagrad.py ``_single_tensor_adagrad``) and, where installed,
torch.optim itself: float64 and float32, eagerly and with the update inside one jit."""
from __future__ import annotations

import numpy as np
import pytest

from tracejit import optim
from optim_steps import Steps

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

STEPS_CHECK = Steps(P0, GRADS, CASES, REFS)


@pytest.mark.parametrize("case", CASES)
def test_float64_eager_and_jitted_follow_the_transcribed_torch_loop(case):
    STEPS_CHECK.check_float64(case)


@pytest.mark.parametrize("case", ["RMSprop-all", "Adagrad-all"])
def test_float32_compiled_step_stays_float32_and_follows_the_reference(case):
    STEPS_CHECK.check_float32_compiled(case, tol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES)
def test_against_torch_optim(case, dtype):
    STEPS_CHECK.check_against_torch(case, dtype, tol32=1e-6)


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
