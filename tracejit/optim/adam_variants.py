"""torch.optim's variants of Adam, Adamax, NAdam and RAdam, as pure functions of
(gradients, state, parameters). Their per-step scalars (bias corrections, NAdam's momentum
schedule, RAdam's rectification) are torch's Python floats: float64 here, rounded to each
parameter's dtype where torch hands them to a tensor op."""
from __future__ import annotations

import numpy as np

from .hyperparameters import check_betas, check_lr, check_non_negative, step_lr
from .leaves import buffers_like, like, paired_leaves


def _f64(x):
    return np.asarray(x, np.float64)


def _decay(p, g, lr, weight_decay, decoupled):
    """(p, g) after L2 weight decay (added to the gradient) or decoupled decay (AdamW's
    ``p * (1 - lr * wd)``, as ``p - (p * lr) * wd`` so that an array lr is applied per call)."""
    if weight_decay and decoupled:
        return p - (p * _f64(lr)).astype(p.dtype) * like(p, weight_decay), g
    if weight_decay:
        return p, g + like(g, weight_decay) * p
    return p, g


class Adamax:
    """Adamax (Kingma & Ba): Adam with the second moment's root replaced by a running maximum
    of ``|g|`` (the buffer ``exp_inf``), as torch.optim.Adamax."""

    def __init__(self, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, *,
                 maximize=False):
        check_lr(lr)
        check_non_negative(eps=eps, weight_decay=weight_decay)
        self.lr, self.betas, self.eps = lr, check_betas(betas), eps
        self.weight_decay, self.maximize = weight_decay, maximize

    def init(self, params):
        return {"step": np.zeros((), np.float32), "exp_avg": buffers_like(params),
                "exp_inf": buffers_like(params)}

    def update(self, grads, state, params, *, lr=None):
        """New (params, state); ``lr`` overrides the optimizer's learning rate for this call."""
        ps, gs, rebuild = paired_leaves(grads, params, state, ["exp_avg", "exp_inf"])
        lr = step_lr(self.lr, state["step"], lr)
        b1, b2 = self.betas
        step = state["step"] + 1
        clr = _f64(lr) / (1 - _f64(b1) ** step.astype(np.float64))
        new_ps, ms, us = [], [], []
        for p, g, m, u in zip(ps, gs, state["exp_avg"], state["exp_inf"]):
            if self.maximize:
                g = -g
            p, g = _decay(p, g, lr, self.weight_decay, False)
            m = m + like(g, 1 - b1) * (g - m)                      # torch's lerp_
            u = np.maximum(u * like(g, b2), np.abs(g) + like(g, self.eps))
            ms.append(m)
            us.append(u)
            new_ps.append(p - clr.astype(p.dtype) * (m / u))
        return rebuild(new_ps), {"step": step, "exp_avg": ms, "exp_inf": us}


class NAdam:
    """NAdam (Dozat): Adam with Nesterov momentum, whose momentum coefficient warms up by
    torch's ``momentum_decay`` schedule; the running product of those coefficients is the
    state's ``mu_product`` (float64, where torch keeps a float32 tensor unless its default
    dtype is float64). ``decoupled_weight_decay`` applies AdamW's decay."""

    def __init__(self, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, maximize=False):
        check_lr(lr)
        check_non_negative(eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay)
        self.lr, self.betas, self.eps = lr, check_betas(betas), eps
        self.weight_decay, self.momentum_decay = weight_decay, momentum_decay
        self.decoupled_weight_decay, self.maximize = decoupled_weight_decay, maximize

    def init(self, params):
        return {"step": np.zeros((), np.float32), "mu_product": np.ones((), np.float64),
                "exp_avg": buffers_like(params), "exp_avg_sq": buffers_like(params)}

    def update(self, grads, state, params, *, lr=None):
        """New (params, state); ``lr`` overrides the optimizer's learning rate for this call."""
        ps, gs, rebuild = paired_leaves(grads, params, state, ["exp_avg", "exp_avg_sq"])
        lr = step_lr(self.lr, state["step"], lr)
        b1, b2 = self.betas
        step = state["step"] + 1
        t = step.astype(np.float64)
        c2 = 1 - _f64(b2) ** t
        mu = b1 * (1.0 - 0.5 * _f64(0.96) ** (t * self.momentum_decay))
        mu_next = b1 * (1.0 - 0.5 * _f64(0.96) ** ((t + 1) * self.momentum_decay))
        mu_product = state["mu_product"] * mu
        grad_coef = -_f64(lr) * (1.0 - mu) / (1.0 - mu_product)
        avg_coef = -_f64(lr) * mu_next / (1.0 - mu_product * mu_next)
        new_ps, ms, vs = [], [], []
        for p, g, m, v in zip(ps, gs, state["exp_avg"], state["exp_avg_sq"]):
            if self.maximize:
                g = -g
            p, g = _decay(p, g, lr, self.weight_decay, self.decoupled_weight_decay)
            m = m + like(g, 1 - b1) * (g - m)                      # torch's lerp_
            v = like(g, b2) * v + like(g, 1 - b2) * (g * g)
            ms.append(m)
            vs.append(v)
            denom = np.sqrt(v / c2.astype(p.dtype)) + like(p, self.eps)
            p = p + grad_coef.astype(p.dtype) * (g / denom)
            new_ps.append(p + avg_coef.astype(p.dtype) * (m / denom))
        return rebuild(new_ps), {"step": step, "mu_product": mu_product,
                                         "exp_avg": ms, "exp_avg_sq": vs}


class RAdam:
    """RAdam (Liu et al.): Adam whose adaptive step is rectified by the variance of its
    second moment's estimate, and plain momentum SGD for the first steps, while that
    variance is undefined (torch's ``rho_t <= 5``). ``decoupled_weight_decay`` applies
    AdamW's decay."""

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, maximize=False):
        check_lr(lr)
        check_non_negative(eps=eps, weight_decay=weight_decay)
        self.lr, self.betas, self.eps = lr, check_betas(betas), eps
        self.weight_decay, self.decoupled_weight_decay = weight_decay, decoupled_weight_decay
        self.maximize = maximize

    def init(self, params):
        return {"step": np.zeros((), np.float32), "exp_avg": buffers_like(params),
                "exp_avg_sq": buffers_like(params)}

    def update(self, grads, state, params, *, lr=None):
        """New (params, state); ``lr`` overrides the optimizer's learning rate for this call."""
        ps, gs, rebuild = paired_leaves(grads, params, state, ["exp_avg", "exp_avg_sq"])
        lr = step_lr(self.lr, state["step"], lr)
        b1, b2 = self.betas
        step = state["step"] + 1
        t = step.astype(np.float64)
        c1, c2 = 1 - _f64(b1) ** t, 1 - _f64(b2) ** t
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * _f64(b2) ** t / c2
        rectified = rho_t > 5.0
        # clipped where unused: the first steps' rho_t <= 5 would take a negative root
        rect = np.sqrt(np.maximum((rho_t - 4) * (rho_t - 2) * rho_inf, 0.0)
                       / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        new_ps, ms, vs = [], [], []
        for p, g, m, v in zip(ps, gs, state["exp_avg"], state["exp_avg_sq"]):
            if self.maximize:
                g = -g
            p, g = _decay(p, g, lr, self.weight_decay, self.decoupled_weight_decay)
            m = m + like(g, 1 - b1) * (g - m)                      # torch's lerp_
            v = like(g, b2) * v + like(g, 1 - b2) * (g * g)
            ms.append(m)
            vs.append(v)
            upd = m / c1.astype(p.dtype) * like(p, lr)
            adaptive = np.sqrt(c2).astype(p.dtype) / (np.sqrt(v) + like(p, self.eps))
            upd = np.where(rectified, upd * adaptive * rect.astype(p.dtype), upd)
            new_ps.append(p - upd)
        return rebuild(new_ps), {"step": step, "exp_avg": ms, "exp_avg_sq": vs}
