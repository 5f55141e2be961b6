"""torch.optim.Adam and AdamW as pure functions of (gradients, state, parameters)."""
from __future__ import annotations

import numpy as np

from .hyperparameters import check_betas, check_lr, check_non_negative, step_lr
from .leaves import buffers_like, like, paired_leaves


class Adam:
    """Adam (Kingma & Ba) with bias correction and L2 weight decay, as torch.optim.Adam;
    torch's ``amsgrad`` (the running maximum of the second moment normalises the step: one
    more buffer per parameter in the state, ``max_exp_avg_sq``) and ``maximize``."""

    decoupled = False     # AdamW: the weight decay scales the parameter, not the gradient

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 *, maximize=False):
        check_lr(lr)
        check_non_negative(eps=eps, weight_decay=weight_decay)
        self.lr, self.betas, self.eps = lr, check_betas(betas), eps
        self.weight_decay = weight_decay
        self.amsgrad, self.maximize = amsgrad, maximize

    def init(self, params):
        state = {"step": np.zeros((), np.float32),
                 "exp_avg": buffers_like(params), "exp_avg_sq": buffers_like(params)}
        if self.amsgrad:
            state["max_exp_avg_sq"] = buffers_like(params)
        return state

    def update(self, grads, state, params, *, lr=None):
        """New (params, state); ``lr`` overrides the optimizer's learning rate for this call."""
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if self.amsgrad else [])
        ps, gs, rebuild = paired_leaves(grads, params, state, names)
        lr = step_lr(self.lr, state["step"], lr)
        b1, b2 = self.betas
        step = state["step"] + 1
        # Bias corrections, folded into one step size as PyTorch does; like PyTorch (which
        # computes them as Python floats) in float64, then rounded to each parameter's dtype.
        t = step.astype(np.float64)
        c1 = 1 - np.asarray(b1, np.float64) ** t
        c2 = 1 - np.asarray(b2, np.float64) ** t
        step_size = np.asarray(lr, np.float64) / c1
        new_ps, ms, vs, maxes = [], [], [], []
        for i, (p, g, m, v) in enumerate(zip(ps, gs, state["exp_avg"], state["exp_avg_sq"])):
            if self.maximize:
                g = -g
            if self.weight_decay and self.decoupled:
                # p - (p * lr) * wd, not p * (1 - lr * wd): with an array lr (a schedule's),
                # NumPy computed lr * wd once, at trace time, and later steps kept it
                p = p - (p * np.asarray(lr, np.float64)).astype(p.dtype) * like(
                    p, self.weight_decay)
            elif self.weight_decay:
                g = g + like(g, self.weight_decay) * p
            m = like(g, b1) * m + like(g, 1 - b1) * g
            v = like(g, b2) * v + like(g, 1 - b2) * (g * g)
            ms.append(m)
            vs.append(v)
            if self.amsgrad:
                v = np.maximum(state["max_exp_avg_sq"][i], v)
                maxes.append(v)
            denom = np.sqrt(v) / np.sqrt(c2).astype(p.dtype) + like(p, self.eps)
            new_ps.append(p - step_size.astype(p.dtype) * m / denom)
        out = {"step": step, "exp_avg": ms, "exp_avg_sq": vs}
        if self.amsgrad:
            out["max_exp_avg_sq"] = maxes
        return rebuild(new_ps), out


class AdamW(Adam):
    """torch.optim.AdamW: Adam whose weight decay (default 1e-2) is decoupled: each step first
    multiplies the parameter by ``1 - lr * weight_decay``."""

    decoupled = True

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False):
        super().__init__(lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
