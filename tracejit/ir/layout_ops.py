"""Layout ops, which move elements without computing on them (broadcast_in_dim, reshape,
transpose, slice, rev, window), and the data movement of pad and concatenate. Each layout op
has an index map (OpDef.index_map): fusion folds it into the index arithmetic of a kernel.
ops.py re-exports them, so the other stages name them ``ops.reshape`` like any op.
"""
from __future__ import annotations

import builtins

import numpy as np

from .registry import IRTypeError, OpDef, register
from .types import TensorType

def _broadcast_rule(ts, attrs):
    (t,) = ts
    shape, dims = attrs["shape"], attrs["dims"]
    if len(dims) != t.ndim or len(set(dims)) != len(dims) or list(dims) != sorted(dims):
        raise IRTypeError(f"broadcast_in_dim dims {dims} invalid for operand {t}")
    for i, d in enumerate(dims):
        if not 0 <= d < len(shape) or t.shape[i] not in (1, shape[d]):
            raise IRTypeError(f"cannot broadcast {t} to {list(shape)} with dims {list(dims)}")
    return [t.with_shape(shape)]


def _broadcast_impl(x, shape, dims):
    view = [1] * len(shape)
    for i, d in enumerate(dims):
        view[d] = x.shape[i]
    return np.broadcast_to(x.reshape(view), shape).copy()


def _broadcast_index(op, idx):
    x, a = op.operands[0], op.attrs
    return tuple("0" if x.shape[k] == 1 and a["shape"][d] != 1 else idx[d]
                 for k, d in enumerate(a["dims"]))


broadcast_in_dim = register(OpDef("broadcast_in_dim", 1, {"shape": "ints", "dims": "ints"},
                                  _broadcast_rule, _broadcast_impl, "layout",
                                  index_map=_broadcast_index,
                                  numpy=("broadcast_to", "broadcast_arrays")))


def _reshape_rule(ts, attrs):
    (t,) = ts
    shape = attrs["shape"]
    if TensorType(t.dtype, shape).size != t.size:
        raise IRTypeError(f"cannot reshape {t} to {list(shape)}")
    return [t.with_shape(shape)]


def _reshape_index(op, idx):
    x, shape = op.operands[0], op.attrs["shape"]
    squeezed = [i for i, n in zip(idx, shape) if n != 1]
    if [n for n in x.shape if n != 1] == [n for n in shape if n != 1]:
        it = iter(squeezed)
        return tuple("0" if n == 1 else next(it) for n in x.shape)
    return ("?",) * x.type.ndim


reshape = register(OpDef("reshape", 1, {"shape": "ints"}, _reshape_rule,
                         lambda x, shape: x.reshape(shape).copy(), "layout",
                         index_map=_reshape_index, numpy=("reshape", "ravel")))


def _transpose_rule(ts, attrs):
    (t,) = ts
    perm = attrs["perm"]
    if sorted(perm) != list(range(t.ndim)):
        raise IRTypeError(f"transpose perm {list(perm)} invalid for {t}")
    return [t.with_shape([t.shape[p] for p in perm])]


def _transpose_index(op, idx):
    out = [None] * len(idx)
    for k, p in enumerate(op.attrs["perm"]):
        out[p] = idx[k]
    return tuple(out)


transpose = register(OpDef("transpose", 1, {"perm": "ints"}, _transpose_rule,
                           lambda x, perm: np.transpose(x, perm).copy(), "layout",
                           index_map=_transpose_index, numpy=("transpose", "swapaxes")))


def slice_len(start: int, stop: int, step: int) -> int:
    return max(0, -(-(stop - start) // step))


def _slice_rule(ts, attrs):
    (t,) = ts
    starts, stops, steps = attrs["starts"], attrs["stops"], attrs["steps"]
    if not len(starts) == len(stops) == len(steps) == t.ndim:
        raise IRTypeError(f"slice needs one start, stop and step per dimension of {t}")
    shape = []
    for d, (a, b, s) in enumerate(zip(starts, stops, steps)):
        if s <= 0 or not 0 <= a <= t.shape[d] or not a <= b <= t.shape[d]:
            raise IRTypeError(f"slice {a}:{b}:{s} invalid for dimension {d} of {t}")
        shape.append(slice_len(a, b, s))
    return [t.with_shape(shape)]


def _slice_impl(x, starts, stops, steps):
    return x[tuple(builtins.slice(a, b, s) for a, b, s in zip(starts, stops, steps))].copy()


def _slice_index(op, idx):
    a = op.attrs
    return tuple(i if s == 0 and st == 1 else "?"
                 for i, s, st in zip(idx, a["starts"], a["steps"]))


slice = register(OpDef("slice", 1, {"starts": "ints", "stops": "ints", "steps": "ints"},
                       _slice_rule, _slice_impl, "layout", index_map=_slice_index,
                       numpy=("split", "diff")))


def _rev_rule(ts, attrs):
    (t,) = ts
    dims = attrs["dims"]
    if any(not 0 <= d < t.ndim for d in dims) or len(set(dims)) != len(dims):
        raise IRTypeError(f"rev dims {list(attrs['dims'])} invalid for {t}")
    return [t]


def _rev_index(op, idx):
    return tuple("?" if d in op.attrs["dims"] else i for d, i in enumerate(idx))


rev = register(OpDef("rev", 1, {"dims": "ints"}, _rev_rule,
                     lambda x, dims: np.flip(x, dims).copy() if dims else x.copy(), "layout",
                     index_map=_rev_index, numpy=("flip",)))


def _window_rule(ts, attrs):
    (t,) = ts
    dims, sizes = attrs["dims"], attrs["sizes"]
    if len(dims) != len(sizes) or len(set(dims)) != len(dims) or any(
            not 0 <= d < t.ndim for d in dims):
        raise IRTypeError(f"window dims {list(dims)} / sizes {list(sizes)} invalid for {t}")
    shape = list(t.shape)
    for d, k in zip(dims, sizes):
        if not 0 <= k <= t.shape[d]:
            raise IRTypeError(f"window of {k} longer than dimension {d} of {t}")
        shape[d] = t.shape[d] - k + 1
    return [t.with_shape(shape + list(sizes))]


def _window_impl(x, dims, sizes):
    if not dims:
        return x.copy()
    return np.lib.stride_tricks.sliding_window_view(x, tuple(sizes), axis=tuple(dims)).copy()


def _window_index(op, idx):
    return tuple("?" if d in op.attrs["dims"] else idx[d]
                 for d in range(op.operands[0].type.ndim))


# Every window of ``sizes`` elements along ``dims`` (``sliding_window_view``): the window's
# dims last, in the order of ``dims``; result[..., i, ..., k] = x[..., i + k, ...]. A
# convolution's im2col is one of these (strides and dilations are slices of it).
window = register(OpDef("window", 1, {"dims": "ints", "sizes": "ints"}, _window_rule,
                        _window_impl, "layout", index_map=_window_index,
                        numpy=("lib.stride_tricks.sliding_window_view",)))


def _pad_rule(ts, attrs):
    t, v = ts
    low, high, interior = attrs["low"], attrs["high"], attrs["interior"]
    if v.shape != () or v.dtype != t.dtype:
        raise IRTypeError(f"pad value must be a {t.dtype}[] scalar, got {v}")
    if not len(low) == len(high) == len(interior) == t.ndim or min(low + high + interior,
                                                                    default=0) < 0:
        raise IRTypeError(f"pad widths invalid for {t}")
    shape = [lo + hi + n + max(n - 1, 0) * it
             for n, lo, hi, it in zip(t.shape, low, high, interior)]
    return [t.with_shape(shape)]


def _pad_impl(x, value, low, high, interior):
    shape = [lo + hi + n + max(n - 1, 0) * it
             for n, lo, hi, it in zip(x.shape, low, high, interior)]
    out = np.full(shape, value, dtype=x.dtype)
    out[tuple(np.s_[lo:lo + max(n - 1, 0) * (it + 1) + 1 if n else lo:it + 1]
              for n, lo, it in zip(x.shape, low, interior))] = x
    return out


pad = register(OpDef("pad", 2, {"low": "ints", "high": "ints", "interior": "ints"},
                     _pad_rule, _pad_impl, "movement", numpy=("pad",)))


def _concatenate_rule(ts, attrs):
    axis = attrs["axis"]
    if not ts:
        raise IRTypeError("concatenate needs at least one operand")
    first = ts[0]
    if not 0 <= axis < first.ndim:
        raise IRTypeError(f"concatenate axis {axis} out of range for {first}")
    for t in ts[1:]:
        same = t.ndim == first.ndim and all(
            a == b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != axis)
        if not same or t.dtype != first.dtype:
            raise IRTypeError(f"concatenate operands disagree: {first} and {t}")
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in ts)
    return [first.with_shape(shape)]


concatenate = register(OpDef("concatenate", None, {"axis": "int"}, _concatenate_rule,
                             lambda *xs, axis: np.concatenate(xs, axis=axis), "movement",
                             numpy=("concatenate", "stack")))
