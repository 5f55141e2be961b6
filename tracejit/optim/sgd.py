"""torch.optim.SGD as a pure function of (gradients, state, parameters)."""
from __future__ import annotations

import numpy as np

from .hyperparameters import check_lr, check_non_negative, step_lr
from .leaves import buffers_like, like, paired_leaves


class SGD:
    """SGD with optional momentum, dampening, Nesterov and (L2) weight decay, as in PyTorch;
    ``maximize`` ascends (torch's flag: the gradient negated first)."""

    def __init__(self, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 *, maximize=False):
        check_lr(lr)
        check_non_negative(momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov, self.maximize = weight_decay, nesterov, maximize

    def init(self, params):
        return {"step": np.zeros((), np.float32),
                "momentum": buffers_like(params) if self.momentum else []}

    def update(self, grads, state, params, *, lr=None):
        """New (params, state); ``lr`` overrides the optimizer's learning rate for this call."""
        ps, gs, rebuild = paired_leaves(grads, params, state,
                                        ["momentum"] if self.momentum else [])
        lr = step_lr(self.lr, state["step"], lr)
        step = state["step"] + 1
        new_ps, bufs = [], []
        for i, (p, g) in enumerate(zip(ps, gs)):
            if self.maximize:
                g = -g
            if self.weight_decay:
                g = g + like(g, self.weight_decay) * p
            if self.momentum:
                buf = state["momentum"][i]
                damped = like(g, self.momentum) * buf + like(g, 1 - self.dampening) * g
                # PyTorch starts the buffer at the first gradient, undamped.
                buf = np.where(step == 1, g, damped)
                bufs.append(buf)
                g = g + like(g, self.momentum) * buf if self.nesterov else buf
            new_ps.append(p - like(p, lr) * g)
        return rebuild(new_ps), {"step": step, "momentum": bufs}
