"""Gathers on Tracers: np.take, np.take_along_axis and ``gather_linear``, which integer-array
indexing (indexing.py) lowers to, and the NumPy functions that are a take along one axis
(repeat, tile, roll). Constant indices are bounds-checked at trace time, traced ones when the
program runs.

Kept apart because index handling (negative and out-of-range indices, take modes, merging
indexed axes into one) is its own subject.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error, unsupported
from ..tracer import Tracer
from .arithmetic import (add, clip, floor_divide, greater_equal, less, logical_and,
                         multiply, remainder, where)
from .lifting import broadcast_to, convert, emit, lift, reshape, static_ints
from .rules import broadcast_shapes, dt, has_tracer, normalize_axis, whole_if_0d
from .shapes import iota, transpose


def take(x, indices, axis=None, mode="raise"):
    """np.take. mode="raise" checks constant indices now and traced ones when the program
    runs; "clip" and "wrap" bring every index into range first, as NumPy does."""
    x = lift(x)
    if mode not in ("raise", "clip", "wrap"):
        raise numpy_error(ValueError, f"np.take: mode must be 'raise', 'clip' or 'wrap', got "
                          f"{mode!r}", "pass one of those modes")
    if not isinstance(indices, (Tracer, np.ndarray)) and not (
            isinstance(indices, (list, tuple)) and has_tracer(indices)):
        indices = np.asarray(indices)       # NumPy force-casts what is not an array: [] and
        if indices.dtype.kind == "f":       # [1.5] give intp indices, a float array raises
            indices = indices.astype(np.intp)
    idx = lift(indices, x._trace)
    if not (dt(idx).is_int or dt(idx).is_bool):      # bools cast to intp, as in NumPy
        raise numpy_error(IndexError, f"np.take: indices must be integers, got {idx.dtype}",
                          "convert them with .astype(np.int64)")
    if whole_if_0d(axis, x.ndim) is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    outer = math.prod(x.shape[:axis])
    # NumPy refuses an empty axis only for a non-empty result, and checks indices only where
    # its loop over the axes before ``axis`` runs at all
    if n == 0 and outer * idx.size * math.prod(x.shape[axis + 1:]):
        raise numpy_error(IndexError, f"cannot do a non-empty take from an empty axis (axis "
                          f"{axis} of shape {x.shape})", "check the shape of the array")
    idx = convert(idx, dtypes.int64)
    if mode == "clip":          # negative indices clip to 0: they do not count from the end
        idx = clip(idx, np.int64(0), np.int64(n - 1))
    elif mode == "wrap":
        idx = remainder(idx, np.int64(n))
    else:
        # The take op itself counts negative indices from the end and fails on the others.
        known = constant_value(idx)
        if known is not None and outer:
            check_bounds(known, n, axis)
    return emit(x._trace, ops.take, [x, idx], weak=x._weak, axis=axis)


def constant_value(x: Tracer) -> np.ndarray | None:
    """The value of a Tracer made by a constant op (through broadcasts and converts)."""
    op = x._value.op
    while op is not None and op.opdef in (ops.broadcast_in_dim, ops.convert, ops.reshape):
        op = op.operands[0].op
    if op is None or op.opdef is not ops.constant:
        return None
    return np.asarray(op.attrs["value"])


def check_bounds(indices: np.ndarray, n: int, axis: int) -> None:
    """Constant indices out of range fail at trace time, at the user's line. (Unsigned ones
    are read as intp, as NumPy does: a uint64 2**64 - 1 is -1.)"""
    indices = indices.astype(np.int64) if indices.dtype.kind == "u" else indices
    if indices.size:
        bad = indices[(indices < -n) | (indices >= n)]
        if bad.size:
            raise numpy_error(IndexError, f"index {bad.flat[0]} is out of bounds for axis "
                              f"{axis} with size {n}",
                              "indices must lie in [-n, n); np.take(..., mode='clip' or "
                              "'wrap') brings them into range")


def wrap_index(idx: Tracer, n: int) -> Tracer:
    """Negative indices count from the end, as in NumPy."""
    idx = convert(idx, dtypes.int64)
    return where(less(idx, 0), add(idx, np.int64(n)), idx)


def gather_linear(x: Tracer, index_arrays: list[Tracer], axes: list[int],
                  in_range: list[bool] | None = None) -> Tracer:
    """x[..., i0, ..., i1, ...] with index arrays on ``axes`` (broadcast together) and full
    slices elsewhere; the indexed axes are replaced by the broadcast index shape, placed where
    the first indexed axis was. Works by merging the indexed axes into one and taking along it.

    A traced index outside [-n, n) of its axis must fail as in NumPy, but in the merged
    (linear) index it could land on another element; so such positions get the index
    ``merged``, which the take op rejects when the program runs. Constant indices are checked
    now; ``in_range[k]`` marks index arrays known to be in range (iotas).
    """
    shape = broadcast_shapes(*(i.shape for i in index_arrays))
    first = axes[0]
    rest = [a for a in range(x.ndim) if a not in axes]
    perm = rest[:first] + list(axes) + rest[first:]
    xt = transpose(x, perm)
    merged = math.prod(x.shape[a] for a in axes)
    xt = reshape(xt, [x.shape[a] for a in rest[:first]] + [merged]
                 + [x.shape[a] for a in rest[first:]])
    in_range = in_range or [False] * len(index_arrays)
    linear = valid = None
    stride = 1
    for idx, a, known in reversed(list(zip(index_arrays, axes, in_range))):
        n = x.shape[a]
        idx = convert(broadcast_to(idx, shape), dtypes.int64)
        value = constant_value(idx)
        if value is not None:
            check_bounds(value, n, a)
        if len(index_arrays) == 1:
            linear = idx        # the take op counts negatives from the end, rejects the rest
            break
        term = wrap_index(idx, n)
        if value is None and not known:
            ok = logical_and(greater_equal(term, np.int64(0)), less(term, np.int64(n)))
            valid = ok if valid is None else logical_and(valid, ok)
        if stride != 1:
            term = multiply(term, np.int64(stride))
        linear = term if linear is None else add(linear, term)
        stride *= n
    if valid is not None:
        linear = where(valid, linear, np.int64(merged))
    out = emit(x._trace, ops.take, [xt, linear], weak=x._weak, axis=first)
    if out.size == 0 and linear.size and constant_value(linear) is None:
        # NumPy checks every index even where the result is empty (x[:, i] of a 0-row x), but
        # the take checks the ones it reads only: a take of the indices alone checks them
        if not merged:
            raise numpy_error(IndexError, f"index out of bounds for axis {axes[0]} with size 0",
                              "an axis of size 0 has no element to index")
        from .shapes import full
        probe = emit(x._trace, ops.take, [full((merged,), np.int64(0), trace=x._trace),
                                          reshape(linear, (-1,))], axis=0)
        zero = emit(x._trace, ops.reduce_max, [probe], axes=(0,))
        out = add(out, broadcast_to(convert(zero, dt(out)), out.shape))   # keeps the probe
    return out


def take_along_axis(x, indices, axis):
    x = lift(x)
    idx = lift(indices, x._trace)
    if not dt(idx).is_int:
        raise numpy_error(IndexError, f"`indices` must be an integer array (got {idx.dtype})",
                          "convert them with .astype(np.int64)")
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise numpy_error(ValueError, "`indices` and `arr` must have the same number of "
                          f"dimensions (shapes {idx.shape} and {x.shape})",
                          "add size-1 axes to the indices, e.g. indices[:, None]")
    shape = broadcast_shapes(tuple(1 if i == axis else n for i, n in enumerate(x.shape)),
                             tuple(1 if i == axis else n for i, n in enumerate(idx.shape)))
    shape = tuple(idx.shape[i] if i == axis else n for i, n in enumerate(shape))
    arrays = [iota(shape, d, trace=x._trace) if d != axis else broadcast_to(idx, shape)
              for d in range(x.ndim)]
    return gather_linear(x, arrays, list(range(x.ndim)), [d != axis for d in range(x.ndim)])


# ---------------------------------------------------------------------------------------------
# NumPy functions that are one take per axis


def repeat(a, repeats, axis=None):
    x = lift(a)
    if isinstance(repeats, Tracer) and repeats.ndim == 0:
        repeats = static_ints(repeats)[0]       # one count: Python needs its value
    if isinstance(repeats, Tracer) or (isinstance(repeats, (list, tuple))
                                       and has_tracer(repeats)):
        raise unsupported("np.repeat with traced per-element repeats (the result's size "
                          "depends on the data)", "pass one integer or constant counts")
    if whole_if_0d(axis, x.ndim) is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    idx = np.repeat(np.arange(x.shape[axis]), repeats)    # NumPy checks constant counts
    return take(x, idx, axis)


def unravel_index(indices, shape, order="C"):
    """np.unravel_index of traced flat indices: one intp array per axis (indices out of range
    are not checked, as NumPy's ValueError would need their values)."""
    idx = lift(indices)
    if not dt(idx).is_int:
        raise numpy_error(TypeError, f"only int indices permitted, got {idx.dtype}",
                          "convert them with .astype(np.int64)")
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if order not in ("C", "F"):
        raise numpy_error(ValueError, "only 'C' or 'F' order is permitted", "pass one of them")
    idx = convert(idx, dtypes.int64)
    axes = list(range(len(dims)))[::-1] if order == "C" else list(range(len(dims)))
    out = [None] * len(dims)
    stride = 1
    for i, ax in enumerate(axes):
        q = idx if stride == 1 else floor_divide(idx, stride)
        out[ax] = q if i == len(axes) - 1 else remainder(q, dims[ax])
        stride *= dims[ax]
    return tuple(out)


def tile(a, reps):
    x = lift(a)
    reps = static_ints(reps)
    nd = max(x.ndim, len(reps))
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    reps = (1,) * (nd - len(reps)) + reps
    for ax, r in enumerate(reps):
        if r != 1:
            x = take(x, np.tile(np.arange(x.shape[ax]), r), ax)
    return x


def roll(a, shift, axis=None):
    x = lift(a)
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, 0), x.shape)
    if isinstance(shift, Tracer) and shift.ndim == 0 and np.ndim(axis) == 0:
        # a traced shift (jnp.roll takes one; under vmap, one per example): the indices
        # (i - shift) mod n, always in range
        ax = normalize_axis(axis, x.ndim)
        n = x.shape[ax]
        if not dt(shift).is_int:
            raise numpy_error(TypeError, f"roll's shift must be an integer, got {shift.dtype}",
                              "convert it with .astype(int)")
        if n:
            i = np.arange(n, dtype=np.int64) - convert(shift, dtypes.int64)
            x = take(x, remainder(i, np.int64(n)), ax)
        return x
    shifts = np.broadcast_to(shift, np.shape(axis)).tolist() if np.ndim(axis) else [shift]
    for ax, sh in zip(np.atleast_1d(axis).tolist(), np.atleast_1d(shifts).tolist()):
        ax = normalize_axis(ax, x.ndim)
        n = x.shape[ax]
        if n:
            x = take(x, (np.arange(n) - int(sh)) % n, ax)
    return x


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """np.lib.stride_tricks.sliding_window_view: the ``window`` op (a copy, not a view:
    traced arrays have no strides; fused, it is index arithmetic in the kernel that reads
    it), the window dims last, as NumPy's."""
    x = lift(x)
    window = (window_shape,) if np.ndim(window_shape) == 0 else tuple(window_shape)
    axes = (tuple(range(x.ndim)) if axis is None
            else (axis,) if np.ndim(axis) == 0 else tuple(axis))
    if len(axes) != len(window):
        raise numpy_error(ValueError, "Must provide matching length window_shape and axis; "
                          f"got {len(window)} window_shape elements and {len(axes)} axes "
                          "elements.", "give one window size per axis")
    if writeable:
        raise unsupported("sliding_window_view(..., writeable=True)",
                          "build the result you need from the windows instead")
    axes = [normalize_axis(a, x.ndim) for a in axes]     # of the input, before windows
    shape = list(x.shape)
    for w, a in zip(window, axes):
        if w < 0 or w > shape[a]:
            raise numpy_error(ValueError, "window shape cannot be larger than input array "
                              "shape", "use a window no longer than the axis")
        shape[a] -= w - 1
    if len(set(axes)) == len(axes):
        return emit(x._trace, ops.window, [x], weak=x._weak, dims=axes, sizes=list(window))
    for w, a in zip(window, axes):       # an axis windowed twice: windows of windows
        x = emit(x._trace, ops.window, [x], weak=x._weak, dims=[a], sizes=[w])
    return x


# ---------------------------------------------------------------------------------------------
# Takes with constant positions: np.resize, np.compress (a constant condition), np.delete and
# np.insert (constant indices), np.choose, np.ravel_multi_index


def resize(a, new_shape):
    """np.resize: the flattened array repeated (or cut) to fill ``new_shape``."""
    x = lift(a)
    shape = static_ints(new_shape)
    if any(d < 0 for d in shape):
        raise numpy_error(ValueError, "all elements of `new_shape` must be non-negative",
                          "pass a shape of non-negative sizes")
    n = math.prod(shape)
    flat = reshape(x, (-1,))
    if x.size == 0 or n == 0:
        from .shapes import full
        return full(shape, np.zeros((), x.dtype), trace=x._trace)
    return reshape(take(flat, np.arange(n) % x.size, 0), shape)


def _constant(x, what, hint):
    """A constant argument's value; a traced one is refused (the result's size would depend
    on the data)."""
    if isinstance(x, Tracer) or (isinstance(x, (list, tuple)) and has_tracer(x)):
        value = constant_value(x) if isinstance(x, Tracer) else None
        if value is None:
            raise unsupported(f"{what} with a traced {hint} (the result's size depends on "
                              "the data)", "pass a constant, or keep the shape with "
                              "np.where(mask, x, fill)")
        return value
    return np.asarray(x)


def compress(condition, a, axis=None, out=None):
    x = lift(a)
    cond = _constant(condition, "np.compress", "condition").astype(bool).ravel()
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    if cond.size > x.shape[axis]:
        raise numpy_error(IndexError, f"index {cond.size - 1} is out of bounds for axis "
                          f"{axis} with size {x.shape[axis]}", "shorten the condition")
    return take(x, np.flatnonzero(cond), axis)


def delete(arr, obj, axis=None):
    x = lift(arr)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(obj, slice):
        drop = np.arange(n)[obj]
    else:
        drop = _constant(obj, "np.delete", "index")
        if drop.dtype == bool:
            drop = np.flatnonzero(drop)
        elif drop.size == 0 and not isinstance(obj, (np.ndarray, Tracer)):
            drop = drop.astype(np.intp)     # [] is float64 to np.asarray: NumPy deletes none
    keep = np.delete(np.arange(n), drop)        # NumPy's checks and rules for the positions
    return take(x, keep, axis)


def insert(arr, obj, values, axis=None):
    """np.insert at constant positions: NumPy's own np.insert, run on element numbers (x's
    0, 1, ..., the values' -1, -2, ...), says where each element of the result comes from."""
    from .lifting import concatenate
    x = lift(arr)
    pos = obj if isinstance(obj, slice) else _constant(obj, "np.insert", "index")
    v = convert(lift(values, x._trace), dt(x))
    numbers = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    markers = -1 - np.arange(v.size, dtype=np.int64).reshape(v.shape)
    where_from = np.insert(numbers, pos, markers, axis)
    flat = concatenate([reshape(x, (-1,)), reshape(v, (-1,))], 0)
    src = np.where(where_from >= 0, where_from, x.size - 1 - where_from)
    return reshape(take(flat, src.ravel(), 0), where_from.shape)


def choose(a, choices, out=None, mode="raise"):
    """np.choose: the choice each index picks, elementwise (indices clipped or wrapped by
    ``mode``; out of range with mode='raise' is checked only for constant indices)."""
    from .arithmetic import equal
    from .lifting import lift_all
    from .rules import result_dtype
    idx, *cs = lift_all(a, *choices)
    n = len(cs)
    if mode == "clip":
        idx = clip(idx, 0, n - 1)
    elif mode == "wrap":
        idx = remainder(idx, n)
    else:
        value = constant_value(idx)
        if value is not None and ((value < 0) | (value >= n)).any():
            raise numpy_error(ValueError, "invalid entry in choice array",
                              "pass indices within the choices, or mode='clip'/'wrap'")
    d = result_dtype(*(convert(c, dt(c)) for c in cs))
    out = convert(cs[-1], d)
    for i in range(n - 2, -1, -1):
        out = where(equal(idx, i), convert(cs[i], d), out)
    return broadcast_to(out, broadcast_shapes(idx.shape, *(c.shape for c in cs)))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """np.ravel_multi_index of traced indices (mode 'raise' not checked: it needs values)."""
    from .lifting import lift_all
    idx = [convert(i, dtypes.int64) for i in lift_all(*multi_index)]
    dims = tuple(int(d) for d in dims)
    modes = mode if isinstance(mode, (list, tuple)) else [mode] * len(dims)
    axes = range(len(dims) - 1, -1, -1) if order == "C" else range(len(dims))
    out, stride = None, 1
    for ax in axes:
        i = idx[ax]
        if modes[ax] == "clip":
            i = clip(i, 0, dims[ax] - 1)
        elif modes[ax] == "wrap":
            i = remainder(i, dims[ax])
        term = i if stride == 1 else multiply(i, stride)
        out = term if out is None else add(out, term)
        stride *= dims[ax]
    return out
