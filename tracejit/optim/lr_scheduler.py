"""torch.optim.lr_scheduler's interface over schedules.py: ``sched = StepLR(opt, 30)`` then
``sched.step()`` once per epoch (or per update), outside the jitted step.

tracejit's optimizers are pure and a trace bakes in a Python-number ``opt.lr``, so a new
value per step would be a new trace per step. A scheduler therefore makes ``opt.lr`` a 0-d
float64 array of its own and writes each new value into it: jit reads the arrays a function
reads from its globals and closures at every call, so the compiled step runs on with the new
rate. (Inside one trace, a schedule of the update count is ``Adam(lr=schedules.step_lr(...))``
instead.) Each group of a ParamGroups is scheduled from its own base rate, as torch's are.

Differences from torch: values are the closed forms, not torch's running products (equal
to rounding); one scheduler per optimizer (torch chains several multiplicatively: combine
them in one LambdaLR); ``step()`` takes no epoch; OneCycleLR cycles the rate only.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..tracer.errors import caller_location, numpy_error
from . import schedules
from .param_groups import ParamGroups


def _bad(what: str, hint: str, exc=ValueError) -> Exception:
    return numpy_error(exc, what, hint, loc=caller_location())


def _groups(optimizer) -> tuple[list, list]:
    """Each group's base learning rate, and a function that sets it: the optimizer's ``lr``
    made a 0-d array of the scheduler's and written into, or a ParamGroups' ``lr[k]``."""
    if isinstance(optimizer, ParamGroups):
        scheduled = [k for k, o in enumerate(optimizer.optimizers.values()) if callable(o.lr)]
        if scheduled:
            raise _bad(f"the groups {scheduled} of this ParamGroups have schedule functions "
                       "as their lr, which already set the rate per step",
                       "give each group's optimizer lr= a number", TypeError)
        return ([float(v) for v in optimizer.lr],
                [lambda v, k=k: optimizer.lr.__setitem__(k, v)
                 for k in range(len(optimizer.lr))])
    lr = getattr(optimizer, "lr", None)
    if callable(lr) or not (isinstance(lr, numbers.Real) or (
            isinstance(lr, np.ndarray) and lr.ndim == 0)):
        raise _bad(f"a scheduler needs an optimizer whose lr is a number, not {lr!r}",
                   "pass the optimizer with lr= a number; a schedule function as lr already "
                   "sets the rate per step", TypeError)
    own = np.array(float(lr), np.float64)

    def write(value):
        if optimizer.lr is not own:      # at construction, or rebound by the user since
            optimizer.lr = own
        own[...] = value                 # in place: the compiled step reads it per call
    return [float(lr)], [write]


class LRScheduler:
    """Sets its optimizer's learning rate to ``make(base_lr)(last_epoch)`` for each group:
    at construction (``last_epoch`` 0, as torch's initial step) and at each ``step()``."""

    def __init__(self, optimizer, make, base_lrs=None):
        bases, self._writes = _groups(optimizer)
        if getattr(optimizer, "_lr_scheduler", None) is not None:
            raise _bad(f"this {type(optimizer).__name__} already has a "
                       f"{type(optimizer._lr_scheduler).__name__}",
                       "use one scheduler per optimizer (combine factors in one LambdaLR), "
                       "or a new optimizer")
        self.optimizer = optimizer
        self.base_lrs = list(base_lrs or bases)
        self._schedules = [make(b) for b in self.base_lrs]
        optimizer._lr_scheduler = self
        self.last_epoch = 0
        self._apply()

    def _apply(self) -> None:
        self._last_lr = [float(sched(self.last_epoch)) for sched in self._schedules]
        for write, value in zip(self._writes, self._last_lr):
            write(value)

    def step(self) -> None:
        """The next epoch's (or update's) learning rate, as torch's ``scheduler.step()``."""
        self.last_epoch += 1
        self._apply()

    def get_last_lr(self) -> list:
        """The learning rate of each group, as Python floats (torch's ``get_last_lr``)."""
        return list(self._last_lr)


class StepLR(LRScheduler):
    """Multiplies the rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1):
        super().__init__(optimizer, lambda lr: schedules.step_lr(lr, step_size, gamma))


class MultiStepLR(LRScheduler):
    """Multiplies the rate by ``gamma`` at each milestone epoch."""

    def __init__(self, optimizer, milestones, gamma=0.1):
        super().__init__(optimizer, lambda lr: schedules.multi_step_lr(lr, milestones, gamma))


class ExponentialLR(LRScheduler):
    """Multiplies the rate by ``gamma`` every epoch."""

    def __init__(self, optimizer, gamma):
        super().__init__(optimizer, lambda lr: schedules.exponential_lr(lr, gamma))


class CosineAnnealingLR(LRScheduler):
    """Anneals the rate to ``eta_min`` along half a cosine over ``T_max`` epochs."""

    def __init__(self, optimizer, T_max, eta_min=0.0):      # noqa: N803 (torch's name)
        super().__init__(optimizer,
                         lambda lr: schedules.cosine_annealing_lr(lr, T_max, eta_min))


class LambdaLR(LRScheduler):
    """The base rate times ``lr_lambda(epoch)`` (one function, or one per group)."""

    def __init__(self, optimizer, lr_lambda):
        fns = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else None
        it = iter(fns) if fns is not None else None
        super().__init__(optimizer, lambda lr: schedules.lambda_lr(
            lr, next(it) if it is not None else lr_lambda))
        if fns is not None and len(fns) != len(self.base_lrs):
            raise _bad(f"LambdaLR got {len(fns)} lr_lambdas for {len(self.base_lrs)} groups",
                       "pass one function, or one per group")


class LinearLR(LRScheduler):
    """Scales the rate linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        super().__init__(optimizer, lambda lr: schedules.linear_lr(
            lr, start_factor, end_factor, total_iters))


class OneCycleLR(LRScheduler):
    """Smith's 1cycle policy, stepped once per update; the optimizer's own rate is not used
    (the cycle starts at ``max_lr / div_factor``). torch also cycles the momentum by default:
    tracejit's does not, so ``cycle_momentum=False`` must be passed, to say so."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, div_factor=25.0,
                 final_div_factor=1e4, three_phase=False):
        if cycle_momentum:
            raise _bad("tracejit's OneCycleLR cycles the learning rate only, and torch's "
                       "default cycle_momentum=True would cycle the momentum too",
                       "pass cycle_momentum=False")
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise _bad("OneCycleLR needs total_steps, or epochs and steps_per_epoch",
                           "pass total_steps=")
            total_steps = epochs * steps_per_epoch
        n = len(optimizer.optimizers) if isinstance(optimizer, ParamGroups) else 1
        maxes = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * n
        if len(maxes) != n:
            raise _bad(f"OneCycleLR got {len(maxes)} max_lr values for {n} groups",
                       "pass one max_lr, or one per group")
        super().__init__(optimizer, lambda m: schedules.one_cycle_lr(
            m, total_steps, pct_start, anneal_strategy, div_factor, final_div_factor,
            three_phase), base_lrs=maxes)
        self.total_steps = total_steps

    def step(self) -> None:
        if self.last_epoch + 1 > self.total_steps:
            raise _bad(f"OneCycleLR stepped {self.last_epoch + 1} times; total_steps is "
                       f"{self.total_steps}", "make total_steps the number of updates")
        super().step()
