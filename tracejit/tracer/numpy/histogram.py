"""np.histogram and np.histogram_bin_edges of traced values, computed as NumPy computes them.

Traced NumPy code (no op of its own), so derivatives and kernels come free. It follows NumPy's
algorithm (numpy/lib/_histograms_impl.py) step by step with the same Python and NumPy scalars,
so NEP 50 gives the same dtypes and roundings: edges by linspace; a value's bin from
``(a - first) / (last - first) * bins``, then corrected against the edges (the last bin closed
on the right); weights summed in float64 per block of 65536 values (NumPy's bincount) as a
scatter-add; for explicit edges, differences of cumulative counts or of cumulative sums of the
weights in sorted order (NumPy's searchsorted path).

What needs the data's values in NumPy is data flow here: the range from a.min() and a.max() is
traced, widened by 0.5 when they are equal with a where; values outside the range are not
dropped (a size known only from the data) but counted with weight 0. What cannot be data flow
is refused: string bins (an estimator picks the number of bins, a shape, from the data), and
traced edges or range (NumPy checks them against each other before counting). NumPy raises
for a non-finite autodetected range (NaN or infinite data) and for too many bins in a tiny
range; a traced range cannot raise, so the counts are then meaningless instead.
"""
from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error, unsupported
from ..tracer import Tracer
from .arithmetic import diff, where
from .gather import constant_value, take
from .lifting import astype, concatenate, emit, lift, lift_all, reshape
from .ranges import linspace
from .reductions import amax, amin, cumsum
from .reductions import sum as sum_
from .rules import has_tracer, result_dtype
from .shapes import full, slice_
from .sorting import argsort

BLOCK = 65536       # NumPy's: it sums weights per block, so the rounding is per block too


def histogram(a, bins=10, range=None, density=None, weights=None):
    """np.histogram: (hist, bin_edges); hist holds intp counts, or sums of ``weights`` in
    their dtype; with ``density``, float64 values whose integral over the range is 1."""
    a, weights = _ravel_and_check_weights(a, weights)
    edges, uniform = _bin_edges(a, bins, range)
    ntype = np.dtype(np.intp) if weights is None else weights.dtype
    if uniform is not None:
        n = _uniform_histogram(a, weights, edges, *uniform, ntype)
    else:
        n = _cumulative_histogram(a, weights, edges, ntype)
    edges = lift(edges, a._trace)
    if density:
        db = astype(diff(edges), float)
        return n / db / sum_(n), edges
    return n, edges


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """np.histogram_bin_edges: the edges np.histogram would use."""
    a, weights = _ravel_and_check_weights(a, weights)
    return lift(_bin_edges(a, bins, range)[0], a._trace)


def _ravel_and_check_weights(a, weights):
    a, weights = lift_all(a, weights) if weights is not None else (lift(a), None)
    a = astype(a, a.dtype)          # np.asarray: a Python number's value is no longer weak
    weights = None if weights is None else astype(weights, weights.dtype)
    if a.dtype == np.bool_:
        warnings.warn(f"Converting input from {a.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=4)
        a = astype(a, np.uint8)
    if weights is not None:
        if weights.shape != a.shape:
            raise numpy_error(ValueError, "weights should have the same shape as a.",
                              f"give one weight per value: shape {a.shape}, not "
                              f"{weights.shape}")
        weights = reshape(weights, (-1,))
    return reshape(a, (-1,)), weights


def _bin_edges(a, bins, range):
    """(edges, (first, last, number of bins) for equal bins, else None), as NumPy's
    _get_bin_edges; the edges a NumPy array when known before the data, else traced."""
    if isinstance(bins, str):
        raise unsupported(
            f"np.histogram with bins={bins!r} (an estimator: the number of bins, a shape, "
            "would come from the data's values)",
            "pass the number of bins (an int), or the edges as a NumPy array, e.g. from "
            "np.histogram_bin_edges(sample, 'auto') computed outside the jitted function")
    bins = _known(bins)
    if _traced(bins) or _traced(range):
        raise unsupported(
            "np.histogram with traced bin edges or range (NumPy checks them against each "
            "other before counting, which needs their values)",
            "pass them as NumPy values the function closes over or gets as a static argument "
            "(static_argnames=...); with range=None the range comes from the traced data")
    if np.ndim(bins) == 1:
        edges = np.asarray(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise numpy_error(ValueError, "`bins` must increase monotonically, when an array",
                              "sort the edges")
        return edges, None
    if np.ndim(bins) != 0:
        raise numpy_error(ValueError, "`bins` must be 1d, when an array",
                          "pass the edges as a 1-D array")
    try:
        n_equal_bins = operator.index(bins)
    except TypeError:
        raise numpy_error(TypeError, "`bins` must be an integer, a string, or an array",
                          "pass an int, e.g. bins=int(n)") from None
    if n_equal_bins < 1:
        raise numpy_error(ValueError, "`bins` must be positive, when an integer",
                          "pass bins >= 1")
    first, last = _outer_edges(a, range)
    bin_type = result_dtype(first, last, a)
    if not bin_type.is_float:                       # np.result_type(bin_type, float)
        bin_type = dtypes.float64
    if isinstance(first, Tracer):
        edges = linspace(first, last, n_equal_bins + 1, endpoint=True, dtype=bin_type.np)
    else:
        edges = np.linspace(first, last, n_equal_bins + 1, endpoint=True, dtype=bin_type.np)
        if np.any(edges[:-1] >= edges[1:]):
            raise numpy_error(ValueError, f"Too many bins for data range. Cannot create "
                              f"{n_equal_bins} finite-sized bins.", "use fewer bins")
    return edges, (first, last, n_equal_bins)


def _known(bins):
    """Edges made by np.full(...) or np.zeros(...) in the function (traced arrays there, see
    patches.py) as the NumPy array they hold; anything else as it is."""
    v = constant_value(bins) if isinstance(bins, Tracer) else None
    if v is None or v.size not in (1, bins.size):
        return bins
    return np.full(bins.shape, v.item(), bins.dtype) if v.size == 1 else (
        v.astype(bins.dtype).reshape(bins.shape))


def _traced(x) -> bool:
    return isinstance(x, Tracer) or (isinstance(x, (list, tuple)) and has_tracer(x))


def _outer_edges(a, range):
    """The first and last edge: ``range`` (static), or the data's min and max (traced)."""
    if range is not None:
        first, last = range
        if first > last:
            raise numpy_error(ValueError, "max must be larger than min in range parameter.",
                              "give range=(min, max) with min <= max")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise numpy_error(ValueError, f"supplied range of [{first}, {last}] is not "
                              "finite", "give a finite range")
    elif a.size == 0:
        first, last = 0, 1
    else:
        first, last = amin(a), amax(a)
        if not np.issubdtype(a.dtype, np.floating):
            # NumPy's integer edges meet float64 values only (bin_type), so they may be
            # float64 from here on (exactly, below 2**53)
            first, last = astype(first, np.float64), astype(last, np.float64)
        same = first == last                # expand an empty range to avoid dividing by 0
        return where(same, first - 0.5, first), where(same, last + 0.5, last)
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _unsigned_subtract(hi, lo):
    """``hi - lo`` of static edges as NumPy's histogram takes it: signed integers subtract as
    their unsigned twin, which cannot overflow (int8: 127 - -128 is 255)."""
    dt = np.result_type(hi, lo)
    if dt.kind != "i":
        return np.subtract(hi, lo, dtype=dt)
    return np.subtract(np.asarray(hi, dt), np.asarray(lo, dt), casting="unsafe",
                       dtype=np.dtype(f"u{dt.itemsize}"))


def _blocks(size: int, block: int = BLOCK) -> list[tuple[int, int]]:
    return [(lo, builtins.min(lo + block, size)) for lo in builtins.range(0, size, block)]


def _scatter_add(n, indices, values):
    """``np.add.at(n, indices, values)`` as a new array (NumPy's bincount adds in order too)."""
    return emit(n._trace, ops.scatter_add, [n, indices, values], axis=0)


def _uniform_histogram(a, weights, edges, first, last, nbins, ntype):
    """NumPy's path for equal bins: each value's bin from its offset, corrected against the
    edges (the offset can be off by one within an ulp of an edge)."""
    trace = a._trace
    norm_denom = last - first if isinstance(first, Tracer) else _unsigned_subtract(last, first)
    edges = lift(edges, trace)
    # counts are exact, so one block does; sums of weights round per block, as NumPy's
    blocks = _blocks(a.size) if weights is not None else [(0, a.size)] if a.size else []
    n = None
    for lo, hi in blocks:
        x = slice_(a, [lo], [hi], [1])
        keep = (x >= first) & (x <= last)
        x = astype(x, edges.dtype)
        f_indices = (x - first) / norm_denom * nbins
        indices = astype(where(keep, f_indices, 0), np.intp)   # dropped: bin 0, weight 0
        indices = indices - (indices == nbins)
        indices = indices - (x < take(edges, indices))
        indices = indices + ((x >= take(edges, indices + 1)) & (indices != nbins - 1))
        if weights is None:
            part = _scatter_add(full((nbins,), 0, ntype, trace), indices, astype(keep, ntype))
        else:
            w = astype(slice_(weights, [lo], [hi], [1]), np.float64)
            part = astype(_scatter_add(full((nbins,), 0.0, np.float64, trace), indices,
                                       where(keep, w, 0.0)), ntype)
        n = part if n is None else n + part     # (bincount's sums are never -0.0)
    return full((nbins,), 0, ntype, trace) if n is None else n


def _cumulative_histogram(a, weights, edges, ntype):
    """NumPy's path for given edges: how many values (how much weight, summed in sorted order)
    lie below each edge, the last one inclusive, then the differences."""
    trace = a._trace
    if weights is None:
        return diff(_counts_below(a, edges))
    cum_n = full(edges.shape, 0, ntype, trace)
    for lo, hi in _blocks(a.size):
        x = slice_(a, [lo], [hi], [1])
        w = slice_(weights, [lo], [hi], [1])
        sw = take(w, argsort(x))
        cw = concatenate([full((1,), 0, ntype, trace), cumsum(sw)])
        cum_n = astype(cum_n + take(cw, _counts_below(x, edges)), ntype)
    return diff(cum_n)


def _counts_below(x, edges):
    """NumPy's searchsorted of the edges in the sorted values (side 'left', the last edge
    'right'), as comparisons with each edge: fine for the few edges a histogram has."""
    e = lift(edges, x._trace)
    m = e.shape[0]
    column = reshape(x, (-1, 1))
    below = sum_(column < reshape(slice_(e, [0], [m - 1], [1]), (1, -1)), axis=0)
    at_most = sum_(column <= reshape(slice_(e, [m - 1], [m], [1]), (1, -1)), axis=0)
    return concatenate([below, at_most])


def bincount(x, weights=None, minlength=0):
    """np.bincount into ``minlength`` bins (the result's size; NumPy's would grow with the
    largest value, which a traced ``x`` does not give before it runs): a traced value outside
    [0, minlength) fails when the program runs, as NumPy fails on negative ones. Counts are
    intp, sums of weights float64, added in order (scatter_add), as NumPy's loop adds them."""
    from .arithmetic import greater_equal, less, logical_or
    from .gather import constant_value
    from .shapes import iota
    known = x if not isinstance(x, Tracer) else constant_value(x)
    xs, ws = lift_all(x, weights) if weights is not None else (lift(x), None)
    if xs.ndim != 1:
        raise numpy_error(ValueError, "object too deep for desired array", "pass a 1-D array")
    if not (xs.dtype.kind in "iub"):
        raise numpy_error(TypeError, "Cannot cast array data from dtype('float64') to "
                          "dtype('int64') according to the rule 'safe'", "pass integers")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise numpy_error(ValueError, "'minlength' must not be negative", "pass minlength >= 0")
    if known is not None:
        known = np.asarray(known)
        if known.size and known.min() < 0:
            raise numpy_error(ValueError, "'list' argument must have no negative elements",
                              "pass non-negative values")
        n = builtins.max(int(known.max()) + 1 if known.size else 0, minlength)
    elif minlength == 0:
        raise unsupported("np.bincount of a traced array without minlength (the result's size "
                          "is its largest value + 1)", "pass minlength=, the number of bins")
    else:
        n = minlength
    trace = xs._trace
    idx = astype(xs, np.int64)
    if known is None:
        # a value outside [0, n) takes out of range: the program fails when it runs
        bad = logical_or(less(idx, 0), greater_equal(idx, n))
        idx = take(iota((n,), 0, trace=trace), where(bad, np.int64(n), idx))
    if ws is None or xs.size == 0:       # (NumPy's: counts for an empty x, weights or not)
        return _scatter_add(full((n,), 0, np.intp, trace), idx,
                            full(idx.shape, 1, np.intp, trace))
    if ws.shape != xs.shape:
        raise numpy_error(ValueError, "The weights and list don't have the same length.",
                          "pass one weight per value")
    return _scatter_add(full((n,), 0.0, np.float64, trace), idx, astype(ws, np.float64))
