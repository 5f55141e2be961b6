"""tracejit.optim.Adamax, NAdam and RAdam, step by step, against NumPy transcriptions of
torch.optim's single-tensor loops (adamax.py, nadam.py, radam.py) and, where installed,
torch.optim itself: float64 and float32, eagerly and with the update inside one jit."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tracejit import optim
from optim_steps import Steps

R = np.random.default_rng(9)
STEPS = 7            # RAdam with beta2 = 0.9 rectifies from step 6: both branches run
P0 = {"w": R.standard_normal((2, 3)), "b": R.standard_normal(3)}
GRADS = [{"w": R.standard_normal((2, 3)), "b": R.standard_normal(3)} for _ in range(STEPS)]


# -- the references: torch's loops, transcribed (float64) -------------------------------------

def _decay(p, g, lr, weight_decay, decoupled):
    if weight_decay and decoupled:
        return p * (1 - lr * weight_decay), g
    return p, (g + weight_decay * p if weight_decay else g)


def torch_adamax(params, grads_seq, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 maximize=False):
    b1, b2 = betas
    params = [p.copy() for p in params]
    m = [np.zeros_like(p) for p in params]
    u = [np.zeros_like(p) for p in params]
    history = []
    for step, grads in enumerate(grads_seq, start=1):
        for i, g in enumerate(grads):
            g = -g if maximize else g
            params[i], g = _decay(params[i], g, lr, weight_decay, False)
            m[i] = m[i] + (1 - b1) * (g - m[i])
            u[i] = np.maximum(u[i] * b2, np.abs(g) + eps)
            params[i] = params[i] - lr / (1 - b1 ** step) * m[i] / u[i]
        history.append([p.copy() for p in params])
    return history


def torch_nadam(params, grads_seq, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    params = [p.copy() for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    mu_product = 1.0
    history = []
    for step, grads in enumerate(grads_seq, start=1):
        mu = b1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product *= mu
        for i, g in enumerate(grads):
            g = -g if maximize else g
            params[i], g = _decay(params[i], g, lr, weight_decay, decoupled_weight_decay)
            m[i] = m[i] + (1 - b1) * (g - m[i])
            v[i] = v[i] * b2 + (1 - b2) * g * g
            denom = np.sqrt(v[i] / (1 - b2 ** step)) + eps
            params[i] = params[i] - lr * (1 - mu) / (1 - mu_product) * g / denom
            params[i] = params[i] - lr * mu_next / (1 - mu_product * mu_next) * m[i] / denom
        history.append([p.copy() for p in params])
    return history


def torch_radam(params, grads_seq, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    params = [p.copy() for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    history = []
    for step, grads in enumerate(grads_seq, start=1):
        for i, g in enumerate(grads):
            g = -g if maximize else g
            params[i], g = _decay(params[i], g, lr, weight_decay, decoupled_weight_decay)
            m[i] = m[i] + (1 - b1) * (g - m[i])
            v[i] = v[i] * b2 + (1 - b2) * g * g
            c1, c2 = 1 - b1 ** step, 1 - b2 ** step
            rho_inf = 2 / (1 - b2) - 1
            rho_t = rho_inf - 2 * step * b2 ** step / c2
            if rho_t > 5.0:
                rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                 / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                adaptive = math.sqrt(c2) / (np.sqrt(v[i]) + eps)
                params[i] = params[i] - m[i] / c1 * lr * adaptive * rect
            else:
                params[i] = params[i] - m[i] / c1 * lr
        history.append([p.copy() for p in params])
    return history


CASES = {
    "Adamax-default": ("Adamax", dict()),
    "Adamax-all": ("Adamax", dict(lr=0.02, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    "NAdam-default": ("NAdam", dict(lr=0.02)),
    "NAdam-l2": ("NAdam", dict(lr=0.02, weight_decay=0.1, momentum_decay=0.01)),
    "NAdam-decoupled": ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True,
                                      maximize=True)),
    "RAdam-default": ("RAdam", dict(lr=0.02)),
    "RAdam-rectified-l2": ("RAdam", dict(lr=0.02, betas=(0.9, 0.9), weight_decay=0.1)),
    "RAdam-rectified-decoupled": ("RAdam", dict(lr=0.02, betas=(0.8, 0.9), weight_decay=0.1,
                                                decoupled_weight_decay=True, maximize=True)),
}
REFS = {"Adamax": torch_adamax, "NAdam": torch_nadam, "RAdam": torch_radam}

STEPS_CHECK = Steps(P0, GRADS, CASES, REFS)


@pytest.mark.parametrize("case", CASES)
def test_float64_eager_and_jitted_follow_the_transcribed_torch_loop(case):
    STEPS_CHECK.check_float64(case)


def test_radam_takes_both_branches_within_the_steps():
    b2 = 0.9
    rho_inf = 2 / (1 - b2) - 1
    rho = [rho_inf - 2 * t * b2 ** t / (1 - b2 ** t) for t in range(1, STEPS + 1)]
    assert rho[0] <= 5 < rho[-1]


@pytest.mark.parametrize("case", ["Adamax-all", "NAdam-decoupled", "RAdam-rectified-l2"])
def test_float32_compiled_step_stays_float32_and_follows_the_reference(case):
    STEPS_CHECK.check_float32_compiled(case, tol=2e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES)
def test_against_torch_optim(case, dtype):
    STEPS_CHECK.check_against_torch(case, dtype, tol32=2e-6)


@pytest.mark.parametrize("make, match", [
    (lambda: optim.Adamax(betas=(0.9, 1.0)), "beta parameter at index 1"),
    (lambda: optim.NAdam(momentum_decay=-1.0), "momentum_decay"),
    (lambda: optim.RAdam(betas=0.9), "betas"),
    (lambda: optim.RAdam(eps=-1e-8), "eps"),
])
def test_bad_hyperparameters_are_refused_with_the_callers_line(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "test_optim_adam_variants.py" in str(info.value)
