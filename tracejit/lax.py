"""``tracejit.lax``: IR-level functions that have no NumPy spelling (as ``jax.lax``), and the
control-flow primitives (``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``; also at
``tracejit.cond`` etc.).

Each works on traced values inside ``jit``, ``grad`` and the other transforms (it emits its IR
op) and eagerly on NumPy arrays and Python numbers, so model code can call it either way::

    from tracejit import lax
    y = 0.5 * x * (1 + lax.erf(x / np.sqrt(2.0)))     # gelu
"""
from __future__ import annotations

import math

import numpy as np

from .tracer.numpy import math_functions
from .tracer.control_flow import cond, fori_loop, scan, switch, while_loop
from .tracer.tracer import Tracer

__all__ = ["erf", "logistic", "relu", "cond", "switch", "while_loop", "fori_loop", "scan"]


def _keep_float_dtype(x, out):
    """math_functions.erf / sigmoid follow SciPy (float16 and bfloat16 give float64); lax
    keeps a float input's dtype under tracing, as it does eagerly (and as torch does)."""
    return out.astype(x.dtype) if x.dtype.kind not in "biu" and out.dtype != x.dtype else out


def erf(x):
    """The error function: the IR's ``erf`` op under tracing, ``math.erf`` elementwise
    eagerly (the result keeps a float input's dtype; integers give float64, as traced)."""
    if isinstance(x, Tracer):
        return _keep_float_dtype(x, math_functions.erf(x))
    x = np.asarray(x)
    otype = np.float64 if x.dtype.kind in "biu" else x.dtype
    return np.vectorize(math.erf, otypes=[otype])(x) if x.size else x.astype(otype)


def relu(x):
    """max(x, 0) in x's dtype, with relu'(0) = 0 as torch's and JAX's (np.maximum's tie rule
    gives 0.5): the IR's ``relu`` op under tracing. NaN stays NaN; -0.0 gives 0.0."""
    if isinstance(x, Tracer):
        return math_functions.relu(x)
    x = np.asarray(x)
    return np.where(x <= 0, np.zeros((), x.dtype), x)


def logistic(x):
    """The logistic sigmoid 1 / (1 + exp(-x)): the IR's ``logistic`` op under tracing."""
    if isinstance(x, Tracer):
        return _keep_float_dtype(x, math_functions.sigmoid(x))
    with np.errstate(over="ignore"):    # exp(-x) = inf for very negative x gives exactly 0
        return 1.0 / (1.0 + np.exp(-x))
