"""The ops that read or write at integer indices: ``take`` (a gather along one axis), the
scatters that write slices at indices into a copy of an array: ``scatter_add`` (repeated
indices accumulate) and ``scatter`` (they keep the last write, as NumPy's assignment does), and
``update_slice``, which writes a strided box (``x[a:b:s] = v``).
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


def update_box(starts, steps, box_shape) -> tuple:
    """The slices of the box ``update_slice`` writes: ``starts`` with ``steps``, as many
    elements per dim as the update has (the one place every stage computes it from)."""
    return tuple(slice(a, a + (m - 1) * s + 1 if m else a, s)
                 for a, m, s in zip(starts, box_shape, steps))


def _update_slice_rule(ts, attrs):
    x, v = ts
    starts, steps = attrs["starts"], attrs["steps"]
    if v.dtype != x.dtype or v.ndim != x.ndim:
        raise IRTypeError(f"update_slice writes a {x.dtype} array of {x.ndim} dims into {x}, "
                          f"got {v}")
    if not len(starts) == len(steps) == x.ndim or min(steps, default=1) < 1 or any(
            a < 0 or (m and a + (m - 1) * s >= n)
            for a, s, m, n in zip(starts, steps, v.shape, x.shape)):
        raise IRTypeError(f"update_slice of {v} at starts {starts} steps {steps} does not "
                          f"fit in {x}")
    return [x]


def _update_slice_impl(x, v, starts, steps):
    out = x.copy()
    out[update_box(starts, steps, v.shape)] = v
    return out


# internal: x[a:b:s] = v on a traced array (assignment.py): x with a strided box overwritten.
# Its own op, not a where() over x, so that the program can write the box in place when x is
# not read again (plan.py): a loop's x[i] = v costs what the box does, not the whole array.
update_slice = register(OpDef("update_slice", 2, {"starts": "ints", "steps": "ints"},
                              _update_slice_rule, _update_slice_impl, "movement",
                              internal=True))
