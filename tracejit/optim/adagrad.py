"""torch.optim.Adagrad as a pure function of (gradients, state, parameters)."""
from __future__ import annotations

import numpy as np

from .hyperparameters import check_lr, check_non_negative, step_lr
from .leaves import buffers_like, like, paired_leaves


class Adagrad:
    """Adagrad (Duchi et al.): each gradient divided by the root of the sum of its squares so
    far (the buffer ``sum``, started at ``initial_accumulator_value``); torch's ``lr_decay``
    (the step's rate ``lr / (1 + (step - 1) * lr_decay)``), L2 ``weight_decay`` and
    ``maximize``. Dense gradients only: tracejit's are never sparse."""

    def __init__(self, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                 eps=1e-10, *, maximize=False):
        check_lr(lr)
        check_non_negative(lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                           initial_accumulator_value=initial_accumulator_value)
        self.lr, self.lr_decay, self.weight_decay, self.eps = lr, lr_decay, weight_decay, eps
        self.initial_accumulator_value, self.maximize = initial_accumulator_value, maximize

    def init(self, params):
        return {"step": np.zeros((), np.float32),
                "sum": buffers_like(params, self.initial_accumulator_value)}

    def update(self, grads, state, params, *, lr=None):
        """New (params, state); ``lr`` overrides the optimizer's learning rate for this call."""
        ps, gs, rebuild = paired_leaves(grads, params, state, ["sum"])
        lr = step_lr(self.lr, state["step"], lr)
        step = state["step"] + 1
        # torch's clr, a Python float: float64, rounded to each parameter's dtype once
        clr = np.asarray(lr, np.float64) / (1 + (step.astype(np.float64) - 1) * self.lr_decay)
        new_ps, sums = [], []
        for p, g, s in zip(ps, gs, state["sum"]):
            if self.maximize:
                g = -g
            if self.weight_decay:
                g = g + like(g, self.weight_decay) * p
            s = s + g * g
            sums.append(s)
            new_ps.append(p - clr.astype(p.dtype) * (g / (np.sqrt(s) + like(g, self.eps))))
        return rebuild(new_ps), {"step": step, "sum": sums}
