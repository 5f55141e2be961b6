"""The leaves an optimizer's update walks: parameters, gradients and per-parameter state
buffers, paired up one to one and checked, since zip would drop leaves silently and a
broadcast would change a parameter's shape."""
from __future__ import annotations

import numpy as np

from ..tracer.errors import caller_location, numpy_error
from ..tracer.pytree import flatten, state_leaves, unflatten


def like(x, v):
    """Hyperparameter ``v`` as an array of ``x``'s dtype: torch applies its Python-float
    hyperparameters in the tensor's precision, and a float64 scalar would promote NumPy's."""
    return np.asarray(v, dtype=x.dtype)


def buffers_like(params, fill=0.0) -> list:
    """One state buffer per parameter leaf, of its shape and dtype, filled with ``fill``."""
    leaves, _ = flatten(params)
    return [np.full_like(p, fill) for p in leaves]


def paired_leaves(grads, params, state, buffers):
    """The parameter and gradient leaves, checked to pair up one to one with the same shapes
    (and with the state's ``buffers``, by name), and ``rebuild(new leaves)`` -> the new
    parameters, in the parameters' tree, with the model's state (an nn.Module's buffers:
    BatchNorm's running statistics) kept as the forward pass left it: buffers are no
    parameters, and no step (weight decay, Adam's momentum) moves them, as in torch."""
    ps, tree = flatten(params)
    gs, _ = flatten(grads)
    shapes = [np.shape(p) for p in ps]
    if [np.shape(g) for g in gs] != shapes:
        raise numpy_error(ValueError, f"optimizer update: the gradients' shapes "
                          f"{[np.shape(g) for g in gs]} do not match the parameters' {shapes}",
                          "pass one gradient of the same shape per parameter (as "
                          "tracejit.grad(loss)(params) returns)", loc=caller_location())
    for name in buffers:
        if name not in state or [np.shape(b) for b in state[name]] != shapes:
            raise numpy_error(ValueError, f"optimizer update: state[{name!r}] does not hold "
                              "one buffer per parameter",
                              "make the state with this optimizer's init(params)",
                              loc=caller_location())
    frozen = state_leaves(params)

    def rebuild(new_ps):
        return unflatten(tree, [ps[i] if i in frozen else p for i, p in enumerate(new_ps)])
    return ps, gs, rebuild
