"""Contractions of Tracers: matmul (with NumPy's 1-D and batch rules), dot, tensordot and
outer, all lowered to one batched ``matmul`` op between reshapes and transposes.

Kept apart because the contraction rules (which axes meet, where 1-D operands' axes go, NumPy's
shape-mismatch messages) are their own subject; callers reach them as ``primitives.NAME``.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir import ops
from .elementwise import multiply
from .errors import numpy_error, unsupported
from .primitives import broadcast_shapes, convert, emit, lift_all, result_dtype
from .shapes import broadcast_to, normalize_axis, reshape, transpose


def matmul(a, b, _name="matmul"):
    a, b = lift_all(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise numpy_error(ValueError, f"matmul: Input operand {0 if a.ndim == 0 else 1} does "
                          f"not have enough dimensions (shapes {a.shape} @ {b.shape})",
                          "multiply by a scalar with * instead")
    target = result_dtype(a, b)
    if target.is_bool:
        raise unsupported("matmul of bool arrays", "convert them to a numeric dtype")
    a, b = convert(a, target), convert(b, target)
    a2 = reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        what = (f"shapes {a.shape} and {b.shape} not aligned: {a2.shape[-1]} (dim "
                f"{a.ndim - 1}) != {b2.shape[-2]} (dim {builtins.max(b.ndim - 2, 0)})"
                if _name == "dot" else
                f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size "
                f"{b2.shape[-2]} is different from {a2.shape[-1]}): shapes {a.shape} @ "
                f"{b.shape}")
        raise numpy_error(ValueError, what, "the left operand's last dimension must equal the "
                          "right operand's second-to-last (its only one if 1-D); check the "
                          "shapes, or transpose one operand (x.T)")
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = broadcast_to(a2, batch + a2.shape[-2:])
    b2 = broadcast_to(b2, batch + b2.shape[-2:])
    out = emit(a._trace, ops.matmul, [a2, b2], weak=a._weak and b._weak)
    shape = list(out.shape)
    if b.ndim == 1:
        shape.pop(-1)
    if a.ndim == 1:
        shape.pop(-2 if b.ndim != 1 else -1)
    return reshape(out, shape)


def dot(a, b):
    a, b = lift_all(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, _name="dot")
    # N-d dot: contract a's last axis with b's second-to-last.
    return tensordot(a, b, axes=([a.ndim - 1], [builtins.max(b.ndim - 2, 0)]))


def tensordot(a, b, axes=2):
    a, b = lift_all(a, b)
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= builtins.min(a.ndim, b.ndim):
            raise numpy_error(ValueError, f"tensordot: axes={axes} for shapes {a.shape} and "
                              f"{b.shape}", "axes must be at most the smaller number of "
                              "dimensions")
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = ([axes[0]] if np.isscalar(axes[0]) else list(axes[0]),
                      [axes[1]] if np.isscalar(axes[1]) else list(axes[1]))
        ax_a = [normalize_axis(i, a.ndim) for i in ax_a]
        ax_b = [normalize_axis(i, b.ndim) for i in ax_b]
    if len(ax_a) != len(ax_b) or builtins.any(a.shape[i] != b.shape[j]
                                               for i, j in zip(ax_a, ax_b)):
        raise numpy_error(ValueError, f"shape-mismatch for sum: contracting axes {ax_a} of "
                          f"shape {a.shape} with axes {ax_b} of shape {b.shape}",
                          "the contracted dimensions must have equal sizes")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = math.prod(a.shape[i] for i in ax_a)
    a2 = reshape(transpose(a, free_a + ax_a), (math.prod(a.shape[i] for i in free_a), k))
    b2 = reshape(transpose(b, ax_b + free_b), (k, math.prod(b.shape[i] for i in free_b)))
    return reshape(matmul(a2, b2), [a.shape[i] for i in free_a] + [b.shape[i] for i in free_b])


def outer(a, b):
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))
