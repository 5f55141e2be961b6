"""Learning-rate schedules as pure functions of the update count, usable as an optimizer's
``lr`` (``Adam(lr=cosine_annealing_lr(1e-3, T_max=1000))``): the optimizer evaluates one
inside its update, on the state's traced step counter, so the rate changes every step with
one trace, as an optax schedule does.

Each is the closed form of the torch scheduler of the same name (``step_lr`` is StepLR's),
with torch's counting: the value at count ``t`` is torch's learning rate after ``t`` calls of
``scheduler.step()``. Used as ``lr`` the count is the number of updates done before this
one, so one torch ``scheduler.step()`` per optimizer step is the same sequence; a per-epoch
torch schedule is this one with its periods in updates. Values are float64, as torch's
Python floats. lr_scheduler.py wraps them in torch's stateful interface.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..tracer.errors import caller_location, numpy_error


class Schedule:
    """A learning rate as a function of the update count. Immutable: a trace bakes in its
    numbers, so one changed afterwards could not reach a compiled step."""

    __slots__ = ("_fn", "_text")

    def __init__(self, fn, text: str):
        object.__setattr__(self, "_fn", fn)
        object.__setattr__(self, "_text", text)

    def __call__(self, count):
        return self._fn(count)

    def __setattr__(self, name, value):
        raise AttributeError(f"{self._text} is immutable: make a new schedule")

    def __repr__(self) -> str:
        return self._text


def _t(count):
    """The count as float64 (a Python int, a NumPy scalar or a traced step counter)."""
    return np.asarray(count, np.float64)


def _bad(what: str, hint: str) -> Exception:
    return numpy_error(ValueError, what, hint, loc=caller_location())


def _positive_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
        raise _bad(f"{name} must be a positive integer, not {v!r}", f"pass {name}=1 or more")
    return int(v)


def _number(name: str, v, lo=0.0, hi=math.inf, lo_open=False) -> float:
    ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and (
        (v > lo if lo_open else v >= lo) and v <= hi)
    if not ok:
        rng = f"{'(' if lo_open else '['}{lo}, {hi}{']' if hi != math.inf else ')'}"
        raise _bad(f"{name} must be a number in {rng}, not {v!r}", f"pass {name}= in {rng}")
    return float(v)


def step_lr(lr, step_size, gamma=0.1) -> Schedule:
    """torch's StepLR: ``lr * gamma ** (t // step_size)``."""
    lr, gamma = _number("lr", lr), _number("gamma", gamma)
    step_size = _positive_int("step_size", step_size)
    return Schedule(lambda c: lr * gamma ** np.floor(_t(c) / step_size),
                    f"step_lr(lr={lr}, step_size={step_size}, gamma={gamma})")


def multi_step_lr(lr, milestones, gamma=0.1) -> Schedule:
    """torch's MultiStepLR: ``lr`` times ``gamma`` once per milestone reached (a milestone
    listed twice counts twice, as torch's Counter)."""
    lr, gamma = _number("lr", lr), _number("gamma", gamma)
    ms = [_positive_int("each milestone", m) for m in milestones]
    if ms != sorted(ms):
        raise _bad(f"milestones {list(milestones)} are not increasing",
                   "list the milestones in increasing order")

    def fn(c):
        t = _t(c)
        return lr * gamma ** sum(((t >= m).astype(np.float64) for m in ms), np.float64(0))
    return Schedule(fn, f"multi_step_lr(lr={lr}, milestones={ms}, gamma={gamma})")


def exponential_lr(lr, gamma) -> Schedule:
    """torch's ExponentialLR: ``lr * gamma ** t``."""
    lr, gamma = _number("lr", lr), _number("gamma", gamma)
    return Schedule(lambda c: lr * gamma ** _t(c), f"exponential_lr(lr={lr}, gamma={gamma})")


def cosine_annealing_lr(lr, T_max, eta_min=0.0) -> Schedule:   # noqa: N803 (torch's name)
    """torch's CosineAnnealingLR (SGDR without restarts): from ``lr`` down to ``eta_min``
    along half a cosine over ``T_max`` counts, and back up after, as torch's does."""
    lr, eta_min = _number("lr", lr), _number("eta_min", eta_min)
    T_max = _positive_int("T_max", T_max)         # noqa: N806
    return Schedule(lambda c: eta_min + (lr - eta_min) * (1 + np.cos(np.pi * _t(c) / T_max))
                    / 2,
                    f"cosine_annealing_lr(lr={lr}, T_max={T_max}, eta_min={eta_min})")


def lambda_lr(lr, lr_lambda) -> Schedule:
    """torch's LambdaLR: ``lr * lr_lambda(t)``. Used as an optimizer's ``lr`` under jit, ``t``
    is a traced float64 count, so ``lr_lambda`` must be NumPy code (``np.where``, not ``if``);
    the torch-style LambdaLR hands it Python ints."""
    lr = _number("lr", lr)
    if not callable(lr_lambda):
        raise _bad(f"lr_lambda must be a function of the count, not {lr_lambda!r}",
                   "pass lr_lambda=lambda t: 0.95 ** t")
    return Schedule(lambda c: lr * (lr_lambda(c) if isinstance(c, numbers.Integral)
                                    else lr_lambda(_t(c))),
                    f"lambda_lr(lr={lr}, lr_lambda={lr_lambda!r})")


def linear_lr(lr, start_factor=1.0 / 3, end_factor=1.0, total_iters=5) -> Schedule:
    """torch's LinearLR: ``lr`` times a factor going linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` counts, then ``lr * end_factor``."""
    lr = _number("lr", lr)
    start = _number("start_factor", start_factor, 0.0, 1.0, lo_open=True)
    end = _number("end_factor", end_factor, 0.0, 1.0)
    total = _positive_int("total_iters", total_iters)
    return Schedule(lambda c: lr * (start + (end - start) * np.minimum(_t(c), total) / total),
                    f"linear_lr(lr={lr}, start_factor={start}, end_factor={end}, "
                    f"total_iters={total})")


def one_cycle_lr(max_lr, total_steps, pct_start=0.3, anneal_strategy="cos",
                 div_factor=25.0, final_div_factor=1e4, three_phase=False) -> Schedule:
    """torch's OneCycleLR (Smith's 1cycle), learning rate only: up from ``max_lr /
    div_factor`` to ``max_lr`` over ``pct_start`` of ``total_steps``, then down to the start
    over ``final_div_factor`` (``three_phase``: back to the start first). Past ``total_steps``,
    where torch raises, it stays at its last value."""
    max_lr = _number("max_lr", max_lr)
    total = _positive_int("total_steps", total_steps)
    pct_start = _number("pct_start", pct_start, 0.0, 1.0)
    if anneal_strategy not in ("cos", "linear"):
        raise _bad(f"anneal_strategy must be 'cos' or 'linear', not {anneal_strategy!r}",
                   "pass anneal_strategy='cos' or 'linear'")
    initial = max_lr / _number("div_factor", div_factor, lo_open=True)
    low = initial / _number("final_div_factor", final_div_factor, lo_open=True)
    up_end = float(pct_start * total) - 1
    if three_phase:
        phases = [(up_end, initial, max_lr), (float(2 * pct_start * total) - 2, max_lr, initial),
                  (total - 1.0, initial, low)]
    else:
        phases = [(up_end, initial, max_lr), (total - 1.0, max_lr, low)]

    def anneal(start, end, pct):
        if anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (np.cos(np.pi * pct) + 1)
        return (end - start) * pct + start

    def fn(c):
        t = np.minimum(_t(c), float(total))
        # torch's phase loop: the first phase whose end is not passed, else the last
        out = None
        for i in range(len(phases) - 1, -1, -1):
            end_step, start, end = phases[i]
            begin = 0.0 if i == 0 else phases[i - 1][0]
            span = (end_step - begin) or 1.0        # a phase of no steps: torch divides by 0
            value = anneal(start, end, (t - begin) / span)
            out = value if out is None else np.where(t <= end_step, value, out)
        return out

    return Schedule(fn, f"one_cycle_lr(max_lr={max_lr}, total_steps={total}, "
                        f"pct_start={pct_start}, anneal_strategy={anneal_strategy!r}, "
                        f"three_phase={three_phase})")
