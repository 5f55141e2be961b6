"""Optimizer hyperparameters: torch's range checks, and the learning rate of one update.

The learning rate takes three forms, so that a schedule never costs a trace per value:

- a Python number: a constant of the trace, as every other hyperparameter (setting
  ``opt.lr = 0.01`` traces again, as a changed global number does);
- a 0-d array: read at every call, as jit reads every array a function reads from its
  globals and closures, so rebinding it or writing into it runs the same compiled step (the
  torch-style schedulers of lr_scheduler.py set it);
- a callable of the update count (schedules.py, or any NumPy function of it): evaluated
  inside the trace on the state's traced step counter, as an optax schedule.

``update(..., lr=value)`` overrides all three for one call.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..tracer.errors import caller_location, numpy_error
from ..tracer.numpy.lifting import lift
from ..tracer.trace_state import current_trace


def _bad(what: str, hint: str) -> Exception:
    return numpy_error(ValueError, what, hint, loc=caller_location())


def check_non_negative(**values) -> None:
    """torch's ``Invalid ... value`` checks: each hyperparameter a number >= 0."""
    for name, v in values.items():
        if not isinstance(v, numbers.Real) or not v >= 0:
            raise _bad(f"invalid {name} {v!r}: it must be a number >= 0",
                       f"pass {name}= a non-negative number, as torch.optim requires")


def check_betas(betas) -> tuple:
    """Adam's ``betas``: two numbers in [0, 1)."""
    try:
        b1, b2 = betas
    except (TypeError, ValueError):
        raise _bad(f"invalid betas {betas!r}: expected a pair (beta1, beta2)",
                   "pass betas=(0.9, 0.999)") from None
    for i, b in enumerate((b1, b2)):
        if not isinstance(b, numbers.Real) or not 0 <= b < 1:
            raise _bad(f"invalid beta parameter at index {i}: {b!r}",
                       "each beta must be a number in [0, 1)")
    return (b1, b2)


def check_lr(lr):
    """A learning rate in one of its three forms (see the module docstring)."""
    if callable(lr):
        return lr
    if isinstance(lr, np.ndarray) and lr.ndim == 0 and np.issubdtype(lr.dtype, np.floating):
        return lr            # its value is read per call, so not checked here: no read now
    if isinstance(lr, numbers.Real) and not isinstance(lr, bool) and lr >= 0:
        return lr
    raise _bad(f"invalid learning rate {lr!r}",
               "pass lr= a number >= 0, a 0-d floating array (changed between steps "
               "without tracing again) or a schedule: a function of the update count, as "
               "tracejit.optim.schedules makes")


def step_lr(lr, count, override=None):
    """The learning rate of the update after ``count`` earlier ones: a Python number stays
    one (a constant of the trace, as before schedules existed); an array or a schedule's
    value is a float64 array, as torch computes its Python-float step sizes."""
    if override is not None:
        lr = override
    elif callable(lr):
        lr = lr(count)
    if isinstance(lr, numbers.Real):
        return lr
    return np.asarray(traced(lr), np.float64)


def traced(array):
    """``array`` as a value of the trace being recorded, if any: then casting or indexing it
    (``np.asarray(lr, np.float32)``, ``rates[0]``) is an op of the trace, read per call, where
    NumPy would do it to the array itself at trace time, baking its value in."""
    if isinstance(array, np.ndarray) and current_trace() is not None:
        return lift(array)
    return array
