"""Learning-rate schedules: the pure ones (tracejit.optim.schedules, a function of the update
count usable as an optimizer's lr inside jit) against their closed forms written out here
and torch.optim.lr_scheduler where installed; the torch-style schedulers' ``sched.step()``
between jitted steps; and that a rate changing every step traces the step once."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tracejit
from tracejit import optim
from tracejit.optim import schedules

N = 14               # counts checked: past every period, milestone and T_max below


# -- the closed forms, written out ------------------------------------------------------------

def _one_cycle(t, max_lr, total, pct=0.3, div=25.0, final_div=1e4):
    lo, hi = max_lr / div, max_lr / div / final_div
    up_end = pct * total - 1
    if t <= up_end:
        x, a, b = t / up_end, lo, max_lr
    else:
        x, a, b = (t - up_end) / (total - 1 - up_end), max_lr, hi
    return b + (a - b) / 2 * (math.cos(math.pi * x) + 1)


CASES = {   # name: (the schedule, torch's scheduler and its arguments, the value at count t)
    "step": (schedules.step_lr(0.1, 3, 0.5), ("StepLR", dict(step_size=3, gamma=0.5)),
             lambda t: 0.1 * 0.5 ** (t // 3)),
    "multi_step": (schedules.multi_step_lr(0.1, [2, 5, 5, 9], 0.1),
                   ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.1)),
                   lambda t: 0.1 * 0.1 ** sum(t >= m for m in [2, 5, 5, 9])),
    "exponential": (schedules.exponential_lr(0.1, 0.8), ("ExponentialLR", dict(gamma=0.8)),
                    lambda t: 0.1 * 0.8 ** t),
    "cosine": (schedules.cosine_annealing_lr(0.1, 5, 0.01),
               ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
               lambda t: 0.01 + 0.09 * (1 + math.cos(math.pi * t / 5)) / 2),
    "lambda": (schedules.lambda_lr(0.1, lambda t: 1 / (1 + t)),
               ("LambdaLR", dict(lr_lambda=lambda t: 1 / (1 + t))),
               lambda t: 0.1 / (1 + t)),
    "linear": (schedules.linear_lr(0.1, 0.25, 1.0, 4), ("LinearLR", dict(
        start_factor=0.25, end_factor=1.0, total_iters=4)),
        lambda t: 0.1 * (0.25 + 0.75 * min(t, 4) / 4)),
    "one_cycle": (schedules.one_cycle_lr(0.5, N), ("OneCycleLR", dict(
        max_lr=0.5, total_steps=N, cycle_momentum=False)), lambda t: _one_cycle(t, 0.5, N)),
}


@pytest.mark.parametrize("name", CASES)
def test_schedule_values_are_the_closed_form_eagerly_and_inside_jit(name):
    schedule, _, want = CASES[name]
    expected = [want(t) for t in range(N)]
    np.testing.assert_allclose([schedule(t) for t in range(N)], expected, rtol=1e-13)
    if name in ("step", "cosine", "one_cycle"):       # a few traced: the step counter's dtype
        traced = tracejit.jit(lambda c: schedule(c), backend="interpreter")
        got = [traced(np.array(t, np.float32)) for t in range(N)]
        np.testing.assert_allclose(got, expected, rtol=1e-13)
        assert traced.trace_count == 1


@pytest.mark.parametrize("name", CASES)
def test_torch_style_scheduler_gives_torchs_learning_rates(name):
    torch = pytest.importorskip("torch")
    _, (cls, kwargs), _ = CASES[name]
    base = 0.1
    tparam = torch.zeros(1, requires_grad=True)
    topt = torch.optim.SGD([tparam], lr=base)
    tsched = getattr(torch.optim.lr_scheduler, cls)(topt, **kwargs)
    opt = optim.SGD(lr=base)
    sched = getattr(optim, cls)(opt, **kwargs)
    for epoch in range(N - 1):
        assert sched.last_epoch == tsched.last_epoch == epoch
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12,
                                   err_msg=f"epoch {epoch}")
        np.testing.assert_allclose(opt.lr, tsched.get_last_lr()[0], rtol=1e-12)
        topt.step()
        tsched.step()
        sched.step()


@pytest.mark.parametrize("name", CASES)
def test_torch_style_scheduler_sets_the_closed_form_each_epoch(name):
    _, (cls, kwargs), want = CASES[name]
    opt = optim.Adam(lr=0.1)
    sched = getattr(optim, cls)(opt, **kwargs)
    got = []
    for _ in range(N):
        got.append(float(opt.lr))
        assert sched.get_last_lr() == [got[-1]]
        sched.step()
    np.testing.assert_allclose(got, [want(t) for t in range(N)], rtol=1e-13)


# -- the point: a rate changing every step runs one compiled step ------------------------------

P0 = {"w": np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3),
      "b": np.array([0.5, -0.5, 0.25], np.float32)}
G = {"w": np.full((2, 3), 0.3, np.float32), "b": np.array([1.0, -2.0, 0.5], np.float32)}


def _eager(make_opt, lrs):
    """The same updates with each step's rate a Python number on a fresh optimizer."""
    params, state = P0, make_opt(lrs[0]).init(P0)
    for lr in lrs:
        params, state = make_opt(lr).update(G, state, params)
    return params


def test_a_scheduler_stepped_between_jitted_steps_traces_the_step_once():
    opt = optim.AdamW(lr=0.1, weight_decay=0.1)
    sched = optim.StepLR(opt, step_size=1, gamma=0.5)     # a new rate at every step
    step = tracejit.jit(lambda g, s, p: opt.update(g, s, p))
    params, state, lrs = P0, opt.init(P0), []
    for _ in range(5):
        lrs.append(sched.get_last_lr()[0])
        params, state = step(G, state, params)
        sched.step()
    assert step.trace_count == 1
    assert lrs == [0.1 * 0.5 ** i for i in range(5)]
    want = _eager(lambda lr: optim.AdamW(lr=lr, weight_decay=0.1), lrs)
    for k in P0:
        np.testing.assert_allclose(params[k], want[k], rtol=1e-6, atol=1e-7)


def test_a_schedule_as_lr_is_evaluated_inside_the_trace_on_the_step_counter():
    opt = optim.SGD(lr=schedules.exponential_lr(0.2, 0.5), momentum=0.9)
    step = tracejit.jit(opt.update, backend="interpreter")
    params, state = P0, opt.init(P0)
    for _ in range(5):
        params, state = step(G, state, params)
    assert step.trace_count == 1
    want = _eager(lambda lr: optim.SGD(lr=lr, momentum=0.9), [0.2 * 0.5 ** i for i in range(5)])
    for k in P0:
        np.testing.assert_allclose(params[k], want[k], rtol=1e-6)


def test_lr_passed_to_update_overrides_the_optimizers_for_the_call():
    opt = optim.RMSprop(lr=1.0)
    step = tracejit.jit(lambda g, s, p, lr: opt.update(g, s, p, lr=lr), backend="interpreter")
    params, state = P0, opt.init(P0)
    lrs = [0.01, 0.02, 0.04, 0.03, 0.005]
    for lr in lrs:
        params, state = step(G, state, params, np.array(lr))
    assert step.trace_count == 1
    want = _eager(lambda lr: optim.RMSprop(lr=lr), lrs)
    for k in P0:
        np.testing.assert_allclose(params[k], want[k], rtol=1e-6)


OPT = optim.Adagrad(lr=0.5)
SCHED = optim.CosineAnnealingLR(OPT, T_max=4)


@tracejit.jit(backend="interpreter")
def _global_step(g, s, p):
    return OPT.update(g, s, p)


def test_a_global_optimizer_and_scheduler_as_a_training_script_has_them():
    params, state, lrs = P0, OPT.init(P0), []
    for _ in range(5):
        lrs.append(float(OPT.lr))
        params, state = _global_step(G, state, params)
        SCHED.step()
    assert _global_step.trace_count == 1
    np.testing.assert_allclose(lrs, [0.25 * (1 + math.cos(math.pi * t / 4)) for t in range(5)],
                               atol=1e-15)
    want = _eager(lambda lr: optim.Adagrad(lr=lr), lrs)
    for k in P0:
        np.testing.assert_allclose(params[k], want[k], rtol=1e-6, atol=1e-7)


def test_a_python_number_lr_stays_a_constant_of_the_trace():
    """Backward compatible: Adam(lr=1e-3) traces as before (one trace, the rate folded in),
    and a new number is a new trace, as a changed global number is."""
    opt = optim.SGD(lr=0.5)
    step = tracejit.jit(lambda g, s, p: opt.update(g, s, p), backend="interpreter")
    state = opt.init(P0)
    step(G, state, P0)
    step(G, state, P0)
    assert step.trace_count == 1
    opt.lr = 0.25
    out, _ = step(G, state, P0)
    assert step.trace_count == 2
    np.testing.assert_allclose(out["b"], P0["b"] - 0.25 * G["b"])


# -- bad input ----------------------------------------------------------------------------------

def test_a_scheduler_refuses_a_scheduled_optimizer_and_a_second_scheduler():
    with pytest.raises(TypeError, match="lr is a number"):
        optim.StepLR(optim.SGD(lr=schedules.exponential_lr(0.1, 0.9)), 2)
    opt = optim.SGD(lr=0.1)
    optim.StepLR(opt, 2)
    with pytest.raises(ValueError, match="already has a StepLR") as info:
        optim.ExponentialLR(opt, 0.9)
    assert "test_optim_schedules.py" in str(info.value)


def test_one_cycle_needs_cycle_momentum_off_and_stops_at_total_steps():
    with pytest.raises(ValueError, match="cycle_momentum=False"):
        optim.OneCycleLR(optim.SGD(lr=0.1), max_lr=1.0, total_steps=3)
    sched = optim.OneCycleLR(optim.SGD(lr=0.1), max_lr=1.0, epochs=1, steps_per_epoch=3,
                             cycle_momentum=False)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="total_steps"):
        sched.step()


@pytest.mark.parametrize("make, match", [
    (lambda: schedules.step_lr(0.1, 0), "step_size must be a positive integer"),
    (lambda: schedules.multi_step_lr(0.1, [5, 2]), "not increasing"),
    (lambda: schedules.cosine_annealing_lr(0.1, T_max=2.5), "T_max"),
    (lambda: schedules.linear_lr(0.1, start_factor=0.0), "start_factor"),
    (lambda: schedules.one_cycle_lr(0.1, 10, anneal_strategy="exp"), "anneal_strategy"),
    (lambda: schedules.lambda_lr(0.1, 0.5), "lr_lambda"),
    (lambda: optim.SGD(lr=np.array([0.1, 0.2])), "learning rate"),
])
def test_bad_schedule_arguments_are_refused_with_the_callers_line(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "test_optim_schedules.py" in str(info.value)


def test_a_schedule_is_immutable():
    s = schedules.step_lr(0.1, 2)
    with pytest.raises(AttributeError, match="immutable"):
        s.gamma = 0.5
    assert repr(s) == "step_lr(lr=0.1, step_size=2, gamma=0.1)"
