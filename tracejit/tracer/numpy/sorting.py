"""Sorting along an axis: np.sort, np.argsort and x.argsort (x.sort() sorts in place:
assignment's subject, not this module's).

Every stage sorts with NumPy's own sort of the kind asked for (the interpreter and the NumPy tier
run the ops' reference implementations, compiled programs call NumPy from their entry), so the
results are NumPy's exactly: NaN last, and ties in NumPy's order, which for the default kind
("quicksort", an unstable introsort) is not their original order; kind="stable" (or
stable=True) keeps it. The gradient of sort scatters the cotangent back through the sorting
permutation; argsort's integer result has none.
"""
from __future__ import annotations


from ...ir import ops
from ..errors import numpy_error
from .lifting import emit, lift, reshape
from .rules import normalize_axis

_KINDS = {"q": "quicksort", "h": "heapsort", "m": "stable", "s": "stable"}


def sort_kind(kind, stable) -> str:
    """NumPy's reading of ``kind=`` and ``stable=``: the first letter names the kind."""
    if stable is not None:
        if kind is not None:
            raise numpy_error(ValueError, "`kind` and keyword parameters can't be provided at "
                              "the same time. Use only one of them.", "pass kind or stable")
        return "stable" if stable else "quicksort"
    if kind is None:
        return "quicksort"
    if not isinstance(kind, str):
        raise numpy_error(TypeError, f"sort kind must be str, not {type(kind).__name__}",
                          "pass 'quicksort', 'heapsort' or 'stable'")
    if kind[:1].lower() not in _KINDS:
        raise numpy_error(ValueError, "sort kind must be one of 'quick', 'heap', or 'stable' "
                          f"(got {kind!r})", "pass 'quicksort', 'heapsort' or 'stable'")
    return _KINDS[kind[:1].lower()]


def _check_order(order):
    if order is not None:
        raise numpy_error(ValueError, "Cannot specify order when the array has no fields.",
                          "drop order=: traced arrays have no named fields")


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """np.sort: a sorted copy; axis=None sorts the flattened array."""
    x = lift(a)
    kind = sort_kind(kind, stable)
    _check_order(order)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    return emit(x._trace, ops.sort, [x], weak=x._weak, axis=axis, kind=kind)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """np.argsort: int64 indices that sort ``a`` along the axis; axis=None sorts the flattened
    array, and a 0-d array counts as 1-d (NumPy gives array([0]))."""
    x = lift(a)
    kind = sort_kind(kind, stable)
    _check_order(order)
    if axis is None or x.ndim == 0:
        x, axis = reshape(x, (-1,)), 0 if axis is None else axis
    axis = normalize_axis(axis, x.ndim)
    return emit(x._trace, ops.argsort, [x], axis=axis, kind=kind)


# ---------------------------------------------------------------------------------------------
# Order statistics: np.median, np.quantile and np.percentile (method="linear", NumPy's default)


def along_last_axis(a, axis):
    """``a`` with the reduced axes moved to the end and merged into one, and the result's
    shape with keepdims=True."""
    from .shapes import transpose
    x = lift(a)
    axes = (tuple(range(x.ndim)) if axis is None else
            tuple(normalize_axis(ax, x.ndim) for ax in (
                axis if isinstance(axis, (tuple, list)) else (axis,))))
    kept = [i for i in range(x.ndim) if i not in axes]
    n = 1
    for ax in axes:
        n *= x.shape[ax]
    if x.ndim:
        x = transpose(x, kept + list(axes))
    x = reshape(x, tuple(x.shape[:len(kept)]) + (n,))
    return x, tuple(1 if i in axes else d for i, d in enumerate(lift(a).shape))


# ---------------------------------------------------------------------------------------------
# Partial sorts and multi-key sorts, as full (stable) sorts: a sorted array satisfies
# partition's contract (the kth element in its sorted place, none larger before it, none
# smaller after), though NumPy's introselect leaves the other elements in another order.


def _kths(kth, n):
    for k in (kth if isinstance(kth, (list, tuple)) or getattr(kth, "ndim", 0) else [kth]):
        k = int(k)
        if not -n <= k < n:
            raise numpy_error(ValueError, f"kth(={k}) out of bounds ({n})",
                              "pass a kth within the axis")


def partition(a, kth, axis=-1, kind="introselect", order=None):
    x = lift(a)
    _check_order(order)
    n = x.size if axis is None else x.shape[normalize_axis(axis, x.ndim)]
    _kths(kth, n)
    return sort(x, axis)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    x = lift(a)
    _check_order(order)
    n = x.size if axis is None else x.shape[normalize_axis(axis, x.ndim)]
    _kths(kth, n)
    return argsort(x, axis, kind="stable")


def lexsort(keys, axis=-1):
    """np.lexsort: indices sorting by the last key, ties by the one before, ...: stable
    argsorts from the first key to the last, each of the keys gathered in the order so far."""
    from .gather import take_along_axis
    from .lifting import lift_all
    if isinstance(keys, (list, tuple)):
        ks = lift_all(*keys)
    else:       # an array: its rows are the keys
        keys = lift(keys)
        ks = list(keys) if keys.ndim > 1 else [keys]
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = ks[0].shape
    for k in ks:
        if k.shape != shape:
            raise numpy_error(ValueError, "all keys need to be the same shape",
                              "pass keys of one shape")
    axis = normalize_axis(axis, len(shape)) if shape else 0
    idx = argsort(ks[0], axis, kind="stable")
    for k in ks[1:]:
        idx = take_along_axis(idx, argsort(take_along_axis(k, idx, axis), axis,
                                           kind="stable"), axis)
    return idx
