"""np.pad: the constant mode as pad ops, one value per side of each axis, and the modes that
repeat the array's own elements (edge, wrap, reflect, symmetric) as slices of it, reversed or
broadcast, joined along each axis.

Axes are padded in order, each over the array padded so far, as NumPy does: a corner takes the
value of the last axis padded (constant mode) or of the edge of the edge. Which element lands
where is the periodic extension NumPy's iterative padding produces (``_index``), so pads wider
than the array work too. Slices, reversals, broadcasts and concatenate only move data: NumPy
does them in the compiled program, with nothing to compile, and their gradients exist already.
Modes that compute statistics or ramps (maximum, minimum, mean, median, linear_ramp),
reflect_type="odd" and a callable mode are refused by name.
"""
from __future__ import annotations

import numpy as np

from ...ir import ops
from ..errors import numpy_error, unsupported
from ..tracer import Tracer
from .lifting import broadcast_to, concatenate, constant, convert, emit, lift
from .rules import dt
from .shapes import flip, slice_

# mode -> the keywords NumPy allows with it
_KEYWORDS = {"constant": ("constant_values",), "empty": (), "edge": (), "wrap": (),
             "reflect": ("reflect_type",), "symmetric": ("reflect_type",),
             "linear_ramp": ("end_values",), "maximum": ("stat_length",),
             "mean": ("stat_length",), "median": ("stat_length",),
             "minimum": ("stat_length",)}


def _widths(pad_width, ndim: int) -> np.ndarray:
    """NumPy's (ndim, 2) pad widths: an int, a pair, one pair per axis, or {axis: width}."""
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            seq[axis] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = seq
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise numpy_error(TypeError, "`pad_width` must be of integral type.",
                          "give the widths as integers")
    return _as_pairs(widths, ndim, "pad_width").astype(np.int64)


def _as_pairs(x: np.ndarray, ndim: int, what: str) -> np.ndarray:
    """Broadcast to (ndim, 2) as NumPy's _as_pairs does: [[1], [2]] means (1, 1), (2, 2)."""
    if x.ndim < 3 and x.size == 1:
        x = np.broadcast_to(x.ravel(), (ndim, 2))
    elif x.ndim < 3 and x.size == 2 and x.shape != (2, 1):
        x = np.broadcast_to(x.ravel(), (ndim, 2))
    else:
        try:
            x = np.broadcast_to(x, (ndim, 2))
        except ValueError:
            raise numpy_error(ValueError, f"{what} of shape {x.shape} cannot be broadcast to "
                              f"({ndim}, 2)", "give one value, one (before, after) pair, or "
                              "one pair per axis") from None
    if what == "pad_width" and x.size and x.min() < 0:
        raise numpy_error(ValueError, "index can't contain negative values",
                          "pad widths are >= 0")
    return x


def _fill_values(values, x: Tracer) -> list[list[Tracer]]:
    """constant_values as one (before, after) pair of x.dtype scalars per axis: Python and
    NumPy values cast as NumPy's assignment casts them (1.7 into ints is 1), now."""
    if isinstance(values, Tracer):
        if values.ndim != 0:
            raise unsupported("np.pad with a traced constant_values array",
                              "pass one traced scalar, or NumPy values per axis")
        v = convert(lift(values, x._trace), dt(x))
        return [[v, v]] * x.ndim
    values = np.asarray(values)
    pairs = _as_pairs(values, x.ndim, "constant_values")
    # NumPy's _as_pairs keeps one or two values as NumPy scalars, which assignment casts
    # unsafely (-1 into uint8 is 255) and takes others as Python ints, which it range-checks
    if not (values.ndim < 3 and values.size in (1, 2) and values.shape != (2, 1)):
        pairs = pairs.tolist()
    made: dict = {}

    def value(v):
        cell = np.empty((), x.dtype)
        cell[()] = v        # NumPy's cast (and its OverflowError where it raises one)
        key = cell.tobytes()
        if key not in made:
            made[key] = constant(cell, trace=x._trace)
        return made[key]
    return [[value(lo), value(hi)] for lo, hi in pairs]


def _index(mode: str, n: int, lo: int, hi: int) -> np.ndarray:
    """The source index of each element of an axis of length n padded by (lo, hi)."""
    i = np.arange(-lo, n + hi)
    if mode == "edge" or (mode == "reflect" and n == 1):   # NumPy extends a single element
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return i % n
    period = 2 * n if mode == "symmetric" else 2 * n - 2
    m = i % period
    return np.where(m < n, m, period - 1 - m if mode == "symmetric" else period - m)


def _runs(index: np.ndarray) -> list[tuple[int, int, int]]:
    """``index`` cut into runs (first, length, step) of step 1, -1 or 0."""
    runs, i = [], 0
    while i < len(index):
        j = i + 1
        step = int(index[j] - index[i]) if j < len(index) else 1
        step = step if step in (1, -1, 0) else 1
        while j < len(index) and index[j] - index[j - 1] == step:
            j += 1
        runs.append((int(index[i]), j - i, step))
        i = j
    return runs


def _gather_runs(x: Tracer, index: np.ndarray, axis: int, lo: int) -> Tracer:
    """x's elements at ``index`` along ``axis``, as slices (reversed, or one broadcast); the
    original elements (``lo`` on) stay one piece: x itself, not a copy."""
    n_x = x.shape[axis]
    parts = (index[:lo], index[lo:lo + n_x], index[lo + n_x:])
    pieces = []
    for first, n, step in [run for part in parts for run in _runs(part)]:
        lo = first if step >= 0 else first - n + 1
        starts, stops = [0] * x.ndim, list(x.shape)
        starts[axis], stops[axis] = lo, lo + (1 if step == 0 else n)
        piece = slice_(x, starts, stops, [1] * x.ndim)
        if step == -1:
            piece = flip(piece, axis)
        elif step == 0:
            piece = broadcast_to(piece, [n if d == axis else m for d, m in enumerate(x.shape)])
        pieces.append(piece)
    return concatenate(pieces, axis)


def pad(array, pad_width, mode="constant", **kwargs):
    """np.pad with modes constant, empty (zeros: NumPy leaves the values undefined), edge,
    wrap, reflect and symmetric."""
    x = lift(array)
    widths = _widths(pad_width, x.ndim)
    if callable(mode):
        raise unsupported("np.pad with a function as its mode", "use one of the modes "
                          "constant, edge, wrap, reflect or symmetric")
    if mode not in _KEYWORDS:
        raise numpy_error(ValueError, f"mode '{mode}' is not supported",
                          "use one of NumPy's pad modes")
    extra = set(kwargs) - set(_KEYWORDS[mode])
    if extra:
        raise numpy_error(ValueError, f"unsupported keyword arguments for mode '{mode}': "
                          f"{extra}", f"drop them: mode {mode!r} takes {_KEYWORDS[mode]}")
    if mode in ("linear_ramp", "maximum", "mean", "median", "minimum"):
        raise unsupported(f"np.pad(mode={mode!r})", "use mode 'constant', 'edge', 'wrap', "
                          "'reflect' or 'symmetric', or build the padding with np.concatenate")
    reflect_type = kwargs.get("reflect_type", "even")     # NumPy: anything but "odd" is even
    if reflect_type == "odd":
        raise unsupported(f"np.pad(mode={mode!r}, reflect_type='odd')",
                          "use reflect_type='even' (the default)")
    if mode in ("constant", "empty"):
        values = _fill_values(kwargs.get("constant_values", 0) if mode == "constant" else 0, x)
        if all(v is values[0][0] for pair in values for v in pair):
            # one value everywhere: the corners do not depend on the order, so one pad op,
            # one copy (a pad per axis copied the whole array once per axis)
            if widths.any():
                x = emit(x._trace, ops.pad, [x, values[0][0]], weak=x._weak,
                         low=widths[:, 0].tolist(), high=widths[:, 1].tolist(),
                         interior=[0] * x.ndim)
            return x
        for axis, ((lo, hi), (a, b)) in enumerate(zip(widths.tolist(), values)):
            sides = [(lo, hi, a)] if lo == hi == 0 or a is b else [(lo, 0, a), (0, hi, b)]
            for before, after, v in sides:
                if before or after:
                    low, high = [0] * x.ndim, [0] * x.ndim
                    low[axis], high[axis] = before, after
                    x = emit(x._trace, ops.pad, [x, v], weak=x._weak, low=low, high=high,
                             interior=[0] * x.ndim)
        return x
    for axis, (lo, hi) in enumerate(widths.tolist()):
        if x.shape[axis] == 0 and (lo or hi):
            raise numpy_error(ValueError, f"can't extend empty axis {axis} using modes other "
                              "than 'constant' or 'empty'", "pad an empty axis with "
                              "mode='constant'")
    for axis, (lo, hi) in enumerate(widths.tolist()):
        if lo or hi:
            x = _gather_runs(x, _index(mode, x.shape[axis], lo, hi), axis, lo)
    return x
