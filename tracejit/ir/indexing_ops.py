"""The ops that read or write at integer indices: ``take`` (a gather along one axis), and the
scatters that write slices at indices into a copy of an array: ``scatter_add`` (repeated
indices accumulate) and ``scatter`` (they keep the last write, as NumPy's assignment does).
ops.py re-exports them, so the other stages name them ``ops.take`` like any op.
"""
from __future__ import annotations

import numpy as np

from .registry import IRTypeError, OpDef, register




def _take_rule(ts, attrs):
    x, idx = ts
    axis = attrs["axis"]
    if not idx.dtype.is_int:
        raise IRTypeError(f"take indices must be integers, got {idx}")
    if not 0 <= axis < x.ndim:
        raise IRTypeError(f"take axis {axis} out of range for {x}")
    return [x.with_shape(x.shape[:axis] + idx.shape + x.shape[axis + 1:])]


take = register(OpDef("take", 2, {"axis": "int"}, _take_rule,
                      lambda x, idx, axis: np.take(x, idx, axis=axis), "gather",
                      numpy=("take", "take_along_axis")))


def _scatter_add_rule(ts, attrs):
    x, idx, upd = ts
    (expected,) = _take_rule([x, idx], attrs)
    if upd != expected:
        raise IRTypeError(f"scatter_add updates must be {expected}, got {upd}")
    return [x]


def _scattering(write):
    """The reference impl of a scatter: x's slices along ``axis`` at idx get ``upd``'s, one
    index after another, through ``write(slices, idx, updates)``."""
    def impl(x, idx, upd, axis):
        out = x.copy()
        moved = np.moveaxis(out, axis, 0)
        upd = np.moveaxis(upd.reshape(x.shape[:axis] + (idx.size,) + x.shape[axis + 1:]),
                          axis, 0)
        write(moved, idx.reshape(-1), upd)
        return out
    return impl


# internal: the transpose of take (its vjp), and np.add.at (a ufunc method: assignment.py)
scatter_add = register(OpDef("scatter_add", 3, {"axis": "int"}, _scatter_add_rule,
                             _scattering(np.add.at), "scatter", internal=True))


def _overwrite(moved, idx, upd):
    moved[idx] = upd        # in order: a repeated index keeps its last write


# internal: x[idx] = v on a traced array (assignment.py), x with the slices at idx overwritten
scatter = register(OpDef("scatter", 3, {"axis": "int"}, _scatter_add_rule,
                         _scattering(_overwrite), "scatter", internal=True))
