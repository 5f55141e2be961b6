"""torch.optim.RMSprop as a pure function of (gradients, state, parameters)."""
from __future__ import annotations

import numpy as np

from .hyperparameters import check_lr, check_non_negative, step_lr
from .leaves import buffers_like, like, paired_leaves


class RMSprop:
    """RMSprop (Hinton): each gradient divided by the root of a running mean of its squares.
    torch's flags: ``centered`` (the running mean's own square subtracted: a variance, one
    more buffer ``grad_avg``), ``momentum`` (a buffer ``momentum_buffer``, started at zero),
    L2 ``weight_decay`` and ``maximize``. Buffers exist only for the flags set, as torch's."""

    def __init__(self, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, *, maximize=False):
        check_lr(lr)
        check_non_negative(alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum)
        self.lr, self.alpha, self.eps, self.weight_decay = lr, alpha, eps, weight_decay
        self.momentum, self.centered, self.maximize = momentum, centered, maximize

    def _buffers(self) -> list:
        return (["square_avg"] + (["grad_avg"] if self.centered else [])
                + (["momentum_buffer"] if self.momentum > 0 else []))

    def init(self, params):
        state = {"step": np.zeros((), np.float32)}
        for name in self._buffers():
            state[name] = buffers_like(params)
        return state

    def update(self, grads, state, params, *, lr=None):
        """New (params, state); ``lr`` overrides the optimizer's learning rate for this call."""
        names = self._buffers()
        ps, gs, rebuild = paired_leaves(grads, params, state, names)
        lr = step_lr(self.lr, state["step"], lr)
        alpha, centered, momentum = self.alpha, self.centered, self.momentum
        out = {"step": state["step"] + 1, **{name: [] for name in names}}
        new_ps = []
        for i, (p, g) in enumerate(zip(ps, gs)):
            if self.maximize:
                g = -g
            if self.weight_decay:
                g = g + like(g, self.weight_decay) * p
            sq = like(g, alpha) * state["square_avg"][i] + like(g, 1 - alpha) * (g * g)
            out["square_avg"].append(sq)
            if centered:
                ga = state["grad_avg"][i]
                ga = ga + like(g, 1 - alpha) * (g - ga)          # torch's lerp_
                out["grad_avg"].append(ga)
                avg = np.sqrt(sq - ga * ga) + like(g, self.eps)
            else:
                avg = np.sqrt(sq) + like(g, self.eps)
            if momentum > 0:
                buf = like(g, momentum) * state["momentum_buffer"][i] + g / avg
                out["momentum_buffer"].append(buf)
                new_ps.append(p - like(p, lr) * buf)
            else:
                new_ps.append(p - like(p, lr) * (g / avg))
        return rebuild(new_ps), out
