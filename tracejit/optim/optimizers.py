"""Optimizers as pure functions, so a whole training step runs inside one jitted function.

    opt = Adam(lr=1e-3)
    state = opt.init(params)
    params, state = opt.update(grads, state, params)    # inside @jit, with grads from grad()

``params`` may be any pytree of arrays, including an ``nn.Module``. The update formulas are
PyTorch's (torch.optim.SGD, torch.optim.Adam and torch.optim.AdamW, single-tensor form).
"""
from __future__ import annotations

import numpy as np

from ..tracer.errors import caller_location, numpy_error
from ..tracer.pytree import flatten, unflatten


def _like(x, v):
    return np.asarray(v, dtype=x.dtype)


def _leaves(grads, params, state, buffers):
    """The parameter and gradient leaves, checked to pair up one to one with the same shapes
    (and with the state's buffers): zip would drop leaves silently and a broadcast change a
    parameter's shape."""
    ps, tree = flatten(params)
    gs, _ = flatten(grads)
    shapes = [np.shape(p) for p in ps]
    if [np.shape(g) for g in gs] != shapes:
        raise numpy_error(ValueError, f"optimizer update: the gradients' shapes "
                          f"{[np.shape(g) for g in gs]} do not match the parameters' {shapes}",
                          "pass one gradient of the same shape per parameter (as "
                          "tracejit.grad(loss)(params) returns)", loc=caller_location())
    for name in buffers:
        if [np.shape(b) for b in state[name]] != shapes:
            raise numpy_error(ValueError, f"optimizer update: state[{name!r}] does not hold "
                              "one buffer per parameter",
                              "make the state with this optimizer's init(params)",
                              loc=caller_location())
    return ps, gs, tree


class SGD:
    """SGD with optional momentum, dampening, Nesterov and (L2) weight decay, as in PyTorch;
    ``maximize`` ascends (torch's flag: the gradient negated first)."""

    def __init__(self, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 *, maximize=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov, self.maximize = weight_decay, nesterov, maximize

    def init(self, params):
        leaves, _ = flatten(params)
        return {"step": np.zeros((), np.float32),
                "momentum": [np.zeros_like(p) for p in leaves] if self.momentum else []}

    def update(self, grads, state, params):
        ps, gs, tree = _leaves(grads, params, state, ["momentum"] if self.momentum else [])
        step = state["step"] + 1
        new_ps, bufs = [], []
        for i, (p, g) in enumerate(zip(ps, gs)):
            if self.maximize:
                g = -g
            if self.weight_decay:
                g = g + _like(g, self.weight_decay) * p
            if self.momentum:
                buf = state["momentum"][i]
                damped = _like(g, self.momentum) * buf + _like(g, 1 - self.dampening) * g
                # PyTorch starts the buffer at the first gradient, undamped.
                buf = np.where(step == 1, g, damped)
                bufs.append(buf)
                g = g + _like(g, self.momentum) * buf if self.nesterov else buf
            new_ps.append(p - _like(p, self.lr) * g)
        return unflatten(tree, new_ps), {"step": step, "momentum": bufs}


class Adam:
    """Adam (Kingma & Ba) with bias correction and L2 weight decay, as torch.optim.Adam;
    torch's ``amsgrad`` (the running maximum of the second moment normalises the step: one
    more buffer per parameter in the state, ``max_exp_avg_sq``) and ``maximize``."""

    decoupled = False     # AdamW: the weight decay scales the parameter, not the gradient

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 *, maximize=False):
        self.lr, self.betas, self.eps, self.weight_decay = lr, tuple(betas), eps, weight_decay
        self.amsgrad, self.maximize = amsgrad, maximize

    def init(self, params):
        leaves, _ = flatten(params)
        state = {"step": np.zeros((), np.float32),
                 "exp_avg": [np.zeros_like(p) for p in leaves],
                 "exp_avg_sq": [np.zeros_like(p) for p in leaves]}
        if self.amsgrad:
            state["max_exp_avg_sq"] = [np.zeros_like(p) for p in leaves]
        return state

    def update(self, grads, state, params):
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if self.amsgrad else [])
        ps, gs, tree = _leaves(grads, params, state, names)
        b1, b2 = self.betas
        step = state["step"] + 1
        # Bias corrections, folded into one step size as PyTorch does; like PyTorch (which
        # computes them as Python floats) in float64, then rounded to each parameter's dtype.
        t = step.astype(np.float64)
        c1 = 1 - np.asarray(b1, np.float64) ** t
        c2 = 1 - np.asarray(b2, np.float64) ** t
        step_size = np.asarray(self.lr, np.float64) / c1
        new_ps, ms, vs, maxes = [], [], [], []
        for i, (p, g, m, v) in enumerate(zip(ps, gs, state["exp_avg"], state["exp_avg_sq"])):
            if self.maximize:
                g = -g
            if self.weight_decay and self.decoupled:
                # p - (p * lr) * wd, not p * (1 - lr * wd): with an array lr (a schedule's),
                # NumPy computed lr * wd once, at trace time, and later steps kept it
                p = p - (p * np.asarray(self.lr, np.float64)).astype(p.dtype) * _like(
                    p, self.weight_decay)
            elif self.weight_decay:
                g = g + _like(g, self.weight_decay) * p
            m = _like(g, b1) * m + _like(g, 1 - b1) * g
            v = _like(g, b2) * v + _like(g, 1 - b2) * (g * g)
            ms.append(m)
            vs.append(v)
            if self.amsgrad:
                v = np.maximum(state["max_exp_avg_sq"][i], v)
                maxes.append(v)
            denom = np.sqrt(v) / np.sqrt(c2).astype(p.dtype) + _like(p, self.eps)
            new_ps.append(p - step_size.astype(p.dtype) * m / denom)
        out = {"step": step, "exp_avg": ms, "exp_avg_sq": vs}
        if self.amsgrad:
            out["max_exp_avg_sq"] = maxes
        return unflatten(tree, new_ps), out


class AdamW(Adam):
    """torch.optim.AdamW: Adam whose weight decay (default 1e-2) is decoupled: each step first
    multiplies the parameter by ``1 - lr * weight_decay``."""

    decoupled = True

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False):
        super().__init__(lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
