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
    """One state buffer per parameter leaf, of its shape and dtype, filled with ``fill``; none
    for the model's state (an nn.Module's buffers), which no step moves (``paired_leaves``)."""
    leaves, _ = flatten(params)
    frozen = state_leaves(params)
    return [np.full_like(p, fill) for i, p in enumerate(leaves) if i not in frozen]


def paired_leaves(grads, params, state, buffers):
    """The parameter and gradient leaves but the model's state, checked to pair up one to one
    with the same shapes (and with the state's ``buffers``, by name), and ``rebuild(new
    leaves)`` -> the new parameters, in the parameters' tree, with the model's state (an
    nn.Module's buffers: BatchNorm's running statistics) kept as the forward pass left it:
    buffers are no parameters, and no step (weight decay, Adam's momentum) moves them, as in
    torch."""
    leaves, tree = flatten(params)
    gs, _ = flatten(grads)
    shapes = [np.shape(p) for p in leaves]
    if [np.shape(g) for g in gs] != shapes:
        raise numpy_error(ValueError, f"optimizer update: the gradients' shapes "
                          f"{[np.shape(g) for g in gs]} do not match the parameters' {shapes}",
                          "pass one gradient of the same shape per parameter (as "
                          "tracejit.grad(loss)(params) returns)", loc=caller_location())
    # The model's state is left out of the step altogether (no state buffers of its own):
    # Adam's arithmetic on an int64 num_batches_tracked divided 0 by 0 (eps cast to 0), a
    # RuntimeWarning at every eager step, and its moments were kept for nothing
    frozen = state_leaves(params)
    moved = [i for i in range(len(leaves)) if i not in frozen]
    ps, gs = [leaves[i] for i in moved], [gs[i] for i in moved]
    shapes = [shapes[i] for i in moved]
    for name in buffers:
        if name not in state or [np.shape(b) for b in state[name]] != shapes:
            raise numpy_error(ValueError, f"optimizer update: state[{name!r}] does not hold "
                              "one buffer per parameter",
                              "make the state with this optimizer's init(params)",
                              loc=caller_location())

    def rebuild(new_ps):
        out = list(leaves)
        for i, p in zip(moved, new_ps):
            out[i] = p
        return unflatten(tree, out)
    return ps, gs, rebuild
