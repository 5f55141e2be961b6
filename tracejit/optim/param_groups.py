"""torch's parameter groups for pytrees: each parameter leaf labelled by a function of its
path, and each label's leaves updated by an optimizer of its own (optax's multi_transform).

    opt = ParamGroups({"decay": AdamW(lr=1e-3), "no_decay": AdamW(lr=1e-3, weight_decay=0)},
                      label=lambda path, p: "no_decay" if p.ndim == 1 else "decay")

torch's ``[{"params": [...], "lr": ...}, ...]`` names tensors; a pytree's leaves have paths
instead (``".0.weight"`` in an ``nn.Sequential``, ``"['w']"`` in a dict), and one optimizer
per group carries the group's hyperparameters. A leaf labelled ``None`` is not updated (torch:
a tensor in no group). The labels are found at trace time, from the paths and the leaves'
shapes, so they cost nothing per step.

The groups' learning rates are the float64 array ``lr``, one per group in the dict's order
(``groups.lr[1] = 3e-4``, as torch's ``param_groups[1]["lr"]``; or a scheduler on the
ParamGroups), read at every call. jit reads per call the arrays of an object a step uses,
not those of the optimizers inside it, and guards none of their numbers: those optimizers'
own ``lr`` and other hyperparameters are read when the ParamGroups is made or the step
traced. A group whose optimizer's ``lr`` is a schedule keeps it (its entry is nan).
"""
from __future__ import annotations

import numpy as np

from ..tracer.errors import caller_location, numpy_error
from ..tracer.pytree import flatten, flatten_with_paths, state_leaves, unflatten
from .hyperparameters import traced
from .leaves import paired_leaves


class ParamGroups:
    """Several optimizers over one pytree of parameters, one per label (see the module
    docstring); the state holds one state per group, under its label."""

    def __init__(self, optimizers: dict, label):
        if not isinstance(optimizers, dict) or not optimizers or not all(
                isinstance(k, str) and hasattr(o, "update") for k, o in optimizers.items()):
            raise numpy_error(TypeError, "ParamGroups takes a dict of optimizers by label, not "
                              f"{optimizers!r}", "pass {'decay': AdamW(...), 'no_decay': "
                              "AdamW(weight_decay=0)}", loc=caller_location())
        if not callable(label):
            raise numpy_error(TypeError, f"label must be a function (path, leaf) -> label, not "
                              f"{label!r}", "pass label=lambda path, p: 'no_decay' if "
                              "p.ndim == 1 else 'decay'", loc=caller_location())
        self.optimizers, self.label = dict(optimizers), label
        self.lr = np.array([np.nan if callable(o.lr) else float(o.lr)
                            for o in self.optimizers.values()], np.float64)

    def _groups(self, params):
        """Each label's leaf indices, checked against the optimizers' labels."""
        leaves, paths, tree = flatten_with_paths(params)
        groups = {name: [] for name in self.optimizers}
        frozen = state_leaves(params)   # a model's buffers: in no group (leaves.paired_leaves)
        for i, (path, leaf) in enumerate(zip(paths, leaves)):
            name = None if i in frozen else self.label(path, leaf)
            if name is None:
                continue
            if name not in groups:
                raise numpy_error(ValueError, f"ParamGroups: the parameter {path!r} is "
                                  f"labelled {name!r}, which names no group (the groups: "
                                  f"{sorted(groups)})", "return one of the groups' labels, or "
                                  "None to leave the parameter unchanged", loc=caller_location())
            groups[name].append(i)
        return leaves, tree, groups

    def init(self, params):
        leaves, _, groups = self._groups(params)
        return {name: opt.init([leaves[i] for i in groups[name]])
                for name, opt in self.optimizers.items()}

    def update(self, grads, state, params, *, lr=None):
        """New (params, state); ``lr``: a dict of learning rates by label, overriding those
        groups' rates for this call."""
        paired_leaves(grads, params, {}, [])          # (the gradients' shapes checked)
        gs, _ = flatten(grads)
        leaves, tree, groups = self._groups(params)
        new, new_state = list(leaves), {}
        rates = traced(self.lr)
        for k, (name, opt) in enumerate(self.optimizers.items()):
            idx = groups[name]
            kw = ({"lr": lr[name]} if lr is not None and name in lr
                  else {} if callable(opt.lr) else {"lr": rates[k]})
            sub, new_state[name] = opt.update([gs[i] for i in idx], state[name],
                                              [leaves[i] for i in idx], **kw)
            for i, p in zip(idx, sub):
                new[i] = p
        return unflatten(tree, new), new_state
